"""The architectures each vLLM release names, and what a release does with the model's architecture.

architectures.json (written by ``python -m conformance vllm-architectures``; docs/architectures.md) holds, per release,
every architecture name (config.json ``architectures[0]``) the release's engine-config resolution compares against or
its model registry lists, each with where it appears (``file:function`` or ``file:CONSTANT`` under vllm/). Unlike
SGLang, vLLM has no default path for a name it does not know: ModelConfig asks the registry
(vllm/model_executor/models/registry.py, ``_ModelRegistry.inspect_model_cls``) for the model class, and a name that
none of its tables serves is refused at start-up unless transformers defines a class of that name or the config's
``auto_map`` names one (the Transformers backend, ``_try_resolve_transformers``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, Problem, Scenario
from advisor.rules.releases import at, parse_release

ARCHITECTURES_FILE = Path(__file__).with_name("architectures.json")
REGISTRY_FILE = "model_executor/models/registry.py"
# The registry's tables that do not serve a model: _raise_for_unsupported names the last release that did, or the
# out-of-tree plugin that does now (_OOT_SUPPORTED_MODELS, from v0.19.1).
RETIRED = f"{REGISTRY_FILE}:_PREVIOUSLY_SUPPORTED_MODELS"
OUT_OF_TREE = f"{REGISTRY_FILE}:_OOT_SUPPORTED_MODELS"
# From v0.29.0 VllmConfig._maybe_enable_breakable_cudagraph (vllm/config/vllm.py) sets VLLM_USE_BREAKABLE_CUDAGRAPH=1
# for the architectures of this constant (unless the variable is set), and then compiles nothing
# (compilation_config.mode = NONE): no inductor pass runs, the allreduce fusion included.
BREAKABLE_CUDAGRAPH = "config/vllm.py:DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES"
# v0.25.1 to v0.28.0: the same list written inline in VllmConfig.__post_init__ (the extractor records it under this place).
BREAKABLE_CUDAGRAPH_INLINE = "config/vllm.py:VllmConfig.__post_init__:breakable_cudagraph"


@cache
def _releases() -> dict[str, dict[str, list[str]]]:
    """architectures.json's releases, read once."""
    return json.loads(ARCHITECTURES_FILE.read_text(encoding="utf-8"))["releases"]


def data_release(version: str) -> str | None:
    """The newest release read into architectures.json at or below ``version`` (None: older than every one read)."""
    wanted = parse_release(version)
    read = [r for r in _releases() if parse_release(r) <= wanted]
    return max(read, key=parse_release) if read else None


def named(version: str) -> dict[str, list[str]] | None:
    """Every architecture the release names -> where; None when no release at or below ``version`` was read."""
    release = data_release(version)
    return _releases()[release] if release else None


def _with(version: str, place: str) -> frozenset[str]:
    return frozenset(n for n, places in (named(version) or {}).items() if place in places)


@cache
def served(version: str) -> frozenset[str]:
    """The names the release's registry maps to a model class (_VLLM_MODELS: every table but the retired ones)."""
    return frozenset(n for n, places in (named(version) or {}).items()
                     if any(p.startswith(f"{REGISTRY_FILE}:") and p not in (RETIRED, OUT_OF_TREE) for p in places))  # fmt: skip


def breakable_cudagraph(model, version: str) -> bool:
    """Whether v0.25.1+ turns compilation off for this model (its architecture on the breakable-CUDA-graph list)."""
    names = _with(version, BREAKABLE_CUDAGRAPH) | _with(version, BREAKABLE_CUDAGRAPH_INLINE)
    return model is not None and model.architecture in names


def served_by_registry(model, version: str) -> bool | None:
    """Whether the release's registry serves ``architectures[0]``; None when unknown (no model, release not read)."""
    if model is None or named(version) is None:
        return None
    return registry_architecture(model, version) is not None


