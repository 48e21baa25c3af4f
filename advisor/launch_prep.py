"""Plan -> the commands to start and the reasons not to: the one preparation `advisor launch` and the TUI's launch
screen share, so both build the same argv and refuse for the same reasons.

    prepare_launch(plan, *, mode=None, python=None, dist_init_addr=None, strict=False, run_dir=None, here=False)
        -> (commands, refusals)

``commands`` holds one argv per node (node 0 first; empty when the plan cannot become a command). ``refusals`` lists,
in the order `advisor launch` reports them, every reason not to start; each face decides which ones the user may
override: `advisor launch --force` and a second enter in the TUI start despite PLAN_ERRORS, and the TUI starts a
simulated machine's plan here (OTHER_MACHINE) after saying so on screen, since that is how it demonstrates a profile.

    commands_for_nodes(plan, *, mode=None, extra=(), python=None, dist_init_addr=None) -> list[list[str]]

What the engine answers (advisor.rules.engine.Engine) decides the differences: whether it runs in this interpreter or
the one --python names, which directories it writes, and how a missing install is told.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.context import EXIT_ERRORS, EXIT_USAGE
from advisor.rules import registry
from advisor.rules.command import EngineCommandError, command_for
from launcher.files import FileRefused, check_directory, check_directory_variable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from advisor.plan import Plan
    from advisor.rules.engine import Engine


NO_COMMAND = "no_command"  # the plan cannot become a command line (usage)
PLAN_ERRORS = "plan_errors"  # the plan has errors (or warnings under --strict)
OTHER_MACHINE = "other_machine"  # the facts describe a profile or a saved file, not this machine (usage)
BAD_DIRECTORY = "bad_directory"  # --run-dir, TP_ADVISOR_RUNS or TP_ADVISOR_CACHE names something that is not a directory
NOT_INSTALLED = "not_installed"  # the engine (or the bundled runtime's extra) is missing


@dataclass(frozen=True)
class Refusal:
    kind: str  # one of the names above
    message: str  # one line naming the fix
    exit_code: int  # what `advisor launch` exits with when it refuses for this reason


def prepare_launch(
    plan: Plan,
    *,
    mode: str | None = None,
    python: str | None = None,
    dist_init_addr: str | None = None,
    strict: bool = False,
    run_dir: str | None = None,
    here: bool = False,
) -> tuple[list[list[str]], list[Refusal]]:
    """The commands that start ``plan`` (one per node) and every reason not to start them.

    ``mode``: the bundled runtime's mode (default: the intent's). ``python``: the interpreter that has SGLang or vLLM
    (the bundled runtime always runs in this one). ``strict``: warnings refuse too, as in `advisor check --strict`.
    ``here``: the caller starts the commands on this machine whatever machine the plan was made for (the app)."""
    mode = mode or plan.intent.mode
    engine = registry.get(plan.intent.engine)
    refusals: list[Refusal] = []
    commands = _commands(plan, engine, mode, python, dist_init_addr, refusals, here)
    errors = sum(p.severity == "error" for p in plan.problems)
    warnings = sum(p.severity == "warning" for p in plan.problems)
    if errors or (strict and warnings):
        what = f"{errors} error(s)" if errors else "warnings and --strict is set"
        refusals.append(Refusal(PLAN_ERRORS, f"not starting: the plan has {what} (listed above); fix them, or pass"
                                " --force to start anyway", EXIT_ERRORS))  # fmt: skip
    if plan.facts.source != "live":
        refusals.append(Refusal(OTHER_MACHINE, f"the facts describe another machine ({plan.facts.source}); add"
                                " --dry-run to see the command, or drop --profile/--facts to launch on this one",
                                EXIT_USAGE))  # fmt: skip
    refusals += _directory_refusals(run_dir, engine)
    refusals += _install_refusals(plan, engine, python, mode)
    return commands, refusals


def commands_for_nodes(
    plan: Plan,
    *,
    mode: str | None = None,
    extra: Sequence[str] = (),
    python: str | None = None,
    dist_init_addr: str | None = None,
) -> list[list[str]]:
    """One argv per node (node 0 first); a single-node plan gives a list of one."""
    return [
        command_for(plan, mode=mode, extra=extra, python=python, node_rank=rank, dist_init_addr=dist_init_addr)
        for rank in range(max(1, plan.intent.nnodes))
    ]


def _commands(
    plan: Plan,
    engine: Engine,
    mode: str,
    python: str | None,
    dist_init_addr: str | None,
    refusals: list[Refusal],
    here: bool = False,
) -> list[list[str]]:
    # An engine that runs in this interpreter (the bundled runtime) ignores --python, which picks SGLang's or vLLM's; one
    # started here for a simulated machine's plan (the app's demonstration) runs in this interpreter too, where the
    # printed command of such a plan says what a person types on that machine.
    engine_python = (sys.executable if here else None) if engine.in_this_interpreter else python
    try:
        return commands_for_nodes(plan, mode=mode, python=engine_python, dist_init_addr=dist_init_addr)
    except EngineCommandError as exc:
        refusals.append(Refusal(NO_COMMAND, str(exc), EXIT_USAGE))
        return []


def _directory_refusals(run_dir: str | None, engine: Engine) -> list[Refusal]:
    """The run directory and the directories the engine writes must be directories (or creatable); nothing is
    created."""
    try:
        if run_dir:
            check_directory(run_dir, "--run-dir")
        else:
            check_directory_variable("TP_ADVISOR_RUNS")
        for variable in engine.directories:
            check_directory_variable(variable)
    except FileRefused as exc:
        return [Refusal(BAD_DIRECTORY, str(exc), EXIT_ERRORS)]
    return []


def _install_refusals(plan: Plan, engine: Engine, python: str | None, mode: str) -> list[Refusal]:
    if engine.not_installed is not None:  # the engine knows what it needs where it runs
        message = engine.not_installed(plan, python, mode)
        return [Refusal(NOT_INSTALLED, message, EXIT_ERRORS)] if message else []
    if plan.facts.package(engine.package).installed:
        return []
    where = f"the interpreter {python}" if python else "this Python environment"
    return [Refusal(NOT_INSTALLED, f"{engine.name} is not installed in {where}:"
                    f" {engine.install_hint(plan.intent.engine_version)}; or pass --python PATH of an"
                    " environment that has it, or --engine bundled", EXIT_ERRORS)]  # fmt: skip
