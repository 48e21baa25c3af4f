"""vLLM's start-up decisions, release by release (docs/vllm.md; sources cited per rule).

One module per concern vLLM resolves at start-up: ``fusion`` (the FlashInfer allreduce + RMSNorm fusion pass),
``custom_allreduce``, ``compilation`` (-O and CUDA graphs), ``attention`` (the backend), ``memory`` (memory and batch
defaults), ``scheduling`` (chunked prefill, prefix caching, async scheduling); ``common`` holds the files and flags
they cite and the release whose rules apply. Every table is proven against vLLM's own engine-config resolution
(tests/conformance/golden/vllm-X.jsonl, written by ``python -m conformance.vllm X``). Import a name from the module
that defines it; this package itself offers ``decide`` and ``RELEASES``.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Problem, Release, Scenario
from advisor.rules.vllm.architectures import architecture_problems
from advisor.rules.vllm.arguments import plan_problems
from advisor.rules.vllm.attention import (
    CUTLASS_FORCED_FOR_SPARSE,
    MLA_HEAD_SIZES,
    MLA_SM100_FIRST,
    SINKS_SM100,
    SPARSE_KV_DTYPES,
    SPARSE_MLA_RULE,
    TRITON_MLA_ANY_HEAD,
    attention_decision,
    attention_problems,
)
from advisor.rules.vllm.common import VERIFIED, version_problems
from advisor.rules.vllm.compilation import EAGER_LOWERS_LEVEL, compilation_decision, optimization_level_problems
from advisor.rules.vllm.config_validation import config_validation_problems
from advisor.rules.vllm.custom_allreduce import custom_allreduce_decision
from advisor.rules.vllm.dtype import float16_problems
from advisor.rules.vllm.flags import rejected
from advisor.rules.vllm.fusion import FUSION_DEFAULT_ON, FUSION_MAX_SIZE_MB, fusion_decision
from advisor.rules.vllm.hf_config import vllm_model
from advisor.rules.vllm.hybrid import ALIGN_32_ON_SM10X, HYBRID_BLOCK_AT_CONFIG, NEMOTRON_SSM_DTYPE_FROM_CONFIG
from advisor.rules.vllm.memory import (
    BATCH_TIERS,
    GPU_MEMORY_UTILIZATION,
    MODELOPT_KV_CACHE_DTYPES,
    UNSCALED_ROPE_TYPES,
    max_model_len_problems,
    memory_decision,
)
from advisor.rules.vllm.quantization import problems as quantization_problems
from advisor.rules.vllm.runner import runner_problems
from advisor.rules.vllm.scheduling import (
    ASYNC_SCHEDULING_DEFAULT_ON,
    HYBRID_PREFIX_CACHING,
    SWITCHES,
    switch_decision,
)
from advisor.rules.vllm.text_config import text_config_problems


def decide(s: Scenario, release: Release) -> tuple[list[Decision], list[Problem]]:
    vllm = s.facts.package("vllm")
    problems = version_problems(release.version, vllm.version if vllm.installed else None) + optimization_level_problems(s)
    version = release.version  # the decisions resolve their rules from it, and name it in what they observe
    # every rule reads the model as vLLM's config class holds it (class defaults for what config.json leaves out); the
    # checks of what the class refuses judge config.json as written
    written, s = s, replace(s, model=vllm_model(s.model, version))
    attention = attention_decision(s, version)
    decisions = [
        fusion_decision(s, version),
        custom_allreduce_decision(s, version),
        compilation_decision(s, version),
        attention,
        memory_decision(s, version),
        *(switch_decision(s, version, sw[0]) for sw in SWITCHES),
    ]
    problems += architecture_problems(s, version) + attention_problems(s, version, attention)
    problems += quantization_problems(s, version) + max_model_len_problems(s, version)
    problems += text_config_problems(written, version) + runner_problems(s, version) + float16_problems(s, version)
    problems += config_validation_problems(written, version)
    return decisions, problems + plan_problems(s) + rejected(s, release)


# Every release where a modelled behaviour changes, plus those proven by goldens (oldest first): what `advisor diff`, the
# completion of --engine-version and the app offer. A new change table belongs in this tuple.
CHANGE_TABLES = (FUSION_DEFAULT_ON, FUSION_MAX_SIZE_MB, GPU_MEMORY_UTILIZATION, BATCH_TIERS, EAGER_LOWERS_LEVEL,
                 MLA_SM100_FIRST, SINKS_SM100, ASYNC_SCHEDULING_DEFAULT_ON, SPARSE_MLA_RULE,
                 HYBRID_PREFIX_CACHING, CUTLASS_FORCED_FOR_SPARSE, HYBRID_BLOCK_AT_CONFIG,
                 NEMOTRON_SSM_DTYPE_FROM_CONFIG, ALIGN_32_ON_SM10X, UNSCALED_ROPE_TYPES, MODELOPT_KV_CACHE_DTYPES,
                 MLA_HEAD_SIZES, TRITON_MLA_ANY_HEAD, *SPARSE_KV_DTYPES.values())  # fmt: skip
RELEASES = tuple(sorted({*VERIFIED, *(first for table in CHANGE_TABLES for first, _ in table)}, key=rules.parse_release))
