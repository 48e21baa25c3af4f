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
from dataclasses import dataclass
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


def breakable_entry(model, version: str) -> str | None:
    """The first entry of the model's architectures on the release's breakable-CUDA-graph list (None: none). VllmConfig
    tests every entry, not the one it runs: v0.25.1-v0.28.0 ``any(a in (...) for a in model_config.architectures)`` in
    __post_init__, from v0.29.0 ``set(model_config.architectures) & ...`` in _uses_breakable_cudagraph_by_default."""
    names = _with(version, BREAKABLE_CUDAGRAPH) | _with(version, BREAKABLE_CUDAGRAPH_INLINE)
    return next((a for a in model.architecture_entries if a in names), None) if model is not None else None


def breakable_cudagraph(model, version: str) -> bool:
    """Whether v0.25.1+ turns compilation off for this model (an entry of architectures on the breakable list)."""
    return breakable_entry(model, version) is not None


def served_by_registry(model, version: str) -> bool | None:
    """Whether the release's registry serves an entry of ``architectures``; None when unknown (no model, release not
    read)."""
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
    entries = model.architecture_entries
    # _raise_for_unsupported: the first entry that is retired or out of tree names the way out
    arch = next((a for a in entries if {RETIRED, OUT_OF_TREE} & set((named(version) or {}).get(a, []))), entries[0])
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
    if len(entries) == 1:
        unnamed = (f"{arch} is not named by vllm {release}: its model registry serves {len(served(version))} "
                   "architectures, none of them this one")  # fmt: skip
    else:  # inspect_model_cls tries each entry; the Transformers backend takes architectures[0]
        unnamed = (f"no entry of architectures ({', '.join(entries)}) is named by vllm {release}: its model registry "
                   f"serves {len(served(version))} architectures, none of them these; its fallback reads the first, "
                   f"{entries[0]}")  # fmt: skip
    return [Problem(
        ARCHITECTURE_NOT_NAMED, "warning",
        f"{unnamed}. vLLM runs it through its Transformers backend when the installed transformers defines a "
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
# From v0.25.1 try_verify_and_update_config (vllm/config/vllm.py) retries MODELS_CONFIG_MAP with the normalized name.
FIXUP_NORMALIZED_FROM = "0.25.1"


def _from(version: str, first: str) -> bool:
    return parse_release(version) >= parse_release(first)


def model_kv_cache_dtype(model, capability: tuple[int, int] | None, version: str) -> str | None:
    """The KV-cache dtype the model's config fix-up sets in place of auto; None: it sets none."""
    if model is None or capability is None or capability[0] != 10:
        return None
    for names, first, needs_index, dtype in KV_DTYPE_ON_SM10X:
        indexed = model.index_topk is not None
        if fixup_names(model, version) & names and _from(version, first) and (indexed or not needs_index):
            return dtype
    return None


def no_compile_full_graphs(model, version: str) -> bool:
    """Whether the model's config fix-up turns compilation off and captures FULL CUDA graphs."""
    return any(fixup_names(model, version) & names and _from(version, first) for names, first in NO_COMPILE_FULL_GRAPHS)


# -- MLA as ModelConfig.is_deepseek_mla decides ----------------------------------------------------------------------
KINDS_FILE = Path(__file__).with_name("model_kinds.json")
# From v0.20.2 a config with compress_ratios (DeepSeek V4's compressed attention) is MLA when it has a head_dim
# (model_arch_config_convertor.py is_deepseek_mla, get_compress_ratios); before, kv_lora_rank decides for every model.
COMPRESSED_MLA_FROM = "0.20.2"
# v0.33.0 also derives the compress ratios from transformers' DeepseekV4Config spelling, compress_rates per layer type
# (get_compress_ratios, vllm/transformers_utils/deepseek_v4_utils.py); the releases between v0.20.2 and v0.33.0 are
# unread (their transformers refuse that config's layer types anyway).
COMPRESS_RATES_FROM = "0.33.0"


def compressed_attention(model, version: str) -> bool:
    """The config has DeepSeek V4's per-layer compress ratios as the release reads them (get_compress_ratios)."""
    return bool(model.compress_ratios or (model.compress_rates and _from(version, COMPRESS_RATES_FROM)))


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
    if compressed_attention(model, version) and _from(version, COMPRESSED_MLA_FROM):
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
    if seqs is None or not fixup_names(model, version) & names or not _from(version, first):
        return seqs
    return few if seqs >= threshold else seqs


def prefix_caching_forced_off(model, version: str) -> bool:
    """Whether the model's config fix-up turns prefix caching off."""
    names, first = NO_PREFIX_CACHING
    return bool(fixup_names(model, version) & names) and _from(version, first)


# _SUFFIX_TO_DEFAULTS (vllm/config/model.py), in its order: (suffix, runner, convert). v0.12.0 lacks
# ForTokenClassification and converts the reward suffixes with "reward"; v0.14.1 to v0.33.0 list the same rows (the
# releases between v0.12.0 and v0.14.1 were not read).
SUFFIX_DEFAULTS: list[tuple[str, tuple[tuple[str, str, str], ...]]] = [
    ("0.12.0", (("ForCausalLM", "generate", "none"), ("ForConditionalGeneration", "generate", "none"),
                ("ChatModel", "generate", "none"), ("LMHeadModel", "generate", "none"),
                ("ForTextEncoding", "pooling", "embed"), ("EmbeddingModel", "pooling", "embed"),
                ("ForSequenceClassification", "pooling", "classify"), ("ForAudioClassification", "pooling", "classify"),
                ("ForImageClassification", "pooling", "classify"), ("ForVideoClassification", "pooling", "classify"),
                ("ClassificationModel", "pooling", "classify"), ("ForRewardModeling", "pooling", "reward"),
                ("RewardModel", "pooling", "reward"), ("Model", "pooling", "embed"))),
    ("0.14.1", (("ForCausalLM", "generate", "none"), ("ForConditionalGeneration", "generate", "none"),
                ("ChatModel", "generate", "none"), ("LMHeadModel", "generate", "none"),
                ("ForTextEncoding", "pooling", "embed"), ("EmbeddingModel", "pooling", "embed"),
                ("ForSequenceClassification", "pooling", "classify"), ("ForTokenClassification", "pooling", "classify"),
                ("ForAudioClassification", "pooling", "classify"), ("ForImageClassification", "pooling", "classify"),
                ("ForVideoClassification", "pooling", "classify"), ("ClassificationModel", "pooling", "classify"),
                ("ForRewardModeling", "pooling", "embed"), ("RewardModel", "pooling", "embed"),
                ("Model", "pooling", "embed"))),
]  # fmt: skip


def suffix_defaults(architecture: str, version: str, runner: str | None = None,
                    convert: str | None = None) -> tuple[str, str, str] | None:  # fmt: skip
    """try_match_architecture_defaults: the first (suffix, runner, convert) the name ends with, among the rows of the
    given runner and convert (None: any)."""
    rows = at(SUFFIX_DEFAULTS, version)
    return next((row for row in rows if architecture.endswith(row[0]) and runner in (None, row[1])
                 and convert in (None, row[2])), None)  # fmt: skip


def suffix_runner(architecture: str, version: str) -> tuple[str, str] | None:
    """The first (suffix, runner) the name ends with."""
    match = suffix_defaults(architecture, version)
    return match[:2] if match else None


# -- which entry of architectures vLLM runs ------------------------------------------------------------------------
# vLLM reads every entry of config.json's architectures, in order, and runs the first its registry serves; SGLang's
# decisions key on architectures[0] alone (advisor/rules/sglang/). The same in v0.12.0 to v0.33.0:
# - ModelConfig.__post_init__ (vllm/config/model.py) asks the registry whether the model is a pooling / generative one
#   (_ModelRegistry.inspect_model_cls with runner_type still unset: a suffix of any runner converts), then picks the
#   runner (_get_default_runner_type: the first entry the registry serves directly decides by its class, or the first
#   whose suffix _SUFFIX_TO_DEFAULTS lists decides by the suffix), then the convert type (_get_default_convert_type, the
#   same walk), then inspects again: inspect_model_cls tries each entry in turn, as written or as _normalize_arch
#   converts it under that runner and convert type, and ModelConfig.architecture is the first entry that resolves.
# - MODELS_CONFIG_MAP's fix-ups (VllmConfig.try_verify_and_update_config) key on ModelConfig.architecture (from v0.25.1
#   also on the name _normalize_arch converts it to); the breakable-CUDA-graph list (v0.25.1 onwards) on any entry.
# - When no entry is served as written and the convert type is "none", inspect_model_cls first tries the Transformers
#   backend for architectures[0] (a class transformers defines): a case the rules do not know and warn about.


@dataclass(frozen=True, slots=True)
class Resolution:
    """What ModelConfig resolves from the architectures list with --runner auto and --convert auto."""

    entry: str | None  # ModelConfig.architecture: the first entry the registry runs, as written (None: none)
    served_as: str | None  # the registry's name that runs it: the entry, or the name _normalize_arch converts it to
    runner: str  # "generate" or "pooling"
    convert: str  # "none", "embed", "classify" (v0.12.0: also "reward")


def _served_as(architecture: str, version: str, runner: str | None, convert: str | None) -> str | None:
    """_normalize_arch, then whether the registry has the name: the entry, or the same name with another suffix."""
    names = served(version)
    if architecture in names:
        return architecture
    match = suffix_defaults(architecture, version, runner, convert)
    if match:
        for other, _, _ in at(SUFFIX_DEFAULTS, version):
            base = architecture.replace(match[0], other)
            if base in names:
                return base
    return None


def _first_served(entries: tuple[str, ...], version: str, runner: str | None,
                  convert: str | None) -> tuple[str, str] | None:  # fmt: skip
    """inspect_model_cls's walk: (entry, registry name) of the first entry that resolves."""
    for entry in entries:
        found = _served_as(entry, version, runner, convert)
        if found:
            return entry, found
    return None


def generative_classes(version: str) -> frozenset[str]:
    """The registry's names whose class generates text (is_text_generation_model: compute_logits). A release read
    without the list counts every class that is not a pooling one."""
    kinds = _kinds(version, "generative")
    return kinds or served(version) - _kinds(version, "pooling")


def class_kinds(model, version: str) -> tuple[bool, bool] | None:
    """(is_pooling_model, is_text_generation_model) of the class the registry inspects before the runner is known (the
    first entry that resolves under any suffix); None when no entry is served (the Transformers backend or a refusal)."""
    if model is None:
        return None
    first = _first_served(model.architecture_entries, version, None, None)
    if first is None:
        return None
    return first[1] in _kinds(version, "pooling"), first[1] in generative_classes(version)


def resolution(model, version: str) -> Resolution:
    """ModelConfig's reading of the model's architectures list (see above); a plain generative model when unknown."""
    if model is None:
        return Resolution(None, None, "generate", "none")
    entries, names = model.architecture_entries, served(version)
    # registry.is_pooling_model(architectures) / is_text_generation_model before the runner is known
    pooling_class, generative_class = class_kinds(model, version) or (False, False)
    runner = None
    for entry in entries:  # _get_default_runner_type
        if entry in names and (pooling_class or generative_class):
            runner = "pooling" if pooling_class else "generate"
            break
        match = suffix_defaults(entry, version)  # a class that neither pools nor generates: its suffix decides
        if match:
            runner = match[1]
            break
    runner = runner or "generate"
    convert = "embed" if runner == "pooling" else "none"
    for entry in entries:  # _get_default_convert_type
        if entry in names and (pooling_class if runner == "pooling" else generative_class):
            convert = "none"
            break
        match = suffix_defaults(entry, version, runner)
        if match:
            convert = match[2]
            break
    found = _first_served(entries, version, runner, convert)
    return Resolution(found[0] if found else None, found[1] if found else None, runner, convert)


def vllm_architecture(model, version: str) -> str | None:
    """ModelConfig.architecture: the entry vLLM runs (None: its registry serves none, a refusal or the Transformers
    backend)."""
    return resolution(model, version).entry


def registry_architecture(model, version: str) -> str | None:
    """The registry's name that serves the model: the entry vLLM runs, or the one _normalize_arch converts it to; None:
    none."""
    return resolution(model, version).served_as


def fixup_names(model, version: str) -> frozenset[str]:
    """The names VllmConfig.try_verify_and_update_config looks MODELS_CONFIG_MAP up with: ModelConfig.architecture and,
    from v0.25.1, the registry name _normalize_arch converts it to (empty: vLLM runs no registry class)."""
    found = resolution(model, version)
    if found.entry is None:
        return frozenset()
    return frozenset({found.entry, found.served_as} if _from(version, FIXUP_NORMALIZED_FROM) else {found.entry})
