"""The bundled runtime as the engine registry (advisor.rules.registry) sees it: one object, ENGINE.

It ships with tp-advisor, so it has no releases to model: its version is the advisor's own."""

from __future__ import annotations

from advisor import __version__
from advisor.rules import bundled
from advisor.rules.bundled import command
from advisor.rules.bundled.multinode import multinode
from advisor.rules.bundled.startup import CONTEXT_FLAG, startup
from advisor.rules.engine import Decision, Engine, Problem, Release, ReleaseOutcome, Scenario
from launcher.engines import RUNTIME_MODES, RUNTIME_READY

NAME = "bundled"


def resolve(version: str | None) -> tuple[str, list[Problem]]:
    """Always the advisor's own version: the runtime is part of it (--engine-version does not apply)."""
    return __version__, []


def decide(s: Scenario, release: Release) -> tuple[list[Decision], list[Problem]]:
    return bundled.decide(s)


def release_matrix(s: Scenario) -> tuple[ReleaseOutcome, ...]:
    """No releases of its own: the what-if view is SGLang's, whose fusion the runtime's mirrors."""
    from advisor.rules.sglang.engine import ENGINE as SGLANG

    return SGLANG.release_matrix(s)


ENGINE = Engine(
    name=NAME,
    package="torch",
    releases=(),
    resolve=resolve,
    decide=decide,
    release_matrix=release_matrix,
    command=command.command,
    install_hint=command.install_command,
    dtypes=command.DTYPES,
    decision_ids=("flashinfer_allreduce_fusion", "device"),
    in_this_interpreter=True,
    ranks_known_up_front=True,  # torchrun starts one per GPU of the node
    modes=RUNTIME_MODES,
    directories=("TP_ADVISOR_CACHE",),  # where it keeps the demo model (launcher/runtime)
    ready=(RUNTIME_READY,),
    not_installed=command.not_installed,
    title="bundled runtime",
    startup=startup,  # its preallocated KV cache against the free memory (advisor.rules.bundled.startup)
    context_flag=CONTEXT_FLAG,
    device_dtype=bundled.dtype,
    demo_tp=2,  # the demo model runs two gloo ranks on a machine without GPUs
    kv_notes=("the bundled runtime preallocates --max-batch-size x --max-model-len tokens of KV cache; raise"
              " --max-model-len for longer sequences",),  # fmt: skip
    cpu_run="the bundled runtime will run on CPU with torch.distributed gloo (no NCCL, no FlashInfer fusion)",
    multinode=multinode,
)
