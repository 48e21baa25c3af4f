"""SGLang's start-up decisions, release by release (docs/sglang.md; sources cited per rule).

One module per step SGLang takes while it resolves its server arguments, in its order: ``fusion`` (FlashInfer allreduce
fusion, and the release table every step resolves its release from), ``custom_allreduce``, ``attention``
(_handle_attention_backend_compatibility), ``moe_runner`` (_handle_moe_kernel_config and the model steps), ``memory``
(_handle_gpu_memory_settings); ``common`` holds the files and flags they cite and SGLang's GPU predicates. This package
re-exports every name, so ``from advisor.rules import sglang; sglang.X`` keeps working.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.rules import flashinfer as fi  # noqa: F401
from advisor.rules.engine import (  # noqa: F401  (the names the single module offered before the split)
    AUTO_ENABLED,
    FORCED_ON,
    NOT_ENABLED,
    Condition,
    Decision,
    Problem,
    Release,
    ReleaseOutcome,
    Scenario,
    Source,
    check_custom_ar_nvlink,
    check_custom_ar_world_size,
    check_tp_gt_1,
    is_enabled,
    parse_release,
    release_text,
    state_of,
)
from advisor.rules.sglang.arguments import argument_problems
from advisor.rules.sglang.attention import (  # noqa: F401
    DSA_NAME_FROM,
    FA3_DEFAULT_ARCHS,
    HYBRID_ARCHS,
    HYBRID_FA3_FROM,
    MLA_ARCHS,
    NEMOTRON_TRTLLM_MHA_FROM,
    NSA_ARCHS,
    SINK_ARCHS,
    SM100_MODEL_ATTENTION,
    TRTLLM_MLA_ARCHS,
    _default_attention,
    attention_decision,
    attention_kind,
)
from advisor.rules.sglang.common import (  # noqa: F401
    ATTENTION_BACKEND,
    ATTN_CP,
    BACKEND_FLAG,
    BOOL_FLAG,
    CUSTOM_AR,
    DETERMINISTIC,
    DISABLE_CUSTOM_AR,
    ENFORCE_DISABLE,
    ENGINE,
    FUSION_RUNTIME,
    MEMORY_HOOK,
    MOE_RUNNER_BACKEND,
    OVERRIDES,
    SERVER_ARGS,
    _any,
    _gpu_facts,
    _gpu_predicate,
    is_blackwell,
    is_h20,
    is_sm90,
    is_sm100,
    is_sm120,
)
from advisor.rules.sglang.custom_allreduce import (  # noqa: F401
    custom_allreduce_decision,
)
from advisor.rules.sglang.fusion import (  # noqa: F401
    ARCH_SEEN_AS,
    CHECKED_RELEASES,
    FUSE_MAX_TOKENS,
    FUSION_CONDITIONS,
    FUSION_TABLE,
    LOG_LINE,
    LOG_LINE_V0523,
    MIMO_ARCHS,
    MIMO_ARCHS_ORDERED,
    MIMO_TP_SIZES,
    NEWEST,
    OFF_V0510,
    OFF_V0512,
    OFF_V057,
    OLDEST,
    RELEASES,
    V0510,
    V0511,
    V0513,
    V0514,
    V0521,
    V0522,
    V0523,
    V057,
    V058,
    FusionRow,
    ReleaseError,
    _arch_condition,
    _c_a2a_none,
    _c_attn_cp,
    _c_mimo_sm100,
    _c_no_attn_dp,
    _c_no_dp_attention,
    _c_not_dsv41_tp4,
    _c_not_h20,
    _c_single_node,
    _c_single_node_or_sm100,
    _c_sm90_or_blackwell,
    _c_sm90_or_sm100,
    _expand,
    _import_failure_note,
    _runtime_notes,
    architectures,
    fusion_decision,
    fusion_problems,
    release_matrix,
    resolve_backend,
    row_for,
    rules_release,
    seen_architecture,
    unchecked_note,
)
from advisor.rules.sglang.memory import (  # noqa: F401
    BREAKABLE_MULTIMODAL_ARCHS,
    BREAKABLE_PREFILL_GRAPH_FROM,
    DEEPEP_A2A_RESERVE,
    DSA_NO_PREFILL_GRAPH_UNTIL,
    MEMORY_TABLE,
    MEMORY_TABLE_V0520,
    MEMORY_TABLE_V0520_FROM,
    NO_PREFILL_GRAPH_ARCHS,
    PREFILL_GRAPH_FROM,
    PREFILL_GRAPH_WITH_DP_FROM,
    UNKNOWN_MEMORY,
    memory_arithmetic,
    memory_decision,
    memory_defaults,
    memory_table,
    memory_tier,
    prefill_graph_kind,
    prefill_graph_reserve,
    reserved_mib,
    vlm_factor,
)
from advisor.rules.sglang.moe_runner import (  # noqa: F401
    _DEEPSEEK_FAMILY,
    _DEEPSEEK_V3,
    _GLM45,
    _GPT_OSS,
    _QUANT_TRTLLM,
    _QWEN_FAMILY,
    MOE_RUNNER_TABLE,
    NEMOTRON_H,
    MoeRunnerRow,
    _nemotron_h_decision,
    _nemotron_h_file,
    moe_runner_decision,
    moe_runner_row,
    nemotron_h_runner,
)


def decide(s: Scenario, release: Release) -> tuple[list[Decision], list[Problem]]:
    version = release.rules
    fusion = fusion_decision(s, version)
    decisions = [
        fusion,
        custom_allreduce_decision(s, version),
        attention_decision(s, version),
        moe_runner_decision(s, version),
        memory_decision(s, version),
    ]
    note = unchecked_note(version)
    if note is not None:
        decisions = [replace(d, notes=(*d.notes, note)) for d in decisions]
    # A release newer than the modelled ones is not judged by the newest one's parser: its own may know more.
    arguments = [] if release.newer else argument_problems(s, version)
    return decisions, fusion_problems(s, fusion, version) + arguments
