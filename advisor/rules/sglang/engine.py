"""SGLang as the engine registry (advisor.rules.registry) sees it: one object, ENGINE, over the rules of this package."""

from __future__ import annotations

from advisor.rules.engine import Engine, Forcing, Problem
from advisor.rules.sglang import command, decide
from advisor.rules.sglang.arguments import DP_FLAGS, TP_FLAGS
from advisor.rules.sglang.common import BACKEND_FLAG, BOOL_FLAG, DISABLE_CUSTOM_AR, ENFORCE_DISABLE
from advisor.rules.sglang.common import ENGINE as ENGINE_NAME
from advisor.rules.sglang.context import CONTEXT_TOO_LONG_ID
from advisor.rules.sglang.custom_allreduce import PEER_ACCESS, custom_allreduce_decision
from advisor.rules.sglang.flags import spell_out
from advisor.rules.sglang.fusion import release_matrix
from advisor.rules.sglang.logs import LOGS
from advisor.rules.sglang.memory import GPU_MEMORY
from advisor.rules.sglang.multinode import multinode
from advisor.rules.sglang.releases import NEWEST, RELEASES, row_for, rules_release
from advisor.rules.sglang.startup import CONTEXT_FLAG, startup
from launcher.engines import UVICORN_READY


def resolve(version: str | None) -> tuple[str, list[Problem]]:
    """The modelled release whose rules apply to ``version``; a warning when the version is newer than all of them."""
    asked = version or NEWEST
    _, newer = row_for(asked)
    rules = rules_release(asked)
    if not newer:
        return rules, []
    return rules, [Problem(
        "engine_version_newer", "warning",
        f"sglang {asked} is newer than the newest modelled release; this plan uses the newest modelled release v{rules}",
        "check the release notes for changed defaults, or pass --engine-version to pick a modelled release",
        f"sglang v{rules}",
    )]  # fmt: skip


ENGINE = Engine(
    name=ENGINE_NAME,
    package="sglang",
    tp_flags=TP_FLAGS,
    dp_flags=DP_FLAGS,
    spell_out=spell_out,
    releases=RELEASES,
    resolve=resolve,
    decide=decide,
    release_matrix=release_matrix,  # fusion_decision's verdicts under every release (advisor.rules.sglang.fusion)
    command=command.command,
    install_hint=command.install_command,
    dtypes=command.DTYPES,
    decision_ids=("flashinfer_allreduce_fusion", "custom_allreduce", "attention_backend", "moe_runner_backend",
                  "memory_defaults"),  # fmt: skip
    forcing={
        "flashinfer_allreduce_fusion": Forcing(on=(BOOL_FLAG, BACKEND_FLAG), off=(ENFORCE_DISABLE,)),
        "custom_allreduce": Forcing(off=(DISABLE_CUSTOM_AR,)),
    },
    ready=(UVICORN_READY,),
    memory=GPU_MEMORY,
    dp_attention=True,
    custom_allreduce=custom_allreduce_decision,
    peer_access=PEER_ACCESS,
    logs=LOGS,
    known_bugs=__package__,
    multinode=multinode,
    startup=startup,  # its start-up memory arithmetic and errors (advisor.rules.sglang.startup)
    context_flag=CONTEXT_FLAG,
    context_too_long=CONTEXT_TOO_LONG_ID,
)
