"""Memory and batch defaults (gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, the KV-cache block), and
how vLLM sizes GPU memory for advisor.layouts and the gpu_memory_in_use check."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Problem, ReleaseError, Scenario, finite_float
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import (
    model_kv_cache_dtype,
    model_max_num_seqs,
    qk_nope_head_dim,
    uses_mla,
    uses_sparse_mla,
)
from advisor.rules.vllm.common import ARG_UTILS_FILE, ATTENTION_FLAG, CACHE_CONFIG_FILE, NEWEST, GiB, MiB, rules_release
from advisor.rules.vllm.hybrid import hybrid_block_size
from advisor.rules.vllm.runner import chunked_prefill_supported
from advisor.rules.vllm.scheduling import switch_setting

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

# CacheConfig.gpu_memory_utilization's default.
GPU_MEMORY_UTILIZATION: list[tuple[str, float]] = [("0.12.0", 0.9), ("0.20.2", 0.92)]
# EngineArgs.get_batch_defaults for `vllm serve` (OPENAI_API_SERVER): (min GiB, A100 excluded, max_num_seqs,
# max_num_batched_tokens) tiers, first match wins; below every tier 256 / 2048.
BATCH_TIERS: list[tuple[str, tuple[tuple[int, bool, int, int], ...]]] = [
    ("0.12.0", ((70, True, 1024, 8192),)),
    ("0.28.0", ((160, False, 1024, 16384), (70, True, 1024, 8192))),
]
SMALL_GPU_BATCH = (256, 2048)


def default_gpu_memory_utilization(version: str | None) -> float:
    """vLLM's default --gpu-memory-utilization for ``version`` (None or not a release: the newest modelled release's)."""
    try:
        release = rules_release(version) if version else NEWEST
    except ReleaseError:
        release = NEWEST
    return at(GPU_MEMORY_UTILIZATION, release)


# -- memory and batch defaults ----------------------------------------------------------------------------------------------

MEMORY_FLAGS = {"gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs",
                "max_num_batched_tokens": "--max-num-batched-tokens", "kv_cache_dtype": "--kv-cache-dtype",
                "block_size": "--block-size", "max_model_len": "--max-model-len"}  # fmt: skip


def batch_defaults(s: Scenario, version: str) -> tuple[int, int] | None:
    """(max_num_seqs, max_num_batched_tokens) of get_batch_defaults for `vllm serve`; None when the GPU is unknown."""
    gpu = s.gpu
    if gpu is None or gpu.memory_total_mib is None:
        return None
    gib = gpu.memory_total_mib * MiB / GiB
    name = (gpu.name or "").lower()
    for min_gib, no_a100, seqs, tokens in at(BATCH_TIERS, version):
        if gib >= min_gib and not (no_a100 and "a100" in name):
            return seqs, tokens
    return SMALL_GPU_BATCH


def memory_value(s: Scenario, version: str) -> dict[str, object]:
    release = rules_release(version)
    batch = batch_defaults(s, release)
    seqs, tokens = batch if batch else (None, None)
    given = {key: s.flag(flag) for key, flag in MEMORY_FLAGS.items()}
    if given["max_num_seqs"]:
        seqs = _number(given["max_num_seqs"], int, seqs)
    if given["max_num_batched_tokens"]:
        tokens = _number(given["max_num_batched_tokens"], int, tokens)
    elif seqs is not None and tokens is not None:
        tokens = max(tokens, 0)
    if seqs is not None and tokens is not None and not given["max_num_seqs"]:
        seqs = min(seqs, tokens)
    seqs = model_max_num_seqs(s.model, release, seqs)
    length = _number(given["max_model_len"], int, derived_max_model_len(s.model, release))
    if tokens is not None and length and not given["max_num_batched_tokens"]:
        # EngineArgs._set_default_max_num_batched_tokens: without chunked prefill one batch must hold a whole prompt;
        # and a default never exceeds max_num_seqs x max_model_len.
        if not chunked_prefill_on(s, release):
            tokens = max(tokens, length)
        if seqs:
            tokens = min(tokens, seqs * length)
    kv_dtype = kv_cache_dtype(s, release)  # the block size of a hybrid model depends on it too
    block = mla_block_size(s, release, _number(given["block_size"], block_size, 16))
    return {
        "gpu_memory_utilization": _number(
            given["gpu_memory_utilization"], utilization, at(GPU_MEMORY_UTILIZATION, release)
        ),
        "max_num_seqs": seqs,
        "max_num_batched_tokens": tokens,
        "kv_cache_dtype": kv_dtype,
        "block_size": hybrid_block_size(s, release, block, kv_dtype),
        "max_model_len": length,
    }


# MLA models: up to v0.17.x CudaPlatform.check_and_update_config (vllm/platforms/cuda.py) forces the KV-cache block size
# of the MLA backend it expects. v0.12.0: CUTLASS MLA (128) on capability 10.0 only, FlashMLA (64) on SM90. v0.15.1:
# FlashInfer MLA (64, 32 kept) on SM100 when qk_nope_head_dim is 128, else CUTLASS MLA (128); FlashMLA (64) on SM90;
# v0.16.0 and v0.17.1 the same. DeepSeek sparse attention (index_topk): 64 on every GPU, after the rest (v0.17.1: 32 or
# 64 kept when FLASHINFER_MLA_SPARSE is chosen). v0.19.1 forces nothing (the block size stays 16); the v0.18 releases were not read.
MLA_BLOCK_RULE: list[tuple[str, str | None]] = [("0.12.0", "0.12"), ("0.15.1", "0.15"), ("0.19.1", None)]
MLA_NOPE_FOR_FLASHINFER = 128  # FlashInfer MLA's kernel constraint on qk_nope_head_dim (v0.15.1)


def chunked_prefill_on(s: Scenario, version: str) -> bool:
    """Whether chunked prefill ends up on: the model supports it (runner.chunked_prefill_supported), unless a flag says."""
    setting = switch_setting(s, "--enable-chunked-prefill")
    return chunked_prefill_supported(s.model, version) if setting is None else setting


# What ModelConfig assumes when the config states no context length (vllm/config/model.py _get_and_verify_max_len).
DEFAULT_MAX_MODEL_LEN = 2048


# _get_and_verify_max_len (vllm/config/model.py) multiplies the derived length by the RoPE dicts' factor, except for these
# types (v0.12.0-v0.29.x: yarn takes original_max_position_embeddings x factor instead; from v0.30.0 the YaRN variants
# keep max_position_embeddings, "already scaled") and for a model_type containing "gemma3" (already scaled).
UNSCALED_ROPE_TYPES: list[tuple[str, frozenset[str]]] = [
    ("0.12.0", frozenset({"su", "longrope", "llama3"})),
    ("0.30.0", frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})),
]


def _config_length(model) -> int:
    lengths = dict(model.context_lengths)
    if "model_max_length" in lengths:
        return lengths["model_max_length"]
    if lengths:
        return min(lengths.values())
    return model.max_position_embeddings or DEFAULT_MAX_MODEL_LEN


def _ropes(model) -> list:
    # vLLM reads rope_parameters, but patch_rope_parameters first moves a legacy rope_scaling there: rope_scaling wins
    return [r for r in model.rope if r.key == "rope_scaling"] or [r for r in model.rope if r.key == "rope_parameters"]


def scaled_max_model_len(model, version: str = NEWEST) -> int:
    """The length _get_and_verify_max_len holds a given --max-model-len against: the config's length
    (ModelArchConfigConvertor.derived_max_model_len_and_key, vllm/transformers_utils/model_arch_config_convertor.py;
    vllm/config/model.py v0.12.0), scaled by the RoPE factor (UNSCALED_ROPE_TYPES)."""
    length: float = _config_length(model)
    ropes = _ropes(model)
    model_type = model.text_model_type or model.model_type or ""
    if ropes and "gemma3" not in model_type:
        unscaled = at(UNSCALED_ROPE_TYPES, rules_release(version)) or UNSCALED_ROPE_TYPES[-1][1]
        factor = 1.0
        for rope in ropes:
            kind = rope.type or "default"
            if kind not in unscaled:
                factor = rope.factor if rope.factor is not None else factor
                if kind == "yarn" and rope.original_max_position_embeddings is not None:
                    length = rope.original_max_position_embeddings  # up to v0.29.x only: later yarn is unscaled
        length *= factor
    return int(length)


def derived_max_model_len(model, version: str = NEWEST) -> int | None:
    """max_model_len as vLLM derives it without --max-model-len: scaled_max_model_len, 2048 when the config sets no
    context-length key (Mamba's configs), and for a longrope model the top-level original_max_position_embeddings."""
    if model is None:
        return None
    length = scaled_max_model_len(model, version)
    if any((r.type or "") == "longrope" for r in _ropes(model)):
        return int(model.original_max_position_embeddings or length)
    return length


LONG_MAX_MODEL_LEN_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"  # vllm/envs.py: "1" or "true" (stripped, any case)
MAX_MODEL_LEN_ID = "vllm_max_model_len_too_long"


def max_model_len_problems(s: Scenario, version: str) -> list[Problem]:
    """A --max-model-len above what the config allows: _get_and_verify_max_len (vllm/config/model.py, every modelled
    release) raises ValueError unless the config's model_max_length admits it or VLLM_ALLOW_LONG_MAX_MODEL_LEN is set.
    With no context-length key in the config vLLM takes the given length as it is; --disable-sliding-window lowers the
    bound to the sliding window; -1 asks vLLM to fit the length to memory."""
    given = _number(s.flag(MEMORY_FLAGS["max_model_len"]), int, None)
    model = s.model
    if given is None or given <= 0 or model is None or not model.context_lengths:
        return []
    bound = scaled_max_model_len(model, version)
    if s.has("--disable-sliding-window") and model.sliding_window and model.sliding_window < bound:
        bound = model.sliding_window
    model_max_length = dict(model.context_lengths).get("model_max_length")
    allowed = str(s.facts.environment.get(LONG_MAX_MODEL_LEN_ENV, "0")).strip().lower() in ("1", "true")
    if given <= bound or (model_max_length is not None and given <= model_max_length) or allowed:
        return []
    return [Problem(
        MAX_MODEL_LEN_ID, "error",
        f"--max-model-len {given} is above the {bound} tokens vllm {version} derives from the model's config (its"
        " context-length keys and RoPE scaling); vLLM refuses it at start-up with a ValueError",
        f"pass --max-model-len {bound} or less (or set {LONG_MAX_MODEL_LEN_ENV}=1 if the model really takes longer"
        " sequences)",
        f"vllm v{version}, vllm/config/model.py (_get_and_verify_max_len)",
    )]  # fmt: skip


def mla_block_size(s: Scenario, version: str, block: int) -> int:
    """The block size after the MLA backend's forcing (``block`` unchanged for other models, GPUs and releases)."""
    rule = at(MLA_BLOCK_RULE, version)
    model, cap = s.model, s.capability
    if rule is None or model is None or not uses_mla(model, version) or cap is None:
        return block
    chosen = s.flag(ATTENTION_FLAG) if rule != "0.12" else None  # v0.12.0 has no --attention-backend
    if uses_sparse_mla(model, version):  # the sparse backends' block, forced last ("Forcing ... for FlashMLASparse")
        return block if chosen == "FLASHINFER_MLA_SPARSE" and block in (32, 64) else 64
    if chosen:  # the backend given forces its own block size (only these three)
        if chosen == "FLASHINFER_MLA":
            return block if block == 32 or block % 64 == 0 else 64
        if chosen == "CUTLASS_MLA":
            return block if block % 128 == 0 else 128
        return block if chosen != "FLASHMLA" or cap[0] != 9 or block % 64 == 0 else 64
    # v0.12 tests for capability 10.0 exactly (is_device_capability(100)), v0.15 for the family (10.x)
    if (rule == "0.12" and tuple(cap) == (10, 0)) or (rule == "0.15" and cap[0] == 10):
        # the text config's qk_nope_head_dim, not head_dim less the rotary part: transformers' DeepSeek V2/V3 and
        # LongCat config classes set head_dim to qk_rope_head_dim (64), qk_nope_head_dim stays 128
        if rule == "0.15" and qk_nope_head_dim(model) == MLA_NOPE_FOR_FLASHINFER:
            return block if block == 32 or block % 64 == 0 else 64
        return block if block % 128 == 0 else 128
    if cap[0] == 9:  # FlashMLA (dense) runs on Hopper only
        return block if block % 64 == 0 else 64
    return block


def utilization(raw: str) -> float:
    """--gpu-memory-utilization as the release takes it: a float (argparse) that CacheConfig's Field(gt=0, le=1)
    validates (vllm/config/cache.py, every modelled release); ValueError for what it refuses (nan and inf too)."""
    value = finite_float(raw)
    if not 0 < value <= 1:
        raise ValueError(f"{raw!r} is not above 0 and at most 1")
    return value


def block_size(raw: str) -> int:
    """--block-size as a whole number above 0 (v0.12.0's choices 1 ... 256, v0.33.0's Field(gt=0), vllm/config/cache.py;
    every KV-cache size divides by it); ValueError for 0 or less."""
    value = int(raw)
    if value <= 0:
        raise ValueError(f"{raw!r} is not above 0")
    return value


# From v0.14.1 EngineArgs.create_engine_config resolves an "auto" KV-cache dtype from a ModelOpt checkpoint's
# quantization_config (resolve_kv_cache_dtype_string, get_kv_cache_quant_algo_string in vllm/utils/torch_utils.py): its
# kv_cache_scheme / kv_cache_quant_algo through MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP, "auto" for a value the map lacks.
# v0.12.0 has no such step; v0.20.2 adds nvfp4 (v0.14.1 to v0.19.1 map fp8 only).
MODELOPT_KV_CACHE_DTYPES: list[tuple[str, dict[str, str] | None]] = [
    ("0.12.0", None), ("0.14.1", {"fp8": "fp8_e4m3"}), ("0.20.2", {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"})]  # fmt: skip


def modelopt_kv_cache_dtype(model, version: str) -> str | None:
    """The KV-cache dtype a ModelOpt checkpoint's quantization_config sets in place of auto; None: it sets none."""
    table = at(MODELOPT_KV_CACHE_DTYPES, version)
    if table is None or model is None or model.modelopt_kv_cache is None:
        return None
    return table.get(model.modelopt_kv_cache, "auto")


def kv_cache_dtype(s: Scenario, version: str) -> str:
    """--kv-cache-dtype, or in place of auto the dtype a ModelOpt checkpoint states, else the one the model's config
    fix-up sets (GLM-5 on SM10x, v0.33.0, which runs later and sees the resolved value)."""
    given = s.flag(MEMORY_FLAGS["kv_cache_dtype"]) or "auto"
    if given != "auto" or s.no_gpu:
        return given
    given = modelopt_kv_cache_dtype(s.model, version) or given
    if given != "auto":
        return given
    return model_kv_cache_dtype(s.model, s.capability, version) or given


def _number(raw: str | None, kind, default):
    try:
        return kind(raw) if raw else default
    except ValueError:
        return default


def memory_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    value = memory_value(s, release)

    def gpu(s: Scenario):
        g = s.gpu
        if s.no_gpu:
            return False, "no GPU", "GPU name and memory known"
        if g is None or g.memory_total_mib is None:
            return None, "unknown", "GPU name and memory known"
        return True, f"{g.name}, {g.memory_total_mib * MiB / GiB:.1f} GiB", "GPU name and memory known"

    conditions = (
        rules.Condition("gpu_memory", "GPU name and memory", gpu,
                  "vLLM sizes max_num_seqs and max_num_batched_tokens by GPU memory (A100 excluded from the large tier)",
                  "pass --max-num-seqs / --max-num-batched-tokens / --gpu-memory-utilization to choose"),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    forced = any(s.flag(flag) for flag in MEMORY_FLAGS.values())
    state = rules.state_of(results, forced_on=forced)
    tiers = ", ".join(f">= {g} GiB{' (not A100)' if no else ''}: {q} seqs / {t} tokens" for g, no, q, t in at(BATCH_TIERS, release))
    notes = [f"`vllm serve` tiers: {tiers}; else {SMALL_GPU_BATCH[0]} / {SMALL_GPU_BATCH[1]}",
             "max_num_batched_tokens is also capped at max_num_seqs x max_model_len"]  # fmt: skip
    source = rules.Source(f"vllm v{release}", ARG_UTILS_FILE, f"get_batch_defaults; gpu_memory_utilization in {CACHE_CONFIG_FILE}")
    return rules.decided("memory_defaults", "memory and batch defaults", state, results, source, value=value, notes=notes)


def memory_need(fraction: float | None, total: float, weights: float) -> float:
    """vLLM asks for gpu_memory_utilization x the total at start-up, as if the GPU were empty."""
    return fraction * total  # type: ignore[operator]  # vLLM always has a fraction (its default)


def memory_short(setting: str, need_gib: float) -> str:
    return (f"{setting} asks for {need_gib:.1f} GiB per GPU as if the GPU were empty, so vLLM refuses to start"
            " ('Free memory on device ... on startup is less than desired GPU memory utilization')")


GPU_MEMORY = rules.GpuMemory(
    fraction="gpu_memory_utilization",
    default=default_gpu_memory_utilization,
    need=memory_need,
    short=memory_short,
    automatic="vLLM's default gpu_memory_utilization",
    source="vllm vllm/v1/worker/gpu_worker.py ('Free memory on device ... on startup is less than desired GPU memory"
           " utilization'); vllm/config/cache.py gpu_memory_utilization = 0.9",
    kv_block=16,  # vLLM's default KV-cache block (tokens) on CUDA
    refuses_short_context="vLLM refuses to start",
)  # fmt: skip
# Caveat of the layouts' KV arithmetic.
KV_NOTES = ("vLLM also subtracts the activation peak and non-torch memory measured at start-up: the KV tokens are an"
            " upper bound",)  # fmt: skip
