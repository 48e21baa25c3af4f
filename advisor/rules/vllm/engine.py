"""vLLM as the engine registry (advisor.rules.registry) sees it: one object, ENGINE, over the rules of this package."""

from __future__ import annotations

from functools import partial

from advisor.rules import vllm
from advisor.rules.engine import Engine, Forcing, Problem, fusion_outcomes
from launcher.engines import ENGINE_DTYPES, install_command, vllm_command


def resolve(version: str | None) -> tuple[str, list[Problem]]:
    """The modelled release whose rules apply to ``version`` (older and newer releases: warnings raised by decide)."""
    return vllm.rules_release(version or vllm.NEWEST), []


ENGINE = Engine(
    name=vllm.ENGINE,
    package="vllm",
    releases=tuple(vllm.RELEASES),
    resolve=resolve,
    decide=vllm.decide,
    release_matrix=partial(fusion_outcomes, vllm.fusion_decision, tuple(vllm.RELEASES)),
    command=vllm_command,
    install_hint=partial(install_command, vllm.ENGINE),
    dtypes=ENGINE_DTYPES[vllm.ENGINE],
    decision_ids=("flashinfer_allreduce_fusion", "custom_allreduce", "compilation", "attention_backend",
                  "memory_defaults", "chunked_prefill", "prefix_caching", "async_scheduling"),  # fmt: skip
    forcing={
        # -cc.pass_config.fuse_allreduce_rms=True|False; --enforce-eager compiles nothing, so no fusion pass runs.
        "flashinfer_allreduce_fusion": Forcing(off=(vllm.ENFORCE_EAGER,), field=vllm.FUSE_FLAG.rsplit(".", 1)[1]),
        "custom_allreduce": Forcing(off=(vllm.DISABLE_CUSTOM_AR,)),
    },
    memory=vllm.GPU_MEMORY,
    kv_notes=vllm.KV_NOTES,
    custom_allreduce=vllm.custom_allreduce_decision,
    peer_access=vllm.PEER_ACCESS,
)
