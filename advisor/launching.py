"""Plan -> the commands to start and the reasons not to: the one preparation `advisor launch` and the TUI's launch
screen share, so both build the same argv and refuse for the same reasons.

    prepare_launch(plan, *, mode=None, python=None, dist_init_addr=None, strict=False, run_dir=None)
        -> (commands, refusals)

``commands`` holds one argv per node (node 0 first; empty when the plan cannot become a command). ``refusals`` lists,
in the order `advisor launch` reports them, every reason not to start; each face decides which ones the user may
override: `advisor launch --force` and a second enter in the TUI start despite PLAN_ERRORS, and the TUI starts a
simulated machine's plan here (OTHER_MACHINE) after saying so on screen, since that is how it demonstrates a profile.

Cheap to import: standard library only; the launcher's modules are imported when a launch is prepared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.plan import Plan

EXIT_ERRORS, EXIT_USAGE = 1, 2  # advisor.context's exit codes (not imported: this module stays stdlib-only)

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
) -> tuple[list[list[str]], list[Refusal]]:
    """The commands that start ``plan`` (one per node) and every reason not to start them.

    ``mode``: the bundled runtime's mode (default: the intent's). ``python``: the interpreter that has SGLang or vLLM
    (the bundled runtime always runs in this one). ``strict``: warnings refuse too, as in `advisor check --strict`."""
    mode = mode or plan.intent.mode
    refusals: list[Refusal] = []
    commands = _commands(plan, mode, python, dist_init_addr, refusals)
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
    refusals += _directory_refusals(run_dir, plan.intent.engine)
    refusals += _install_refusals(plan, python, mode)
    return commands, refusals


def _commands(plan: Plan, mode: str, python: str | None, dist_init_addr: str | None, refusals: list[Refusal]):
    from launcher.engines import EngineCommandError, commands_for_nodes

    # The bundled runtime runs in this interpreter (it ships with tp-advisor); --python picks SGLang's or vLLM's.
    engine_python = python if plan.intent.engine != "bundled" else None
    try:
        return commands_for_nodes(plan, mode=mode, python=engine_python, dist_init_addr=dist_init_addr)
    except EngineCommandError as exc:
        refusals.append(Refusal(NO_COMMAND, str(exc), EXIT_USAGE))
        return []


def _directory_refusals(run_dir: str | None, engine: str) -> list[Refusal]:
    """The run directory and the bundled runtime's cache must be directories (or creatable); nothing is created."""
    from launcher.files import FileRefused, check_directory, check_directory_variable

    try:
        if run_dir:
            check_directory(run_dir, "--run-dir")
        else:
            check_directory_variable("TP_ADVISOR_RUNS")
        if engine == "bundled":
            check_directory_variable("TP_ADVISOR_CACHE")
    except FileRefused as exc:
        return [Refusal(BAD_DIRECTORY, str(exc), EXIT_ERRORS)]
    return []


def _install_refusals(plan: Plan, python: str | None, mode: str) -> list[Refusal]:
    from advisor.rules import registry
    from launcher import engines

    engine = plan.intent.engine
    spec = registry.get(engine)  # its package and install hint
    if engine == "bundled":  # it runs in this interpreter, whatever --python says
        missing = engines.missing_runtime_modules(mode)
        if not missing:
            return []
        install = " then ".join(engines.runtime_install_commands(plan.facts, torch_missing="torch" in missing))
        return [Refusal(NOT_INSTALLED, f"the bundled runtime needs {', '.join(missing)}, not installed in this Python"
                        f" environment: {install}", EXIT_ERRORS)]  # fmt: skip
    if plan.facts.package(spec.package).installed:
        return []
    where = f"the interpreter {python}" if python else "this Python environment"
    return [Refusal(NOT_INSTALLED, f"{engine} is not installed in {where}:"
                    f" {spec.install_hint(plan.intent.engine_version)}; or pass --python PATH of an"
                    " environment that has it, or --engine bundled", EXIT_ERRORS)]  # fmt: skip
