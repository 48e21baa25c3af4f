"""SGLang's command line: ``python -m sglang.launch_server --model-path M --tp-size N ...``.

Release-specific flag names (e.g. ``--enable-flashinfer-allreduce-fusion`` up to v0.5.13,
``--flashinfer-allreduce-fusion-backend auto`` from v0.5.14) are already resolved by the rules into ``plan.flags``; this
module only places them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.rules.command import engine_python, pip_install, served_model, tail
from advisor.rules.plan_arguments import without_plan_arguments
from advisor.rules.sglang.arguments import PLAN_ARGUMENTS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from advisor.plan import Plan

# The --dtype values it accepts: python/sglang/srt/server_args.py, `--dtype` choices.
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")


def command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """``python -m sglang.launch_server`` for node ``node_rank`` (``mode`` is the bundled runtime's; not used here)."""
    intent = plan.intent
    argv = [engine_python(plan, python), "-m", "sglang.launch_server", "--model-path", served_model(plan, "SGLang")]
    argv += ["--tp-size", str(max(1, intent.tp))]
    if intent.nnodes > 1:
        argv += ["--nnodes", str(intent.nnodes), "--node-rank", str(node_rank), "--dist-init-addr", dist_init_addr]
    if intent.dp_attention:
        argv += ["--enable-dp-attention"]
    if intent.dp_size != 1 or intent.dp_attention:
        argv += ["--dp-size", str(intent.dp_size)]
    if intent.moe_a2a_backend and intent.moe_a2a_backend != "none":
        argv += ["--moe-a2a-backend", intent.moe_a2a_backend]
    if intent.dtype:
        argv += ["--dtype", intent.dtype]
    # The overrides that set what the line above sets are checked against the plan (sglang.arguments.plan_problems)
    # and left out: the line carries one value per setting.
    return argv + tail(plan, plan.flags, extra, without_plan_arguments(intent, PLAN_ARGUMENTS))


def install_command(version: str | None = None) -> str:
    return pip_install("sglang", version)
