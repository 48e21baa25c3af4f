"""The attention backend CudaPlatform.get_attn_backend_cls picks."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Problem, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import (
    attention_kind,
    compressed_attention,
    fixup_names,
    mla_model_types,
    qk_nope_head_dim,
    uses_mla,
    uses_sparse_mla,
)
from advisor.rules.vllm.common import ATTENTION_FLAG, PLATFORM_FILE, rules_release
from advisor.rules.vllm.hf_config import layer_head_sizes, missing_attributes
from advisor.rules.vllm.memory import kv_cache_dtype

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

# The backend CudaPlatform.get_attn_backend_cls picks: the first of the priority list whose checks pass.
# First MLA backend on SM100 (_get_backend_priorities): CUTLASS MLA up to v0.14.1, FlashInfer MLA from v0.15.1.
MLA_SM100_FIRST: list[tuple[str, str]] = [("0.12.0", "CUTLASS_MLA"), ("0.15.1", "FLASHINFER_MLA")]
# Attention sinks (gpt-oss) on SM100: Triton in v0.12.0 and v0.15.1, FlashAttention from v0.20.2 (goldens; the releases
# between v0.15.1 and v0.20.2 are unproven).
SINKS_SM100: list[tuple[str, str]] = [("0.12.0", "TRITON_ATTN"), ("0.20.2", "FLASH_ATTN")]
# The qk_nope_head_dim values FlashInfer MLA takes (FlashInferMLABackend.supports_combination reads the text config's
# qk_nope_head_dim, vllm/v1/attention/backends/mla/flashinfer_mla.py): no check before v0.15.1, 128 only in v0.15.1 and
# v0.17.1, 64 / 128 / 192 from v0.19.1 (to v0.33.0). Where it refuses, the SM100 list's next entry, CUTLASS MLA, runs
# (GLM-4.7-Flash's 192 up to v0.17.x).
FLASHINFER_MLA_NOPE: list[tuple[str, tuple[int, ...] | None]] = [("0.12.0", None), ("0.15.1", (128,)),
                                                                  ("0.19.1", (64, 128, 192))]  # fmt: skip


# How a person chooses the backend: v0.12.0 reads the VLLM_ATTENTION_BACKEND environment variable and its parser has no
# --attention-backend (vllm/envs.py, vllm/engine/arg_utils.py); v0.15.1 has the flag. The flag's first release between
# the two is unproven.
ATTENTION_FLAG_FROM: list[tuple[str, bool]] = [("0.12.0", False), ("0.15.1", True)]
ATTENTION_ENV = "VLLM_ATTENTION_BACKEND"


def attention_choice_hint(version: str) -> str:
    """How to choose the backend in this release."""
    if at(ATTENTION_FLAG_FROM, version):
        return f"pass {ATTENTION_FLAG} NAME to choose"
    return f"set {ATTENTION_ENV}=NAME in the environment to choose (v{version} has no {ATTENTION_FLAG})"


# DeepSeek sparse attention (an MLA model with index_topk): the sparse backends at the end of _get_backend_priorities'
# MLA list, the first whose capability check passes (FLASHMLA_SPARSE: 9.x and 10.x; FLASH_ATTN_MLA_SPARSE and
# FLASHINFER_MLA_SPARSE_SM90: 9.x; FLASHINFER_MLA_SPARSE and FLASH_ATTN_MLA_SPARSE_FA4: 10.x; _SM120: 12.x).
# v0.12.0: FLASHMLA_SPARSE only, and none on 10.0, where check_and_update_config has forced CUTLASS_MLA (v0.14.1
# exempts sparse models). v0.17.1: on 10.x FLASHINFER_MLA_SPARSE first at 16 heads per rank or fewer.
# v0.19.1: and with a quantized (fp8) KV cache. v0.25.1: FLASH_ATTN_MLA_SPARSE first off 10.x, FLASHINFER_MLA_SPARSE_SM120
# on 12.x. v0.30.0: FLASHINFER_MLA_SPARSE_SM90 last on 9.x (first at head size 512). v0.33.0: on 10.x with a bf16 KV
# cache and 16 heads or fewer, FLASH_ATTN_MLA_SPARSE_FA4 first.
SPARSE_MLA_RULE: list[tuple[str, str]] = [("0.12.0", "0.12"), ("0.17.1", "0.17"), ("0.19.1", "0.19"),
                                          ("0.25.1", "0.25"), ("0.30.0", "0.30"), ("0.33.0", "0.33")]  # fmt: skip
SPARSE_SUPPORT = {"FLASHMLA_SPARSE": (9, 10), "FLASH_ATTN_MLA_SPARSE": (9,), "FLASHINFER_MLA_SPARSE_SM90": (9,),
                  "FLASHINFER_MLA_SPARSE": (10,), "FLASH_ATTN_MLA_SPARSE_FA4": (10,),
                  "FLASHINFER_MLA_SPARSE_SM120": (12,)}  # fmt: skip
MLA_HEAD_SIZE_FOR_FLASHINFER_SM90 = 512
# v0.12.0 forces CUTLASS_MLA on 10.0 for every MLA model, sparse ones too; v0.14.1 exempts them ("unless sparse").
CUTLASS_FORCED_FOR_SPARSE: list[tuple[str, bool]] = [("0.12.0", True), ("0.14.1", False)]


def sparse_mla_backend(s: Scenario, version: str, kv_cache_dtype: str) -> str | None:
    """The sparse MLA backend vLLM picks; None where none supports the GPU (vLLM then fails: no valid backend)."""
    rule = at(SPARSE_MLA_RULE, version)
    model, major = s.model, s.capability[0]
    heads = (model.num_heads or 0) // max(s.tp, 1) if model.num_heads else None
    few_heads = heads is not None and heads <= 16
    quantized = kv_cache_dtype.startswith("fp8")
    if major == 10:
        order = ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"]
        if rule >= "0.19" and quantized:
            order = ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
        elif rule >= "0.17" and few_heads:
            order = ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            if rule >= "0.33":
                order.insert(0, "FLASH_ATTN_MLA_SPARSE_FA4")
        if rule == "0.12":  # v0.12.0's check_and_update_config forces CUTLASS_MLA on 10.0: no sparse backend fits
            order = [] if tuple(s.capability) == (10, 0) and at(CUTLASS_FORCED_FOR_SPARSE, version) else ["FLASHMLA_SPARSE"]
    elif major == 12 and rule >= "0.25":
        order = ["FLASHINFER_MLA_SPARSE_SM120"]
    elif rule >= "0.25":
        order = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        if rule >= "0.30":
            head = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
            fi = "FLASHINFER_MLA_SPARSE_SM90"
            order = [fi, *order] if head == MLA_HEAD_SIZE_FOR_FLASHINFER_SM90 else [*order, fi]
    else:
        order = ["FLASHMLA_SPARSE"]
    head = mla_selector_head_size(model, version) or None
    return next((name for name in order if major in SPARSE_SUPPORT[name] and _sparse_head_ok(name, head, version)
                 and _sparse_kv_ok(name, kv_cache_dtype, version) and _sparse_nope_ok(name, model, version)),
                None)  # fmt: skip


# The MLA head sizes (kv_lora_rank + qk_rope_head_dim) each sparse backend takes (get_supported_head_sizes in
# vllm/v1/attention/backends/mla/*sparse*.py; an empty list takes any): FlashMLA's sparse kernel 576 (DeepSeek V3.2's
# 512 + 64), and 512 too in v0.20.2 and from v0.33.0; FlashInfer's 576 from its first release (v0.17.1) up to v0.25.x,
# any from v0.30.0; FlashInfer's SM90 one 512 and 576.
SPARSE_HEAD_SIZES: dict[str, list[tuple[str, tuple[int, ...]]]] = {
    "FLASHMLA_SPARSE": [("0.12.0", (576,)), ("0.20.2", (512, 576)), ("0.25.1", (576,)), ("0.33.0", (512, 576))],
    "FLASHINFER_MLA_SPARSE": [("0.12.0", (576,)), ("0.30.0", ())],
    "FLASHINFER_MLA_SPARSE_SM90": [("0.12.0", (512, 576))],
}


# The qk_nope_head_dim values FlashInfer's sparse MLA backend takes (FlashInferMLASparseBackend.supports_combination,
# vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py): 128 only in its first release v0.17.1 (GLM-5's 192 then
# gets FlashMLA's sparse kernel on SM100 at any head count), 128 / 192 from v0.19.1. From v0.30.0 the check depends on
# the head size too (256 for a 512-wide head): not modelled, no value ruled out.
FLASHINFER_MLA_SPARSE_NOPE: list[tuple[str, tuple[int, ...] | None]] = [("0.12.0", (128,)), ("0.19.1", (128, 192)),
                                                                         ("0.30.0", None)]  # fmt: skip


def _sparse_nope_ok(backend: str, model, version: str) -> bool:
    allowed = at(FLASHINFER_MLA_SPARSE_NOPE, version) if backend == "FLASHINFER_MLA_SPARSE" else None
    nope = qk_nope_head_dim(model)
    return allowed is None or nope is None or nope in allowed


# The KV-cache dtypes each sparse backend takes (supported_kv_cache_dtypes of its class, vllm/v1/attention/backends/mla/
# *sparse*.py; "auto" always): FlashMLA's sparse kernel its own fp8_ds_mla layout ("fp8" an alias from v0.19.1), never
# fp8_e4m3, so a ModelOpt checkpoint's fp8 KV cache leaves it; FlashAttention's sparse ones no quantized dtype.
_FI_SPARSE = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")
SPARSE_KV_DTYPES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "FLASHMLA_SPARSE": [("0.12.0", ("auto", "fp8_ds_mla")), ("0.15.1", ("auto", "bfloat16", "fp8_ds_mla")),
                        ("0.19.1", ("auto", "bfloat16", "fp8_ds_mla", "fp8")),
                        ("0.30.0", ("auto", "bfloat16", "fp8_ds_mla", "fp8", "nvfp4_ds_mla"))],
    "FLASHINFER_MLA_SPARSE": [("0.12.0", ("auto", "bfloat16")), ("0.19.1", _FI_SPARSE)],
    "FLASH_ATTN_MLA_SPARSE": [("0.12.0", ("auto", "float16", "bfloat16"))],
    "FLASH_ATTN_MLA_SPARSE_FA4": [("0.12.0", ("auto", "bfloat16"))],
    "FLASHINFER_MLA_SPARSE_SM90": [("0.12.0", ("auto", "bfloat16", "fp8", "fp8_e4m3"))],
    "FLASHINFER_MLA_SPARSE_SM120": [("0.12.0", ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"))],
}  # fmt: skip


def _sparse_kv_ok(backend: str, kv_cache_dtype: str, version: str) -> bool:
    return kv_cache_dtype == "auto" or kv_cache_dtype in at(SPARSE_KV_DTYPES[backend], version)


def _sparse_head_ok(backend: str, head: int | None, version: str) -> bool:
    sizes = at(SPARSE_HEAD_SIZES[backend], version) if backend in SPARSE_HEAD_SIZES else ()
    return head is None or not sizes or head in sizes


def attention_backend(s: Scenario, version: str, kv_cache_dtype: str = "auto") -> str | None:
    """The backend name vLLM selects for the model's attention layers on this GPU (None when the GPU is unknown, or
    when no backend supports the model there)."""
    cap = s.capability
    model = s.model
    if cap is None or model is None:
        return None
    major = cap[0]
    if uses_sparse_mla(model, version):
        if unread_mla_attributes(model, version, major):
            return None
        return sparse_mla_backend(s, version, kv_cache_dtype)
    if uses_mla(model, version):
        head = mla_selector_head_size(model, version)
        if not compressed_attention(model, version) and head not in at(MLA_HEAD_SIZES, version):
            return "TRITON_MLA" if at(TRITON_MLA_ANY_HEAD, version) else None
        sm100 = at(MLA_SM100_FIRST, version)
        if sm100 == "FLASHINFER_MLA" and not flashinfer_mla_takes(model, version):
            sm100 = "CUTLASS_MLA"
        return {10: sm100, 9: "FLASH_ATTN_MLA"}.get(major, "TRITON_MLA")
    if triton_for_mixed_heads(s, version):
        return "TRITON_ATTN"
    sinks = model.model_type == "gpt_oss"  # attention sinks: FlashInfer's prefill path rejects them
    head = selector_head_size(model, version)
    order = ["FLASHINFER", "FLASH_ATTN"] if major == 10 else ["FLASH_ATTN", "FLASHINFER"]
    for name in [*order, "TRITON_ATTN", "FLEX_ATTENTION"]:
        if head is not None and not supports_head_size(name, head, major, version):
            continue
        if name == "FLASH_ATTN" and kv_cache_dtype not in UNQUANTIZED_KV and major not in FA_QUANTIZED_KV_MAJORS:
            continue
        if sinks and (name == "FLASHINFER" or (name == "FLASH_ATTN" and not _fa_sinks(major, version))):
            continue
        return name
    return None


# The sparse MLA backends' supports_combination read the text config's MLA attributes without a default (v0.33.0
# vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py: qk_nope_head_dim and kv_lora_rank;
# flashinfer_mla_sparse_sm90.py: kv_lora_rank), and the selector validates every backend of the priority list
# (CudaPlatform.get_valid_backends, vllm/platforms/cuda.py): a config class without the attribute (transformers'
# DeepseekV4Config, config.json not writing it) raises AttributeError at start-up on every GPU for kv_lora_rank, on
# 10.x (FlashInfer's sparse backend in the list) for qk_nope_head_dim. Where no class was read, nothing is ruled out.
SPARSE_ATTRIBUTES_ON = {"kv_lora_rank": None, "qk_nope_head_dim": 10}


def unread_mla_attributes(model, version: str, major: int) -> tuple[str, ...]:
    """The MLA attributes a sparse backend reads that neither config.json nor its config class has, on this GPU."""
    text_type = model.text_model_type or model.model_type
    missing = missing_attributes(text_type, version) | missing_attributes(model.model_type, version)
    return tuple(k for k, on in SPARSE_ATTRIBUTES_ON.items()
                 if k in missing and k in model.unwritten and on in (None, major))  # fmt: skip


# Gemma 4's config fix-up (Gemma4Config.verify_and_update_config, vllm/model_executor/models/config.py, v0.33.0; the
# DiffusionGemma one calls it, EmbeddingGemma2's forces TRITON_ATTN whatever the heads): where the layer types' head
# widths differ (full attention's global_head_dim against head_dim), FA4 runs every layer when the GPU has it (9.x,
# 10.x, 11.x: is_fa_version_supported(4)) and the widest is 512 or less; otherwise it sets TRITON_ATTN when no backend
# was chosen. The goldens from v0.20.2 show the same on an A100; the widths are read from v0.33.0's classes only
# (config_defaults.json: layer_head_dims), so an older release follows it where config.json writes global_head_dim.
MIXED_HEADS_FIXUP: tuple[frozenset[str], str] = (frozenset({"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
                                                            "Gemma4UnifiedForConditionalGeneration",
                                                            "DiffusionGemmaForBlockDiffusion"}), "0.20.2")  # fmt: skip
ALWAYS_TRITON_FIXUP: tuple[frozenset[str], str] = (frozenset({"EmbeddingGemma2Model"}), "0.33.0")
FA4_MAX_HEAD = 512


def triton_for_mixed_heads(s: Scenario, version: str) -> bool:
    """Whether the model's config fix-up sets TRITON_ATTN (no --attention-backend given)."""
    names = fixup_names(s.model, version)
    release = rules.parse_release(version)
    if names & ALWAYS_TRITON_FIXUP[0] and release >= rules.parse_release(ALWAYS_TRITON_FIXUP[1]):
        return True
    if not names & MIXED_HEADS_FIXUP[0] or release < rules.parse_release(MIXED_HEADS_FIXUP[1]):
        return False
    widths = layer_head_sizes(s.model, version) or frozenset()
    if len(widths) <= 1:
        return False
    return not (s.capability[0] in FA4_MAJORS and max(widths) <= FA4_MAX_HEAD)