def architecture_problems(s: Scenario, version: str) -> list[Problem]:
    """A warning when the release's registry does not serve the model's architecture (the Transformers backend or a
    refusal; an error for a retired or out-of-tree one, which vLLM always refuses)."""
    model = s.model
    if served_by_registry(model, version) is not False:
        return []
    release = data_release(version)
    arch = model.architecture
    places = (named(version) or {}).get(arch, [])
    source = f"vllm v{release}, vllm/{REGISTRY_FILE} (_ModelRegistry.inspect_model_cls, _raise_for_unsupported)"
    if RETIRED in places:
        return [Problem(ARCHITECTURE_NOT_NAMED, "warning",
                        f"{arch} was supported by earlier vLLM releases and is not by vllm {release}: it refuses the "
                        "model at start-up", "pass --engine-version of an older release (the error names the last one)",
                        source)]  # fmt: skip
    if OUT_OF_TREE in places:
        return [Problem(ARCHITECTURE_NOT_NAMED, "warning",
                        f"{arch} is not served in-tree by vllm {release}: it refuses the model at start-up",
                        "install the out-of-tree plugin vLLM's error message names", source)]  # fmt: skip
    return [Problem(
        ARCHITECTURE_NOT_NAMED, "warning",
        f"{arch} is not named by vllm {release}: its model registry serves {len(served(version))} architectures, none "
        "of them this one. vLLM runs it through its Transformers backend when the installed transformers defines a "
        "class of that name (or config.json's auto_map names one, with --trust-remote-code), on the default rules "
        "of the config's properties; otherwise it refuses the model at start-up ('Model architectures [...] are not "
        "supported for now')",
        "check the architectures entry of config.json, or pick a vLLM release whose registry lists it"
        " (python -m conformance vllm-architectures)",
        source,
    )]  # fmt: skip


# -- per-architecture config fix-ups (vllm/model_executor/models/config.py, MODELS_CONFIG_MAP) --------------------------
# Each row: (architectures, first release read with it, needs an index_topk in the config, the KV-cache dtype it sets on
# SM10x when --kv-cache-dtype is auto). v0.33.0: GlmMoeDsaForCausalLM.verify_and_update_config ("Using fp8 kv-cache for
# GlmMoeDsaForCausalLM on SM10x") and Glm5NextModelConfig (only with DeepSeek sparse attention's index_topk); v0.30.0
# has neither.
KV_DTYPE_ON_SM10X: tuple[tuple[frozenset[str], str, bool, str], ...] = (
    (frozenset({"GlmMoeDsaForCausalLM"}), "0.33.0", False, "fp8_e4m3"),
    (frozenset({"Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"}), "0.33.0", True, "fp8"),
)
# From v0.27.1 LongcatFlashNgramForCausalLMConfig compiles nothing and captures FULL CUDA graphs (prefill runs eager)
# unless compilation was configured: its zero-expert MoE trips torch.compile, and its n-gram embeddings are wired only
# for FULL capture.
NO_COMPILE_FULL_GRAPHS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"LongcatFlashNgramForCausalLM"}), "0.27.1"),
)
MODELS_CONFIG_FILE = "vllm/model_executor/models/config.py"


def _from(version: str, first: str) -> bool:
    return parse_release(version) >= parse_release(first)


def model_kv_cache_dtype(model, capability: tuple[int, int] | None, version: str) -> str | None:
    """The KV-cache dtype the model's config fix-up sets in place of auto; None: it sets none."""
    if model is None or capability is None or capability[0] != 10:
        return None
    for names, first, needs_index, dtype in KV_DTYPE_ON_SM10X:
        if model.architecture in names and _from(version, first) and (not needs_index or model.index_topk is not None):
            return dtype
    return None


def no_compile_full_graphs(model, version: str) -> bool:
    """Whether the model's config fix-up turns compilation off and captures FULL CUDA graphs."""
    return model is not None and any(model.architecture in names and _from(version, first)
                                     for names, first in NO_COMPILE_FULL_GRAPHS)  # fmt: skip


