"""Plan -> argv: what every engine's command builder (advisor/rules/<engine>/command.py) shares.

    command_for(plan, **options) -> list[str]   (options: Engine.command_line's mode, extra, python, node_rank, dist_init_addr)

Each engine's command is built by its own builder (the ``command`` of its Engine, advisor.rules.engine);
``Engine.command_line`` applies what every engine shares (the node rank, the rendezvous address) and calls it. One argv
per node is advisor.launch_prep's loop.

Order of the tail, for every engine: the plan's resolved flags, then the user's explicit overrides
(``plan.intent.overrides``), then ``extra`` (per-launch arguments such as ``--prompt``), so a later flag wins in engines
whose parsers let the last occurrence win.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from advisor.rules import registry
from advisor.rules.problem import EngineCommandError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from advisor.plan import Plan

DEMO_MODEL = "demo"


def command_for(plan: Plan, **options: Any) -> list[str]:
    """The argv that starts ``plan.intent.engine``: the registered engine's :meth:`Engine.command_line` with
    ``options`` (mode, extra, python, node_rank, dist_init_addr); :class:`EngineCommandError` when the engine is not
    registered or the plan cannot start."""
    try:
        engine = registry.get(plan.intent.engine)
    except registry.UnknownEngine as exc:
        raise EngineCommandError(str(exc)) from None
    return engine.command_line(plan, **options)


def install_command(engine: str, version: str | None = None) -> str:
    """The pip command that installs the registered engine ``engine``, pinned to ``version`` when given."""
    return registry.get(engine).install_hint(version)


def pip_install(package: str, version: str | None = None) -> str:
    """``pip install PACKAGE`` (pinned when ``version`` is given): SGLang's and vLLM's install pages
    (docs/get_started/install.md in each repository) install the plain package name."""
    return f"pip install '{package}=={version}'" if version else f"pip install {package}"


def without_flag(flags: Sequence[str], *names: str, next_flag: str | None = None) -> list[str]:
    """``flags`` minus every ``--name VALUE`` / ``--name=VALUE`` of any of ``names``. ``next_flag``: a token after
    ``--name`` that starts with it is the next flag, not the value (``flag_values``' reading), so it is kept."""
    out: list[str] = []
    skip = False
    for i, item in enumerate(flags):
        if skip:
            skip = False
            continue
        if item in names:
            nxt = flags[i + 1] if i + 1 < len(flags) else None
            skip = nxt is not None and not (next_flag and nxt.startswith(next_flag))
            continue
        if item.split("=", 1)[0] in names and "=" in item:
            continue
        out.append(item)
    return out


def tail(plan: Plan, flags: Sequence[str], extra: Sequence[str], overrides: Sequence[str] | None = None) -> list[str]:
    """What follows every engine's own arguments, in the order the module docstring gives: the plan's flags, then the
    user's overrides (``overrides`` where the builder left some out, else all of them), then this launch's extra
    arguments (a later flag wins)."""
    return [*flags, *(plan.intent.overrides if overrides is None else overrides), *extra]


def served_model(plan: Plan, engine_name: str) -> str:
    """The model as the user named it (an id the engine resolves itself, or a directory)."""
    model = plan.intent.model or (plan.model.id if plan.model is not None else None)
    if not model or model == DEMO_MODEL:
        raise EngineCommandError(f"{engine_name} needs a real model; pass --model ID|DIR (the demo model is bundled-only)")
    return model


# What a person types on a machine that is not this one (a profile, a saved facts file): its interpreter's path is
# not ours to know, and this machine's would be wrong there.
OTHER_MACHINE_PYTHON = "python3"


def engine_python(plan: Plan, python: str | None) -> str:
    """The interpreter that has the engine installed: the explicit one, else the one whose packages were probed on this
    machine (live, or --python with a profile or facts file); for a plan made for another machine, ``python3``."""
    if python:
        return python
    if probed_live_python(plan):
        return plan.facts.python_executable
    if plan.facts.source == "live":
        return sys.executable  # this machine, its interpreter not recorded
    return OTHER_MACHINE_PYTHON


def probed_live_python(plan: Plan) -> bool:
    """Whether the plan's facts name an interpreter of this machine (not one of a machine the plan was made for)."""
    facts = plan.facts
    return bool(facts.python_executable and (facts.python_here or facts.source == "live"))
