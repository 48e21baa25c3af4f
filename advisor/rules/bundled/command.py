"""The bundled runtime's command line: torchrun (``python -m torch.distributed.run``) running ``-m launcher.runtime`` on
every rank. One node: ``--standalone``; several nodes: a c10d rendezvous at ``dist_init_addr`` with ``--node-rank i``.
The run directory's ``--log-dir``/``--tee`` flags are added by ``launcher.spawn`` (it owns the run directory), not here.

The runtime ships with tp-advisor and runs in this interpreter, so what it needs installed is this interpreter's
modules (launcher.engines.missing_runtime_modules), not the probed packages.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from advisor.rules.command import DEMO_MODEL, OTHER_MACHINE_PYTHON, tail, without_flag
from advisor.rules.problem import EngineCommandError
from launcher import engines
from launcher.engines import RUNTIME_DTYPES, RUNTIME_MODULE, TORCHRUN_MODULE
from launcher.runtime import contract
from launcher.runtime.worker import argument_error

if TYPE_CHECKING:
    from collections.abc import Sequence

    from advisor.plan import Plan

DTYPES = RUNTIME_DTYPES  # the --dtype values it accepts: its contract's


def command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """torchrun running the bundled runtime on every rank of node ``node_rank``."""
    intent = plan.intent
    problem = intent.error()  # counts below 1, a tp that does not split over the nodes (advisor/intent.py)
    if problem:
        raise EngineCommandError(problem)
    tp, nnodes = intent.tp, intent.nnodes
    argv = [_python(plan, python), "-m", TORCHRUN_MODULE]
    if nnodes == 1:
        argv += ["--standalone", "--nnodes", "1"]
    else:
        argv += ["--nnodes", str(nnodes), "--node-rank", str(node_rank), "--rdzv-backend", "c10d", "--rdzv-endpoint", dist_init_addr]
    argv += ["--nproc-per-node", str(intent.gpus_per_node), "--max-restarts", "0"]
    allreduce, device = _choices(plan)
    argv += [
        "-m", RUNTIME_MODULE,
        "--model", _model(plan),
        "--tp-size", str(tp),
        "--dtype", intent.dtype or "auto",
        "--device", device,
        contract.ALLREDUCE_FLAG, allreduce,
        "--mode", mode or intent.mode,
    ]  # fmt: skip
    # The allreduce decision's own flag group is placed above, from its value; the rest of the plan's flags follow.
    argv += tail(plan, without_flag(plan.flags, contract.ALLREDUCE_FLAG), extra)
    # Only what the user added can be refused (the plan's own flags are the runtime's); asking about a plain plan would
    # load the serve options' web stack on every `advisor check`.
    refused = argument_error(argv[argv.index(RUNTIME_MODULE) + 1:]) if intent.overrides or extra else None
    if refused:
        raise EngineCommandError(f"the bundled runtime would refuse its arguments: {refused}; fix the arguments after --")
    return argv


def install_command(version: str | None = None) -> str:
    """The runtime's dependencies: the ``runtime`` extra of this tp-advisor (its version is the advisor's own)."""
    return engines.runtime_install_command()


def _python(plan: Plan, python: str | None) -> str:
    """The runtime ships with tp-advisor, so it runs in this interpreter on this machine (whatever --python names for
    the other engines); for a plan made for another machine, what a person types there."""
    if python:
        return python
    here = plan.facts.source == "live" or plan.facts.python_here
    return sys.executable if here else OTHER_MACHINE_PYTHON


def not_installed(plan: Plan, python: str | None, mode: str) -> str | None:
    """Why the runtime cannot start in this interpreter (whatever --python says), with the commands that fix it; None
    when it can."""
    missing = engines.missing_runtime_modules(mode)
    if not missing:
        return None
    install = " then ".join(engines.runtime_install_commands(plan.facts, torch_missing="torch" in missing))
    return f"the bundled runtime needs {', '.join(missing)}, not installed in this Python environment: {install}"


def _choices(plan: Plan) -> tuple[str, str]:
    """(allreduce, device): the values of the plan's bundled decisions (advisor/rules/bundled). A plan without them
    (made by hand) gets the runtime's plain allreduce and the device its facts give."""
    fusion, device = plan.decision("flashinfer_allreduce_fusion"), plan.decision("device")
    allreduce = fusion.value["allreduce"] if fusion is not None else contract.ALLREDUCE_TORCH
    chosen = device.value["device"] if device is not None else contract.device_for(bool(plan.facts.engine_gpus))
    return allreduce, chosen


def _model(plan: Plan) -> str:
    """A local directory (the resolved one when the plan found it, e.g. in the HF cache) or the demo model."""
    if plan.model is not None and plan.model.path:
        return plan.model.path
    return plan.intent.model or DEMO_MODEL