def flashinfer_mla_takes(model, version: str) -> bool:
    """Whether FlashInfer MLA's qk_nope_head_dim check passes (True where the release has none or the width is unknown)."""
    allowed = at(FLASHINFER_MLA_NOPE, version)
    nope = qk_nope_head_dim(model)
    return allowed is None or nope is None or nope in allowed


# The MLA head size the selector checks (ModelArchConfigConvertor.get_head_size): kv_lora_rank + qk_rope_head_dim. The
# dense MLA backends take the sizes of MLACommonBackend.get_supported_head_sizes (v0.12.0 to v0.17.1: 576, DeepSeek's
# 512 + 64; v0.19.1: and 320; v0.30.0: and 512; vllm/model_executor/layers/attention/mla_attention.py, before v0.15.1
# vllm/v1/attention/backends/mla/common.py); Triton MLA inherits them up to v0.17.1 and takes any size from v0.19.1
# (its own empty list, triton_mla.py). Another size leaves Triton MLA, or before v0.19.1 no backend (vLLM fails).
MLA_HEAD_SIZES: list[tuple[str, tuple[int, ...]]] = [("0.12.0", (576,)), ("0.19.1", (320, 576)),
                                                     ("0.30.0", (320, 512, 576))]  # fmt: skip
TRITON_MLA_ANY_HEAD: list[tuple[str, bool]] = [("0.12.0", False), ("0.19.1", True)]


