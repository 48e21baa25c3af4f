"""vLLM's command line: ``vllm serve M --tensor-parallel-size N ...``, the model positional, as ``vllm serve`` takes it
in every modelled release (v0.12.0 to v0.33.0: ``model_tag`` in vllm/entrypoints/openai/cli_args.py, later
vllm/entrypoints/{launchers,common}/cli_args.py; the other flags are EngineArgs fields, vllm/engine/arg_utils.py).

``vllm`` is the console script of the interpreter's environment (beside it in ``bin/``), else the same entry point
through that interpreter (``python -m vllm.entrypoints.cli.main serve``); a plan for another machine (simulated or saved
facts, no ``python``) says plain ``vllm``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.rules.command import engine_python, pip_install, probed_live_python, served_model, tail
from advisor.rules.plan_arguments import without_plan_arguments
from advisor.rules.problem import EngineCommandError
from advisor.rules.vllm.arguments import PLAN_ARGUMENTS
from advisor.rules.vllm.dtype import DTYPE_NAMES
from advisor.rules.vllm.multinode import native_multinode_error

if TYPE_CHECKING:
    from collections.abc import Sequence

    from advisor.plan import Plan

# What vLLM's `vllm` console script runs (entry_points.txt of every release from v0.12.0 to v0.33.0).
PROGRAM = "vllm"
CLI_MODULE = "vllm.entrypoints.cli.main"
# The --dtype values it accepts: vllm/config (ModelDType), the same names as SGLang's (dtype.py maps each to the dtype).
DTYPES = tuple(DTYPE_NAMES)


def command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """``vllm serve`` for node ``node_rank`` (``mode`` is the bundled runtime's; not used here)."""
    intent = plan.intent
    argv = [*_program(plan, python), "serve", served_model(plan, "vLLM")]
    argv += ["--tensor-parallel-size", str(max(1, intent.tp))]
    if intent.nnodes > 1:
        refused = native_multinode_error((plan.engine or {}).get("version"))
        if refused:
            raise EngineCommandError(refused)
        # vLLM's multiprocessing multi-node mode: every node runs the same command; nodes other than 0 run headless.
        host, _, port = dist_init_addr.rpartition(":")
        argv += ["--nnodes", str(intent.nnodes), "--node-rank", str(node_rank), "--master-addr", host, "--master-port", port]
        if node_rank > 0:
            argv += ["--headless"]
    if intent.dp_size != 1:
        argv += ["--data-parallel-size", str(intent.dp_size)]
    if intent.dtype:
        argv += ["--dtype", intent.dtype]
    # The overrides that set what the line above sets are checked against the plan (vllm.arguments.plan_problems) and
    # left out: the line carries one value per setting.
    return argv + tail(plan, plan.flags, extra, without_plan_arguments(intent, PLAN_ARGUMENTS))


def install_command(version: str | None = None) -> str:
    return pip_install("vllm", version)


def _program(plan: Plan, python: str | None) -> list[str]:
    """How `vllm` is started: the console script of the engine's environment, else its entry point through the
    interpreter (the same code); plain `vllm` for a plan made for another machine."""
    if python is None and not probed_live_python(plan):
        return [PROGRAM]
    interpreter = engine_python(plan, python)
    script = Path(interpreter).parent / PROGRAM  # not resolved: a venv's python is a link out of the venv
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [interpreter, "-m", CLI_MODULE]