# -- MLA as ModelConfig.is_deepseek_mla decides ----------------------------------------------------------------------
KINDS_FILE = Path(__file__).with_name("model_kinds.json")
# From v0.20.2 a config with compress_ratios (DeepSeek V4's compressed attention) is MLA when it has a head_dim
# (model_arch_config_convertor.py is_deepseek_mla, get_compress_ratios); before, kv_lora_rank decides for every model.
COMPRESSED_MLA_FROM = "0.20.2"


@cache
def _kinds(version: str, kind: str) -> frozenset[str]:
    """model_kinds.json's ``kind`` list of the newest release read at or below ``version`` (empty when none)."""
    releases = json.loads(KINDS_FILE.read_text(encoding="utf-8"))["releases"]
    read = [r for r in releases if parse_release(r) <= parse_release(version)]
    return frozenset(releases[max(read, key=parse_release)].get(kind, ())) if read else frozenset()


def mla_model_types(version: str) -> frozenset[str]:
    """The model types the release's is_deepseek_mla lists."""
    return _kinds(version, "mla_model_types")


def attention_kind(model, version: str) -> str:
    """ModelConfig.attn_type as far as the rules use it: "hybrid" (the registry's class derives from IsHybrid: Mamba or
    linear-attention layers beside attention), "attention_free" (IsAttentionFree: Mamba alone) or "decoder"."""
    if model is None:
        return "decoder"
    arch = registry_architecture(model, version) or model.architecture  # the class the registry runs
    if arch in _kinds(version, "hybrid"):
        return "hybrid"
    return "attention_free" if arch in _kinds(version, "attention_free") else "decoder"


# From v0.28.0 ModelConfig.use_mla (vllm/config/model.py) answers for a model on the Transformers backend
# (using_transformers_backend: the registry's _TRANSFORMERS_SUPPORTED_MODELS table, or a name no table serves that
# transformers defines) by the config alone: a kv_lora_rank is MLA, whatever the model_type.
TRANSFORMERS_BACKEND_MLA_FROM = "0.28.0"
TRANSFORMERS_SUPPORTED = f"{REGISTRY_FILE}:_TRANSFORMERS_SUPPORTED_MODELS"


def on_transformers_backend(model, version: str) -> bool:
    """Whether vLLM runs the model through its Transformers backend (if it runs it at all: an unserved name it refuses
    unless transformers defines the class)."""
    if model is None or named(version) is None:
        return False
    arch = registry_architecture(model, version)
    return arch is None or TRANSFORMERS_SUPPORTED in named(version).get(arch, [])


def uses_mla(model, version: str) -> bool:
    """ModelConfig.use_mla: the text config's model_type on the release's list, and a kv_lora_rank (a head_dim for a
    compressed-attention config). A kv_lora_rank under a model_type off the list is standard attention to vLLM, except
    on the Transformers backend from v0.28.0 (TRANSFORMERS_BACKEND_MLA_FROM)."""
    if model is None:
        return False
    if _from(version, TRANSFORMERS_BACKEND_MLA_FROM) and on_transformers_backend(model, version):
        return model.kv_lora_rank is not None
    if (model.text_model_type or model.model_type) not in mla_model_types(version):
        return False
    if model.compress_ratios and _from(version, COMPRESSED_MLA_FROM):
        return model.head_dim is not None
    return model.kv_lora_rank is not None


def qk_nope_head_dim(model) -> int | None:
    """The text config's qk_nope_head_dim, which vLLM's MLA checks read (getattr(hf_text_config, "qk_nope_head_dim"));
    where the config does not write it, head_dim less qk_rope_head_dim (None: unknown)."""
    if model.qk_nope_head_dim is not None:
        return model.qk_nope_head_dim
    if model.head_dim is None:
        return None
    return model.head_dim - (model.qk_rope_head_dim or 0)


