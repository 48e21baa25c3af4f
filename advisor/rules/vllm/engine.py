"""vLLM as the engine registry (advisor.rules.registry) sees it: one object, ENGINE, over the rules of this package."""

from __future__ import annotations

from functools import partial

from advisor.rules.engine import Engine, Forcing, Problem, fusion_outcomes
from advisor.rules.vllm import RELEASES, command, decide
from advisor.rules.vllm.arguments import DP_FLAGS, TP_FLAGS
from advisor.rules.vllm.common import DISABLE_CUSTOM_AR, ENFORCE_EAGER, FUSE_FLAG, NEWEST, rules_release
from advisor.rules.vllm.common import ENGINE as ENGINE_NAME
from advisor.rules.vllm.custom_allreduce import PEER_ACCESS, custom_allreduce_decision
from advisor.rules.vllm.flags import spell_out
from advisor.rules.vllm.fusion import fusion_decision
from advisor.rules.vllm.logs import LOGS
from advisor.rules.vllm.memory import GPU_MEMORY, KV_NOTES, MAX_MODEL_LEN_ID
from advisor.rules.vllm.multinode import multinode
from advisor.rules.vllm.startup import startup
from launcher.engines import UVICORN_READY


def resolve(version: str | None) -> tuple[str, list[Problem]]:
    """The modelled release whose rules apply to ``version`` (older and newer releases: warnings raised by decide)."""
    return rules_release(version or NEWEST), []


ENGINE = Engine(
    name=ENGINE_NAME,
    package="vllm",
    tp_flags=TP_FLAGS,
    dp_flags=DP_FLAGS,
    spell_out=spell_out,
    releases=RELEASES,
    resolve=resolve,
    decide=decide,
    release_matrix=partial(fusion_outcomes, fusion_decision, RELEASES),
    command=command.command,
    install_hint=command.install_command,
    dtypes=command.DTYPES,
    decision_ids=("flashinfer_allreduce_fusion", "custom_allreduce", "compilation", "attention_backend",
                  "memory_defaults", "chunked_prefill", "prefix_caching", "async_scheduling"),  # fmt: skip
    forcing={
        # -cc.pass_config.fuse_allreduce_rms=True|False; --enforce-eager compiles nothing, so no fusion pass runs.
        "flashinfer_allreduce_fusion": Forcing(off=(ENFORCE_EAGER,), field=FUSE_FLAG.rsplit(".", 1)[1]),
        "custom_allreduce": Forcing(off=(DISABLE_CUSTOM_AR,)),
    },
    ready=(UVICORN_READY,),
    memory=GPU_MEMORY,
    kv_notes=KV_NOTES,
    custom_allreduce=custom_allreduce_decision,
    peer_access=PEER_ACCESS,
    logs=LOGS,
    known_bugs=__package__,
    multinode=multinode,
    startup=startup,
    context_flag="--max-model-len",
    context_too_long=MAX_MODEL_LEN_ID,
)