def mla_selector_head_size(model, version: str) -> int | None:
    """The head size the selector checks for an MLA model: kv_lora_rank + qk_rope_head_dim where the release lists the
    model type as MLA (get_head_size's is_deepseek_mla branch); a Transformers-backend MLA model (v0.28.0+, whose
    model type is off the list) gets the standard head size."""
    if (model.text_model_type or model.model_type) in mla_model_types(version):
        return (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
    return selector_head_size(model, version)


# FlashAttention takes a quantized (fp8) KV cache only where FA3 (9.x) or, in later releases, FA4 (10.x) runs
# (FlashAttentionBackend.supports_kv_cache_dtype, vllm/v1/attention/backends/flash_attn.py: flash_attn_supports_fp8 up
# to v0.20.2, FA3 on SM90 in v0.25.1, flash_attn_supports_kv_cache_dtype from v0.30.0); FA2 (8.x) never, so an A100
# with an fp8 KV cache (a ModelOpt checkpoint's, --kv-cache-dtype fp8) gets FlashInfer. Which 9.x / 10.x head sizes FA3 /
# FA4 take with it is not modelled.
UNQUANTIZED_KV = ("auto", "float16", "bfloat16")
FA_QUANTIZED_KV_MAJORS = (9, 10)


def _fa_sinks(major: int, version: str) -> bool:
    """FlashAttention runs attention sinks: FA3 on 9.x; on 10.x the release's FA4 (SINKS_SM100)."""
    return major == 9 or (major == 10 and at(SINKS_SM100, version) == "FLASH_ATTN")


# The head sizes each standard backend takes (its supports_head_size / get_supported_head_sizes, checked by the
# selector before the priority order is walked: vllm/v1/attention/backends/flash_attn.py, flashinfer.py,
# triton_attn.py). FlashAttention: a multiple of 8 up to 256; from v0.20.2 up to 512 where FA4 runs (capability 9.x,
# 10.x, 11.x: vllm_flash_attn/flash_attn_interface.py _is_fa4_supported). FlashInfer: 64, 128, 256 (and 512 from
# v0.25.1). Triton: 32 and up. FlexAttention: any.
FA4_HEAD_SIZES_FROM: list[tuple[str, bool]] = [("0.12.0", False), ("0.20.2", True)]
FA4_MAJORS = (9, 10, 11)
FLASHINFER_HEAD_SIZES: list[tuple[str, tuple[int, ...]]] = [("0.12.0", (64, 128, 256)), ("0.25.1", (64, 128, 256, 512))]
TRITON_MIN_HEAD_SIZE = 32


def supports_head_size(backend: str, head: int, major: int, version: str) -> bool:
    if backend == "FLASH_ATTN":
        limit = 512 if at(FA4_HEAD_SIZES_FROM, version) and major in FA4_MAJORS else 256
        return head % 8 == 0 and head <= limit
    if backend == "FLASHINFER":
        return head in at(FLASHINFER_HEAD_SIZES, version)
    if backend == "TRITON_ATTN":
        return head >= TRITON_MIN_HEAD_SIZE
    return True


# A head_dim written as 0 (transformers' GLM-5-Next config class; DeepSeek-VL2's materializes one): up to v0.20.2
# get_head_size returns the config's head_dim whenever it is not None (vllm/config/model.py in v0.12.0,
# vllm/transformers_utils/model_arch_config_convertor.py from v0.14.1), so the selector checks a head size of 0, which
# FlashInfer's list rules out and FlashAttention's multiple-of-8 check lets through; v0.25.1 takes it only when positive
# and derives the size otherwise. The releases between v0.20.2 and v0.25.1 were not read.
ZERO_HEAD_DIM_IS_SIZE: list[tuple[str, bool]] = [("0.12.0", True), ("0.25.1", False)]
# Head size 0 whatever head_dim says: v0.12.0's ModelConfig.get_head_size for every attention-free model (Mamba2's
# head_dim 64 included, so FlashInfer is ruled out on a B200); from v0.14.1 the convertor's MambaModelArchConfigConvertor
# and its like, by model_type (vllm/transformers_utils/model_arch_config_convertor.py, MODEL_ARCH_CONFIG_CONVERTORS).
ATTENTION_FREE_HEAD_SIZE_ZERO: list[tuple[str, bool]] = [("0.12.0", True), ("0.14.1", False)]
ZERO_HEAD_SIZE_TYPES = frozenset({"mamba", "falcon_mamba", "timm_wrapper", "medusa"})


def selector_head_size(model, version: str | None = None) -> int | None:
    """The head size vLLM's selector checks for a model without MLA (ModelArchConfigConvertor.get_head_size): the
    config's head_dim when positive (when written at all up to v0.20.2, 0 included), else hidden_size //
    num_attention_heads, 0 without attention heads (Mamba); None where the config's text part is not read here (the
    size unknown: no backend is ruled out for it)."""
    if version is not None and at(ATTENTION_FREE_HEAD_SIZE_ZERO, version):
        if attention_kind(model, version) == "attention_free":
            return 0
    elif version is not None and model.model_type in ZERO_HEAD_SIZE_TYPES:
        return 0
    if model.config_head_dim:
        return model.config_head_dim
    if model.head_dim_zero and version is not None and at(ZERO_HEAD_DIM_IS_SIZE, version):
        return 0
    if model.kv_lora_rank and model.qk_rope_head_dim:
        # transformers' DeepSeek-style config classes set head_dim to qk_rope_head_dim where config.json has none
        # (DeepseekV3Config; GLM-5's before vLLM lists it as MLA)
        return model.qk_rope_head_dim
    if model.hidden_size is None:
        return None
    return model.hidden_size // model.num_heads if model.num_heads else 0


def attention_decision(s: Scenario, version: str) -> Decision:

    release = rules_release(version)
    chosen = s.flag(ATTENTION_FLAG)
    value = chosen or attention_backend(s, release, kv_cache_dtype(s, release))

    def gpu(s: Scenario):
        cap = s.capability
        if s.no_gpu:
            return False, "no GPU", "a CUDA GPU with a known capability"
        return (None, "capability unknown", "a known capability") if cap is None else (True, f"{cap[0]}.{cap[1]}", "a known capability")

    def model(s: Scenario):
        m = s.model
        if m is None:
            return None, "no model", "a model config"
        sparse = uses_sparse_mla(m, release)
        kind = ("DeepSeek sparse attention (MLA with index_topk)" if sparse else "MLA" if uses_mla(m, release)
                else "attention sinks" if m.model_type == "gpt_oss" else "standard attention")  # fmt: skip
        if sparse and not chosen and s.capability is not None and value is None:
            cap = s.capability
            return False, f"{m.architecture} ({kind}) on {cap[0]}.{cap[1]}", "a sparse MLA backend for this GPU"
        return True, f"{m.architecture} ({kind})", "a model config"

    hint = attention_choice_hint(release)
    conditions = (
        rules.Condition("gpu", "GPU capability known", gpu,
                  "the priority list depends on the major capability (FlashInfer first on 10.x, FlashAttention elsewhere)",
                  hint),
        rules.Condition("model", "model attention kind", model,
                  "MLA models use the MLA backends (sparse ones, on 9.x, 10.x and 12.x only, with an indexer); sinks"
                  " (gpt-oss) need FlashAttention 3 (SM90) or another backend",
                  hint),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    state = rules.state_of(results, forced_on=chosen is not None)
    source = rules.Source(f"vllm v{release}", PLATFORM_FILE, "_get_backend_priorities, get_attn_backend_cls")
    return rules.decided("attention_backend", "attention backend", state, results, source,
                   value=value if rules.is_enabled(state) else None, notes=_attention_notes(chosen, release))  # fmt: skip


def _attention_notes(chosen: str | None, release: str) -> tuple[str, ...]:
    if not chosen:
        return (f"vLLM's own choice; {attention_choice_hint(release)}",)
    if not at(ATTENTION_FLAG_FROM, release):
        return (f"the value given, but vLLM v{release} rejects {ATTENTION_FLAG} (no such flag): "
                f"set {ATTENTION_ENV}={chosen} in the environment instead",)  # fmt: skip
    return ("the value given",)


NO_BACKEND = "vllm_no_attention_backend"


def attention_problems(s: Scenario, version: str, decision: Decision) -> list[Problem]:
    """vllm_no_attention_backend: no backend of the release supports the model on this GPU (DeepSeek sparse attention
    off 9.x / 10.x / 12.x), so the selector raises at start-up."""
    if not any(c.id == "model" for c in decision.failed):
        return []
    release = rules_release(version)
    cap = s.capability
    unread = unread_mla_attributes(s.model, release, cap[0])
    if unread:
        return [Problem(
            NO_BACKEND, "error",
            f"{s.model.architecture}'s config has no {' / '.join(unread)} (config.json leaves it out and its"
            f" config class {s.model.model_type!r} has no such attribute), which vllm {release}'s sparse MLA backends"
            " read while the selector checks them: vLLM stops at start-up with an AttributeError",
            f"write {' and '.join(unread)} into config.json (the checkpoint's values)",
            f"vllm v{release}, vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py (supports_combination)",
        )]  # fmt: skip
    return [Problem(
        NO_BACKEND, "error",
        f"no attention backend of vllm {release} supports {s.model.architecture} (DeepSeek sparse attention) on "
        f"capability {cap[0]}.{cap[1]}: vLLM stops at start-up ('No valid attention backend found')",
        "run it on Hopper (9.x) or Blackwell (10.x, 12.x from v0.25.1) GPUs",
        f"vllm v{release}, {PLATFORM_FILE} (_get_backend_priorities, get_attn_backend_cls)",
    )]  # fmt: skip