def uses_sparse_mla(model, version: str) -> bool:
    """DeepSeek sparse attention (V3.2, GLM-5): an MLA model whose config has the indexer's index_topk."""
    return uses_mla(model, version) and model.index_topk is not None


# From v0.25.1 (v0.20.2 has neither): DiffusionGemmaModelForBlockDiffusionConfig lowers max_num_seqs to 8 when it is
# SchedulerConfig.DEFAULT_MAX_NUM_SEQS (128) or more, and UnlimitedOCRForCausalLMConfig turns prefix caching off
# (R-SWA decode KV is not cacheable), whatever was passed.
FEW_SEQS: tuple[frozenset[str], str, int, int] = (frozenset({"DiffusionGemmaForBlockDiffusion"}), "0.25.1", 128, 8)
NO_PREFIX_CACHING: tuple[frozenset[str], str] = (frozenset({"UnlimitedOCRForCausalLM"}), "0.25.1")


def model_max_num_seqs(model, version: str, seqs: int | None) -> int | None:
    """max_num_seqs after the model's config fix-up."""
    names, first, threshold, few = FEW_SEQS
    if model is None or seqs is None or model.architecture not in names or not _from(version, first):
        return seqs
    return few if seqs >= threshold else seqs


def prefix_caching_forced_off(model, version: str) -> bool:
    """Whether the model's config fix-up turns prefix caching off."""
    names, first = NO_PREFIX_CACHING
    return model is not None and model.architecture in names and _from(version, first)


# _SUFFIX_TO_DEFAULTS (vllm/config/model.py), in its order: (suffix, runner). v0.12.0 lacks ForTokenClassification;
# v0.15.1 to v0.33.0 list the same suffixes.
SUFFIX_RUNNERS: list[tuple[str, tuple[tuple[str, str], ...]]] = [
    ("0.12.0", (("ForCausalLM", "generate"), ("ForConditionalGeneration", "generate"), ("ChatModel", "generate"),
                ("LMHeadModel", "generate"), ("ForTextEncoding", "pooling"), ("EmbeddingModel", "pooling"),
                ("ForSequenceClassification", "pooling"), ("ForAudioClassification", "pooling"),
                ("ForImageClassification", "pooling"), ("ForVideoClassification", "pooling"),
                ("ClassificationModel", "pooling"), ("ForRewardModeling", "pooling"), ("RewardModel", "pooling"),
                ("Model", "pooling"))),
    ("0.15.1", (("ForCausalLM", "generate"), ("ForConditionalGeneration", "generate"), ("ChatModel", "generate"),
                ("LMHeadModel", "generate"), ("ForTextEncoding", "pooling"), ("EmbeddingModel", "pooling"),
                ("ForSequenceClassification", "pooling"), ("ForTokenClassification", "pooling"),
                ("ForAudioClassification", "pooling"), ("ForImageClassification", "pooling"),
                ("ForVideoClassification", "pooling"), ("ClassificationModel", "pooling"),
                ("ForRewardModeling", "pooling"), ("RewardModel", "pooling"), ("Model", "pooling"))),
]  # fmt: skip


def suffix_runner(architecture: str, version: str) -> tuple[str, str] | None:
    """try_match_architecture_defaults: the first (suffix, runner) the name ends with."""
    return next(((sfx, runner) for sfx, runner in at(SUFFIX_RUNNERS, version) if architecture.endswith(sfx)), None)


def registry_architecture(model, version: str) -> str | None:
    """The registry's name that serves the model: its own, or the one _normalize_arch converts it from; None: none."""
    if model is None:
        return None
    names = served(version)
    arch = model.architecture
    if arch in names:
        return arch
    match = suffix_runner(arch, version)
    if match:
        for other, _ in at(SUFFIX_RUNNERS, version):
            base = arch.replace(match[0], other)
            if base in names:
                return base
    return None
