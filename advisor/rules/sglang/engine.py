"""SGLang as the engine registry (advisor.rules.registry) sees it: one object, ENGINE, over the rules of this package."""

from __future__ import annotations

from advisor.rules import sglang
from advisor.rules.engine import Engine, Forcing, Problem, ReleaseError
from advisor.rules.sglang.custom_allreduce import PEER_ACCESS, custom_allreduce_decision
from advisor.rules.sglang.memory import GPU_MEMORY
from launcher.engines import ENGINE_DTYPES, install_command, sglang_command


def resolve(version: str | None) -> tuple[str, list[Problem]]:
    """The modelled release whose rules apply to ``version``; a warning when the version is newer than all of them."""
    asked = version or sglang.NEWEST
    try:
        _, newer = sglang.row_for(asked)
        rules = sglang.rules_release(asked)
    except sglang.ReleaseError as exc:
        raise ReleaseError(str(exc)) from None
    if not newer:
        return rules, []
    return rules, [Problem(
        "engine_version_newer", "warning",
        f"sglang {asked} is newer than the newest modelled release; this plan uses the newest modelled release v{rules}",
        "check the release notes for changed defaults, or pass --engine-version to pick a modelled release",
        f"sglang v{rules}",
    )]  # fmt: skip


ENGINE = Engine(
    name=sglang.ENGINE,
    package="sglang",
    releases=tuple(sglang.RELEASES),
    resolve=resolve,
    decide=sglang.decide,
    release_matrix=sglang.release_matrix,  # fusion_decision's verdicts under every release (advisor.rules.sglang.fusion)
    command=sglang_command,
    install_hint=lambda version=None: install_command(sglang.ENGINE, version),
    dtypes=ENGINE_DTYPES[sglang.ENGINE],
    decision_ids=("flashinfer_allreduce_fusion", "custom_allreduce", "attention_backend", "moe_runner_backend",
                  "memory_defaults"),  # fmt: skip
    forcing={
        "flashinfer_allreduce_fusion": Forcing(on=(sglang.BOOL_FLAG, sglang.BACKEND_FLAG), off=(sglang.ENFORCE_DISABLE,)),
        "custom_allreduce": Forcing(off=(sglang.DISABLE_CUSTOM_AR,)),
    },
    memory=GPU_MEMORY,
    dp_attention=True,
    custom_allreduce=custom_allreduce_decision,
    peer_access=PEER_ACCESS,
)
