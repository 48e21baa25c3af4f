"""ModelSpec: the facts about a model that the rules need, read from config.json.

A model reference resolves, in order, to
1. a local directory holding config.json,
2. a model id found offline in the Hugging Face cache (``models--org--name/snapshots/<rev>/config.json``),
3. an entry of the bundled catalog (advisor/catalog/*.json: the real config.json facts of popular models, plus "demo",
   the bundled runtime's demo model),
else a one-line ModelError naming the fix. Nothing here touches the network or imports transformers.

Vision-language models (Qwen3-VL-MoE, Kimi-K2.5) keep their text settings under ``text_config``; ``architectures[0]`` of the
top level is what SGLang compares against its lists.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from advisor.json_errors import why_unreadable
from launcher.files import read_text

# The one config.json-adjacent file read from the HF cache: refs/main holds a 40-character commit hash.
REF_FILE_LIMIT = 4096
CATALOG_DIR = os.path.join(os.path.dirname(__file__), "catalog")
DEMO_ID = "demo"

# Bytes per element of the dtypes config.json names.
DTYPE_BYTES = {
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float32": 4, "fp32": 4, "float": 4, "float8": 1, "fp8": 1, "float8_e4m3fn": 1,
}  # fmt: skip


def dtype_bytes(dtype: str | None) -> int | None:
    """Bytes per element of a dtype name as configs and flags spell it ("bfloat16", "bf16", "torch.float16")."""
    if not dtype:
        return None
    return DTYPE_BYTES.get(dtype.lower().removeprefix("torch."))


def weight_bytes_per_param(dtype: str | None, quantization: str | None, weight_bits: float | None = None) -> float | None:
    """Bytes per parameter of the checkpoint as loaded (quantized formats: an estimate including scales).

    ``weight_bits``: the bits per quantized weight, scales included, as config.json's quantization_config states them
    (:func:`quantized_weight_bits`, kept on the ModelSpec); it wins over the per-method estimate. Without it a
    compressed-tensors checkpoint is unknown (its config_groups say whether it is INT4, INT8 or FP8)."""
    if weight_bits:
        return weight_bits / 8
    quant = (quantization or "").lower()
    if quant:
        if "fp4" in quant or quant in ("awq", "gptq", "w4a16", "int4", "awq_marlin", "gptq_marlin", "bitsandbytes"):
            return 0.5625
        if "fp8" in quant or quant in ("int8", "w8a8", "w8a8_int8", "w8a8_fp8", "modelopt", "fbgemm_fp8"):
            return 1.0
        return None
    return dtype_bytes(dtype)


# compressed-tensors checkpoints without config_groups: the bits their format names (compressed_tensors CompressionFormat;
# the packed formats are 4-bit). Scales are added per group where config_groups give the group size.
COMPRESSED_FORMAT_BITS = {
    "pack-quantized": 4.5,  # INT4 packed eight to an int32, plus a bf16 scale per group of 32
    "nvfp4-pack-quantized": 4.5,  # FP4 plus an FP8 scale per 16
    "mxfp4-pack-quantized": 4.25,  # FP4 plus an E8M0 scale per 32
    "float-quantized": 8.0, "int-quantized": 8.0, "naive-quantized": 8.0,
}  # fmt: skip
SCALE_BITS = {"int": 16, "float": 8}  # a group's scale: bf16 for integer weights, FP8 for FP4 (NVFP4) weights


def quantized_weight_bits(qc: Any) -> float | None:
    """Bits per quantized weight, scales included, from config.json's ``quantization_config``; None when it does not say.

    compressed-tensors: the widest ``config_groups.*.weights`` (num_bits + scale bits / group_size for group
    strategies), else the ``format``; fp8: 8 bits plus one fp32 scale per ``weight_block_size`` block (or per tensor);
    mxfp4: 4 bits plus an 8-bit scale per 32; NVFP4 (modelopt FP4): 4 bits plus an FP8 scale per 16."""
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method") or "").lower()
    if method == "compressed-tensors":
        widths = []
        groups = qc.get("config_groups")
        for group in (groups.values() if isinstance(groups, Mapping) else ()):
            weights = group.get("weights") if isinstance(group, Mapping) else None
            bits = _int(weights.get("num_bits")) if isinstance(weights, Mapping) else None
            if not bits or not 0 < bits <= 64:  # a negative width made negative weights (hostile round 3)
                continue
            size = max(_int(weights.get("group_size")) or 0, 0)
            scale = SCALE_BITS.get(str(weights.get("type") or "int"), 16) / size if size else 0.0
            widths.append(bits + scale)
        if widths:
            return max(widths)
        return COMPRESSED_FORMAT_BITS.get(str(qc.get("format") or ""))
    if method == "fp8":
        block = qc.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all((_int(b) or 0) > 0 for b in block):
            return 8 + 32 / (block[0] * block[1])
        return 8.0
    if method == "mxfp4":
        return 4.25
    if method == "modelopt" and "FP4" in str(qc.get("quant_algo") or "").upper():
        return 4.5
    return None


class ModelError(Exception):
    """A model could not be resolved; the message is one line naming the problem and the fix."""


@dataclass(frozen=True, slots=True)
class Rope:
    """One RoPE scaling dict of config.json as written: rope_scaling or rope_parameters (``key``), whole or one layer
    type's entry of a nested one (``layer``). The engines multiply the context length by ``factor`` for some types."""

    key: str  # "rope_scaling" or "rope_parameters"
    layer: str | None  # the layer type of a nested dict ({"full_attention": {...}, ...}); None for a flat one
    type: str | None  # rope_type, else type, as written
    factor: float | None
    original_max_position_embeddings: int | None
    has_original: bool  # the dict holds original_max_position_embeddings (SGLang then applies no factor)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str  # what the user asked for: "Qwen/Qwen3-30B-A3B" or a directory
    architecture: str  # architectures[0]
    model_type: str | None = None
    hidden_size: int | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    num_experts: int | None = None
    experts_per_token: int | None = None
    moe_intermediate_size: int | None = None
    vocab_size: int | None = None
    dtype: str | None = None  # "bfloat16"
    quantization: str | None = None  # "fp8", "modelopt_fp4", "mxfp4", ...
    # Bits per quantized weight, scales included, from quantization_config (quantized_weight_bits); None: not stated.
    weight_bits: float | None = None
    num_params: int | None = None  # total parameters, for memory estimates (catalog value or computed)
    path: str | None = None  # the directory config.json came from, when local
    origin: str = "catalog"  # "directory" | "hf-cache" | "catalog"
    kv_lora_rank: int | None = None  # set for MLA models (DeepSeek family)
    # vLLM's MLA check (is_deepseek_mla) reads the text config's model_type (text_config's, else the top level's) and,
    # for DeepSeek V4's compressed attention, whether the config has compress_ratios.
    text_model_type: str | None = None
    compress_ratios: bool = False
    # The Mamba / gated-delta-net state keys as written (STATE_KEYS, CHUNK_KEYS), for the state vLLM sizes per sequence.
    state_config: tuple[tuple[str, int | str], ...] = ()
    # vision_config of multimodal models: (num_hidden_layers, hidden_size) as written (None where absent); None: no vision
    vision: tuple[int | None, int | None] | None = None
    notes: str | None = None  # catalog remarks (e.g. which facts are assumed)
    # For KV-cache sizing (advisor/layouts.py):
    max_position_embeddings: int | None = None  # the model's context length
    qk_rope_head_dim: int | None = None  # MLA: the rotary part of a key, cached next to the latent
    qk_nope_head_dim: int | None = None  # MLA: a key head's non-rotary part, as written (vLLM's MLA checks read it)
    v_head_dim: int | None = None  # MLA: value head width (others: head_dim)
    q_lora_rank: int | None = None  # MLA: the query's low-rank width (None: full-rank query projection)
    full_attention_interval: int | None = None  # hybrid linear-attention models (Qwen3-Next): every Nth layer has a KV cache
    sliding_window: int | None = None  # models with sliding-window layers (gpt-oss)
    index_topk: int | None = None  # DeepSeek sparse attention's indexer (V3.2, GLM-5), text_config's over the top level's
    # the config's top level sets index_topk (True), sets it to null (False), leaves it out (None: the config class's
    # default then decides); SGLang's DSA check reads only the top level (is_deepseek_dsa(hf_config))
    top_level_index_topk: bool | None = None
    # What an engine reads from the config beyond the shapes (issue 31: rules keyed on the config, not the name). Each is
    # the (text_config's, else the top level's) key as written; None / False / () where the config does not set it.
    config_head_dim: int | None = None  # head_dim as written (head_dim above is derived when the config lacks it)
    head_dim_zero: bool = False  # head_dim written as 0 (a config class's placeholder; config_head_dim is then None)
    swa_head_dim: int | None = None  # sliding-window layers' K / V widths where they differ from head_dim (MiMo V2)
    swa_v_head_dim: int | None = None
    # learned attention sinks declared by the config (SGLang from v0.5.20); None: config.json leaves the key out (the
    # config class's default then decides: advisor/rules/sglang/config_defaults.json)
    learnable_sink: bool | None = None
    hybrid_swa: bool = False  # is_hybrid_swa: true, a custom hybrid sliding-window model's opt-in (SGLang from v0.5.13)
    use_mla: bool | None = None  # DeepSeek-VL2's switch between MLA and MHA (absent: MLA)
    layer_types: tuple[str, ...] = ()  # per-layer attention kinds ("full_attention", "sliding_attention", ...)
    # the keys of NULL_KEYS the language model's config writes as null (text_config's over the top level's): a config
    # class whose field type does not admit null refuses them at load (vLLM: rules/vllm/config_validation.py)
    null_keys: tuple[str, ...] = ()
    # the model keeps its language model in a sub-config (text_config, llm_config, language_config, thinker_config: the
    # ones SGLang's get_hf_text_config unwraps), as multimodal wrappers do
    has_text_config: bool = False
    # which of those holds it ("text_config", or one of SUB_CONFIGS, whose sizes the fields above do not read); None: none
    language_config: str | None = None
    # the config sets sliding_window_pattern (EXAONE 4's interleaved sliding layers): True to a value, False to null,
    # None: it leaves the key out (the config class's default then decides)
    sliding_window_pattern: bool | None = None
    # Kimi delta attention layers: linear_attn_config.kda_layers, or linear_attention layers with linear_num_heads and
    # linear_head_dim (SGLang's uses_kda_attention, v0.5.20+)
    kda_attention: bool = False
    # Every context-length key of CONTEXT_LENGTH_KEYS the language model's config sets, as written (text_config's, or
    # thinker_config.text_config's for an omni model, over the top level's): vLLM derives max_model_len from them.
    context_lengths: tuple[tuple[str, int], ...] = ()
    # A ModelOpt checkpoint's KV-cache quantization as the top-level quantization_config states it (kv_cache_scheme or
    # kv_cache_quant_algo, lowercased; an object as "fp8" / "nvfp4" / "other" by its num_bits, type and dynamic):
    # vLLM's "auto" KV-cache dtype follows it (rules/vllm/memory.py).
    modelopt_kv_cache: str | None = None
    is_encoder_decoder: bool = False  # the config (or its text_config) sets is_encoder_decoder: true (Whisper)
    # quantization_config.quant_method as written, lower-cased (the engines' _verify_quantization read it so); the
    # ``quantization`` above names ModelOpt checkpoints by their algorithm
    quant_method: str | None = None
    # quantization_config's scalar entries as written (bits, group_size, sym, desc_act, checkpoint_format, ...): what the
    # engines' detection steps read (SGLang's GPTQ-to-Marlin check)
    quant_config: tuple[tuple[str, Any], ...] = ()
    # The language model's RoPE scaling dicts (text_config's over the top level's), and its top-level
    # original_max_position_embeddings: SGLang's get_context_length and vLLM's _get_and_verify_max_len scale by them.
    rope: tuple[Rope, ...] = ()
    original_max_position_embeddings: int | None = None
    # use_bidirectional_attention as written, truthy (EmbeddingGemma: SGLang's is_embedding_gemma reads it with getattr)
    bidirectional_attention: bool = False
    # the class names of config.json's architectures list, in order (empty: a catalog entry). SGLang's
    # decisions key on architectures[0]; vLLM runs the first entry its registry serves (rules/vllm/architectures.py).
    architectures: tuple[str, ...] = ()
    # The keys of CLASS_FILLED_KEYS the language model's config leaves out (text_config's and the top level's together):
    # the config class an engine builds it with fills them with its own defaults (vLLM: rules/vllm/hf_config.py).
    unwritten: tuple[str, ...] = ()
    # DeepSeek V4 as transformers' DeepseekV4Config writes it: compress_rates (per layer type) with layer_types or MTP
    # layers, from which vLLM derives the per-layer compress ratios (get_compress_ratios, deepseek_v4_utils.py v0.33.0)
    compress_rates: bool = False
    # the top-level keys config.json sets to a non-empty object (text_config, vision_config, vlm_config, ...), in order:
    # which sub-configs an engine's config class is handed
    config_objects: tuple[str, ...] = ()
    # global_head_dim as written: the full-attention layers' head width where it differs from head_dim (Gemma 4)
    global_head_dim: int | None = None
    # the language model's config one level down (thinker_config.text_config, vlm_config.text_config) as written, its
    # scalars and per-layer / RoPE keys: the fields above do not read it (vLLM's view does: rules/vllm/hf_config.py)
    nested_text: tuple[tuple[str, Any], ...] = ()
    # the keys of CONFIG_READ_KEYS config.json writes at its top level (an engine's config class may refuse some)
    top_level_keys: tuple[str, ...] = ()
    # config.json's auto_map names an AutoConfig: the checkpoint's own config class, which transformers' AutoConfig
    # runs only with trust_remote_code, and must run where it does not know the model_type
    remote_config: bool = False
    # config.json's transformers_version: the transformers that wrote it (its layout: a text_config, rope_parameters)
    written_by: str | None = None

    @property
    def architecture_entries(self) -> tuple[str, ...]:
        """config.json's architectures in order; the architecture alone where the list is not known (a catalog entry) or
        is not this spec's (a spec copied with another architecture)."""
        return self.architectures if self.architectures[:1] == (self.architecture,) else (self.architecture,)

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts and self.num_experts > 1)

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def dtype_bytes(self) -> int | None:
        return dtype_bytes(self.dtype)

    def bytes_per_param(self, dtype: str | None = None) -> float | None:
        """Bytes per parameter of its weights as loaded in ``dtype`` (default: its own); None when unknown."""
        return weight_bytes_per_param(dtype or self.dtype, self.quantization, self.weight_bits)


# -- config.json -> ModelSpec ----------------------------------------------------------------------------------------


def _first(config: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = config.get(key)
        if value is not None:
            return value
    return None


def _name(config: Mapping[str, Any], where: str, key: str) -> str | None:
    """A name-valued key (model_type) as written: a string, or None when absent. Anything else is refused: transformers'
    AutoConfig looks it up in its model table and stops (a list is unhashable, a number is no model type)."""
    value = config.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ModelError(f'{where}: {key} is {_shown(value)}, not a name; write it as a string, e.g. "{key}": "llama"')


def _shown(value: Any) -> str:
    """A config value as JSON writes it, cut to 40 characters, for an error message."""
    shown = json.dumps(value, allow_nan=True, default=str)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _quantization(config: Mapping[str, Any]) -> str | None:
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = qc.get("quant_method")
    if not isinstance(method, str):
        return None
    method = method.lower()
    if method == "modelopt":
        algo = str(qc.get("quant_algo") or "").upper()
        return "modelopt_fp4" if "FP4" in algo else "modelopt_fp8" if "FP8" in algo else "modelopt"
    return method


def _quant_method(config: Mapping[str, Any]) -> str | None:
    qc = config.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, Mapping) else None
    return method.lower() if isinstance(method, str) else None


def _quant_config(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return ()
    return tuple((str(k), v) for k, v in qc.items() if v is None or isinstance(v, (str, int, float, bool)))


def _check_quantization(config: Mapping[str, Any], where: str) -> None:
    """Refuse a quantization_config neither engine can read: not an object (SGLang's _parse_quant_hf_config calls
    .to_dict() on it, vLLM indexes it by "quant_method"), or a quant_method that is not a name (both lower() it)."""
    qc = config.get("quantization_config")
    if qc is None:
        return
    if not isinstance(qc, Mapping):
        raise ModelError(f"{where}: quantization_config is {_shown(qc)}, not an object; write it as"
                         ' {"quant_method": "fp8", ...} or remove it for an unquantized checkpoint')  # fmt: skip
    if "quant_method" in qc and not isinstance(qc["quant_method"], str):
        raise ModelError(f"{where}: quantization_config.quant_method is {_shown(qc['quant_method'])}, not a name;"
                         ' write it as a string, e.g. "quant_method": "fp8"')  # fmt: skip


def _check_rope_scaling(config: Mapping[str, Any], where: str) -> None:
    """Refuse a rope_scaling neither engine can read: not an object (SGLang's get_context_length calls .get on it), or
    a factor that is not a positive finite number (both multiply the context length by it and take int(): NaN,
    Infinity or a string stop them)."""
    for key in ("rope_scaling", "rope_parameters"):
        rope = config.get(key)
        if rope is None:
            continue
        if not isinstance(rope, Mapping):
            raise ModelError(f"{where}: {key} is {_shown(rope)}, not an object; write it as"
                             ' {"rope_type": "yarn", "factor": 4.0, ...} or remove it')  # fmt: skip
        factor = rope.get("factor")
        number = isinstance(factor, (int, float)) and not isinstance(factor, bool)
        if factor is not None and not (number and math.isfinite(factor) and factor > 0):
            raise ModelError(f"{where}: {key}.factor is {_shown(factor)}, not a positive number; write the scaling"
                             ' factor, e.g. "factor": 4.0')  # fmt: skip


SUB_CONFIGS = ("llm_config", "language_config", "thinker_config")  # beyond text_config
# Keys a config class gives a default when config.json leaves them out, which an engine's checks then read (the MLA
# ranks, the sparse indexer's index_topk, the context length): ModelSpec.unwritten lists those a config leaves out.
CLASS_FILLED_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "index_topk",
                     "max_position_embeddings", "head_dim")  # fmt: skip
# Size keys a config.json may write as null, which some config classes refuse (ModelSpec.null_keys)
NULL_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "index_topk", "head_dim",
             "sliding_window", "num_key_value_heads", "max_position_embeddings", "num_experts", "n_routed_experts",
             "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "intermediate_size")  # fmt: skip
MAX_ARCHITECTURE_NAME = 200  # the longest class names in the engines' registries are under 60 characters
# The keys a config states its context length under (vLLM's ModelArchConfigConvertor.derived_max_model_len_and_key
# reads these, vllm/transformers_utils/model_arch_config_convertor.py v0.33.0).
CONTEXT_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                       "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip


NESTED_TEXT_WRAPPERS = ("thinker_config", "vlm_config")
# What ModelSpec.nested_text keeps of a nested text config beside its scalars: the per-layer and RoPE keys.
NESTED_TEXT_OBJECTS = ("layer_types", "rope_scaling", "rope_parameters")


def _inner_text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """An omni model's thinker_config and a retrieval model's vlm_config hold the language model's config one level
    down: that text_config ({} where there is none)."""
    for outer in NESTED_TEXT_WRAPPERS:
        wrapper = config.get(outer)
        if isinstance(wrapper, Mapping) and isinstance(wrapper.get("text_config"), Mapping):
            return wrapper["text_config"]
    return {}


def _nested_text(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    inner = _inner_text(config)
    return tuple((str(k), v) for k, v in inner.items()
                 if v is None or isinstance(v, (bool, int, float, str)) or k in NESTED_TEXT_OBJECTS)  # fmt: skip


def _context_lengths(config: Mapping[str, Any], text: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    part = {**config, **text, **_inner_text(config)}
    return tuple((k, part[k]) for k in CONTEXT_LENGTH_KEYS if _int(part.get(k)) is not None and part[k] > 0)


def _rope_entry(key: str, layer: str | None, rope: Mapping[str, Any]) -> Rope:
    kind = rope.get("rope_type", rope.get("type"))
    factor = rope.get("factor")
    number = isinstance(factor, (int, float)) and not isinstance(factor, bool)
    return Rope(key, layer, kind if isinstance(kind, str) else None, float(factor) if number else None,
                _int(rope.get("original_max_position_embeddings")), "original_max_position_embeddings" in rope)  # fmt: skip


def _rope(config: Mapping[str, Any], text: Mapping[str, Any]) -> tuple[Rope, ...]:
    """The RoPE scaling dicts the language model's config writes (text_config's where it has one, else the top level's);
    a nested dict (one entry per layer type) gives one Rope per entry."""
    found: list[Rope] = []
    for key in ("rope_scaling", "rope_parameters"):
        rope = text.get(key) if isinstance(text.get(key), Mapping) else config.get(key)
        if not isinstance(rope, Mapping) or not rope:
            continue
        nested = [(k, v) for k, v in rope.items() if isinstance(v, Mapping)]
        if nested and len(nested) == len(rope):
            found += [_rope_entry(key, layer, entry) for layer, entry in nested]
        else:
            found.append(_rope_entry(key, None, rope))
    return tuple(found)


def _modelopt_kv_cache(config: Mapping[str, Any]) -> str | None:
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or not str(qc.get("quant_method") or "").startswith("modelopt"):
        return None
    inner = qc.get("quantization", qc)
    inner = inner if isinstance(inner, Mapping) else qc
    algo = (inner.get("kv_cache_scheme") or qc.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
            or qc.get("kv_cache_quant_algo"))  # fmt: skip
    if isinstance(algo, Mapping):
        if algo.get("dynamic") is False and algo.get("num_bits") == 8 and algo.get("type") == "float":
            return "fp8"
        return "nvfp4" if algo.get("num_bits") == 4 and algo.get("type") == "float" else "other"
    return algo.lower() if isinstance(algo, str) else None


def _set_not_null(config: Mapping[str, Any], key: str) -> bool | None:
    """Whether config.json sets ``key`` to a value (True) or to null (False); None where it leaves the key out."""
    return (config[key] is not None) if key in config else None


def _kda_attention(config: Mapping[str, Any]) -> bool:
    linear = config.get("linear_attn_config")
    if isinstance(linear, Mapping) and linear.get("kda_layers"):
        return True
    return ("linear_attention" in _layer_types(config.get("layer_types"))
            and config.get("linear_num_heads") is not None and config.get("linear_head_dim") is not None)  # fmt: skip


def _layer_types(value: Any) -> tuple[str, ...]:
    """layer_types as written when it is a list of names; () otherwise."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


def _vision(config: Mapping[str, Any], where: str) -> tuple[int | None, int | None] | None:
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    # Kimi K2.5 spells them vt_*; SGLang's config class exposes them as num_hidden_layers / hidden_size.
    where = f"{where} vision_config"
    return (_size(vision, where, "num_hidden_layers", "vt_num_hidden_layers"),
            _size(vision, where, "hidden_size", "vt_hidden_size"))  # fmt: skip


# Every size a config.json gives must be a whole number from 1 to MAX_MODEL_SIZE: a zero or negative width, or one past
# any real model, makes every memory figure meaningless (negative KV tokens that "fit", float overflow), so such a config
# is refused rather than planned. Zero means "none" in real configs for a few keys (a dense model's expert count, a
# disabled sliding window, a head_dim a config class materializes as 0 where it has none: vLLM's get_head_size then
# derives it, vllm/transformers_utils/model_arch_config_convertor.py v0.33.0).
MAX_MODEL_SIZE = 2**40
ZERO_MEANS_NONE = frozenset({"num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
                             "experts_per_token", "moe_topk", "sliding_window", "head_dim", "qk_rope_head_dim"})  # fmt: skip


# A size written as a string, a boolean or a float (NaN and Infinity included, which Python's json reads) is no size:
# transformers keeps it as written and the engine's shape arithmetic stops on it (hidden_size // num_attention_heads),
# so such a config is refused rather than planned without the figure. Lists and objects are left to the rules: real
# configs write some sizes per layer (Gemma 3n's intermediate_size, ERNIE's moe_intermediate_size). Context lengths are
# read through int() by both engines (SGLang's get_context_length, vLLM's _get_and_verify_max_len), so a whole float
# there is that integer.
WHOLE_FLOAT_READ = frozenset({"max_position_embeddings"})


def _whole(key: str, value: Any, where: str, shown: str) -> Any:
    """``value`` as _size reads it: an int, a whole float where the engines take one, or None for False in a key where
    zero means none; a ModelError naming the key as ``shown`` for any other string, boolean or float."""
    if isinstance(value, float) and key in WHOLE_FLOAT_READ and math.isfinite(value) and value.is_integer():
        return int(value)
    if value is False and key in ZERO_MEANS_NONE:
        return None
    if isinstance(value, (str, bool, float)):
        raise ModelError(
            f"{where}: {shown} is {_shown(value)}, not a whole number; write it as one (e.g. \"{shown}\": 128) or re-download"
            " config.json"
        )
    return value


def _size(config: Mapping[str, Any], where: str, *keys: str, written_as: Mapping[str, str] | None = None) -> int | None:
    """The first of ``keys`` that ``config`` sets to an integer, checked as a size (see MAX_MODEL_SIZE). ``written_as``
    names a key filled from its alias (_unaliased) the way config.json spells it, for the error."""
    for key in keys:
        shown = (written_as or {}).get(key, key)
        value = _int(_whole(key, config.get(key), where, shown))
        if value is None:
            continue
        if value == 0 and key in ZERO_MEANS_NONE:
            return None
        if not 1 <= value <= MAX_MODEL_SIZE:
            figure = value if abs(value) < 10**12 else f"a {len(str(abs(value)))}-digit number"
            raise ModelError(
                f"{where}: {shown} is {figure}, not a size a model can have (1 to 2^40); fix or re-download config.json"
            )
        return value
    return None


# Mamba and gated-delta-net state sizes, as config.json names them: Mamba2 in Nemotron-H's naming, gated delta net (Qwen3-Next,
# Qwen3.5), Mamba1 (Jamba: mamba_d_state / mamba_d_conv / mamba_expand), Mamba2 in Falcon-H1's, Granite 4's and Bamba's
# naming (mamba_n_heads / mamba_d_head / mamba_n_groups, Falcon-H1's mamba_d_ssm) and in Zamba2's (n_mamba_heads /
# mamba_headdim / mamba_ngroups).
STATE_KEYS = ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel", "mamba_ssm_cache_dtype",
              "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
              "linear_conv_kernel_dim", "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_d_ssm", "mamba_n_heads",
              "mamba_d_head", "mamba_n_groups", "n_mamba_heads", "mamba_headdim", "mamba_ngroups")  # fmt: skip
# The Mamba2 kernel's chunk, ModelConfig.get_mamba_chunk_size's keys in its order (vllm/config/model.py): read when
# they are whole numbers, never refused ("chunk_size" is a common name other models use for other things).
CHUNK_KEYS = ("mamba_chunk_size", "chunk_size")
STATE_DTYPE_KEY = "mamba_ssm_cache_dtype"  # the one state key that names a dtype; every other one is a size

# The size keys spec_from_config reads that a transformers config class may spell another way: its `attribute_map`
# (PretrainedConfig.__setattr__ / __getattribute__, configuration_utils.py) sends the canonical name to the alias, so
# GPT-2's `n_head` is its num_attention_heads to every engine that reads the config through transformers (vLLM's
# ParallelConfig tp check, ModelConfig.get_num_attention_heads). The per-model_type table is read from a release's
# transformers by `python -m conformance.vllm.attribute_maps X.Y.Z` (transformers_attribute_maps.json).
ALIASED_KEYS = ("hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "head_dim",
                "intermediate_size", "vocab_size", "max_position_embeddings", "num_experts", "num_local_experts",
                "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank", "q_lora_rank",
                "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "sliding_window")  # fmt: skip
# Every key of the language model's config that spec_from_config reads (conformance/vllm/config_defaults.py reads the
# release's config classes for these).
CONFIG_READ_KEYS = frozenset({*ALIASED_KEYS, *CONTEXT_LENGTH_KEYS, *STATE_KEYS, "model_type", "index_topk",
                              "layer_types", "rope_scaling", "rope_parameters", "compress_ratios", "compress_rates",
                              "num_nextn_predict_layers", "full_attention_interval", "sliding_window_pattern",
                              "experts_per_token", "moe_topk", "learnable_sink", "use_mla", "tie_word_embeddings",
                              "is_encoder_decoder", "swa_head_dim", "swa_v_head_dim", "original_max_position_embeddings",
                              "use_bidirectional_attention", "is_hybrid_swa", "linear_attn_config", "linear_num_heads",
                              "linear_head_dim", "global_head_dim"})  # fmt: skip
KV_HEADS_IN_ATTN_CONFIG = ("dbrx", "mpt")  # model types whose KV head count lives in attn_config
ATTRIBUTE_MAPS_FILE = Path(__file__).with_name("transformers_attribute_maps.json")


@cache
def _attribute_maps() -> dict[str, dict[str, str]]:
    return json.loads(ATTRIBUTE_MAPS_FILE.read_text())["model_types"]


def _aliases_used(config: Mapping[str, Any], model_type: Any) -> dict[str, str]:
    """Each canonical key config's class aliases that config.json lacks, mapped to the alias it is written under."""
    aliases = _attribute_maps().get(model_type, {}) if isinstance(model_type, str) else {}
    return {key: alias for key, alias in aliases.items() if key not in config and alias in config}


def _unaliased(config: Mapping[str, Any], model_type: Any) -> dict[str, Any]:
    """config with each canonical key its class aliases filled from the alias it is written under (a key written under
    its canonical name wins, as transformers' __init__ sets it last)."""
    return {**config, **{key: config[alias] for key, alias in _aliases_used(config, model_type).items()}}


def _state_config(merged: Mapping[str, Any], where: str) -> tuple[tuple[str, int | str], ...]:
    """The state keys the config sets: the sizes checked as every size is (_size: vLLM multiplies them into the state's
    bytes and the attention block size), the SSM cache dtype when it is a name."""
    found: list[tuple[str, int | str]] = []
    for key in STATE_KEYS:
        value = merged.get(key) if key == STATE_DTYPE_KEY else _size(merged, where, key)
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            found.append((key, value))
    for key in CHUNK_KEYS:
        value = merged.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_MODEL_SIZE:
            found.append((key, value))
    return tuple(found)


def _class_name(value: Any) -> bool:
    """Whether an architectures entry can name a model class."""
    return isinstance(value, str) and value.isidentifier() and len(value) <= MAX_ARCHITECTURE_NAME


def spec_from_config(config: Any, *, model_id: str, path: str | None, origin: str, where: str) -> ModelSpec:
    """Build a ModelSpec from a parsed config.json. ``where`` names the file in error messages."""
    if not isinstance(config, Mapping):
        raise ModelError(f"{where}: config.json must hold a JSON object; re-download the model or fix the file")
    archs = config.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise ModelError(
            f"{where}: config.json has no `architectures` list; add e.g. \"architectures\": [\"Qwen3MoeForCausalLM\"]"
        )
    if not _class_name(archs[0]):
        # SGLang and vLLM look the name up as a model class (their registries, then transformers' attribute of that
        # name): an empty name, one with spaces or control characters, or a page of text is no class, and both stop
        raise ModelError(f"{where}: architectures[0] is {_shown(archs[0])}, not a model class name; write the class,"
                         ' e.g. "architectures": ["Qwen3MoeForCausalLM"]')  # fmt: skip
    for key in ("text_config", "vision_config", *SUB_CONFIGS):
        # transformers builds a sub-config from an object; SGLang's and vLLM's get_hf_text_config then read its sizes
        # as attributes, which a list or a string does not have
        if config.get(key) is not None and not isinstance(config[key], Mapping):
            raise ModelError(f"{where}: {key} is {_shown(config[key])}, not an object; write the sub-config as"
                             " {...} or remove it")  # fmt: skip
    text = config.get("text_config")
    text = text if isinstance(text, Mapping) else {}
    _check_quantization(config, where)
    _check_quantization(text, f"{where} text_config")
    _check_rope_scaling(config, where)
    _check_rope_scaling(text, f"{where} text_config")
    # Text settings win when nested (VL models); top-level ones fill what text_config lacks.
    merged: dict[str, Any] = {
        **_unaliased(config, config.get("model_type")),
        **_unaliased(text, text.get("model_type")),
    }

    written_as = {**_aliases_used(config, config.get("model_type")), **_aliases_used(text, text.get("model_type"))}

    def size(*keys: str) -> int | None:
        return _size(merged, where, *keys, written_as=written_as)

    hidden = size("hidden_size")
    heads = size("num_attention_heads")
    head_dim = size("head_dim")
    nope, rope = size("qk_nope_head_dim"), size("qk_rope_head_dim")
    if head_dim is None and nope is not None and rope is not None:
        head_dim = nope + rope  # MLA: the query/key head width
    if head_dim is None and hidden and heads:
        if hidden < heads:
            # the engines derive head_dim = hidden_size // num_attention_heads (0 here), and no attention backend of
            # either takes a head of width 0
            raise ModelError(f"{where}: hidden_size {hidden} is smaller than num_attention_heads {heads} and no"
                             " head_dim is given, so a head has no width; set head_dim or fix the sizes")  # fmt: skip
        head_dim = hidden // heads
    kv_heads = size("num_key_value_heads")
    attn_config = config.get("attn_config")
    if config.get("model_type") in KV_HEADS_IN_ATTN_CONFIG and isinstance(attn_config, Mapping):
        # vLLM's DbrxModelArchConfigConvertor / MPTModelArchConfigConvertor.get_total_num_kv_heads
        # (vllm/transformers_utils/model_arch_config_convertor.py) read attn_config's kv_n_heads, never the top level
        kv_heads = _size(attn_config, where, "kv_n_heads")
    if kv_heads is None:
        kv_heads = heads  # no GQA declared: one kv head per attention head
    if heads and kv_heads and heads % kv_heads and size("kv_lora_rank") is None:
        # each KV head serves a whole group of query heads: vLLM's Attention asserts num_heads % num_kv_heads == 0
        # (model_executor/layers/attention/attention.py) and the FlashInfer / FlashAttention kernels SGLang runs
        # need the same grouping; MLA models cache one latent instead and are not grouped
        raise ModelError(f"{where}: num_key_value_heads {kv_heads} does not divide num_attention_heads {heads}; each"
                         " KV head serves a whole group of query heads: fix or re-download config.json")  # fmt: skip
    dtype = _first(text, "dtype", "torch_dtype") or _first(config, "dtype", "torch_dtype")
    fields = dict(
        id=model_id,
        architecture=archs[0],
        # a later entry that is no class name is never served (registry lookups by name): kept out of messages
        architectures=tuple(a for a in archs if _class_name(a)),
        model_type=_name(config, where, "model_type"),
        hidden_size=hidden,
        num_layers=size("num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=size("intermediate_size"),
        num_experts=size("num_experts", "num_local_experts", "n_routed_experts"),
        experts_per_token=size("num_experts_per_tok", "experts_per_token", "moe_topk"),
        moe_intermediate_size=size("moe_intermediate_size"),
        vocab_size=size("vocab_size"),
        dtype=dtype if isinstance(dtype, str) else None,
        quantization=_quantization(config) or _quantization(text),
        weight_bits=quantized_weight_bits(config.get("quantization_config"))
        or quantized_weight_bits(text.get("quantization_config")),
        path=path,
        origin=origin,
        kv_lora_rank=size("kv_lora_rank"),
        text_model_type=_name(text, f"{where} text_config", "model_type") or _name(config, where, "model_type"),
        compress_ratios=bool(merged.get("compress_ratios")),
        state_config=_state_config(merged, where),
        max_position_embeddings=size("max_position_embeddings"),
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=size("v_head_dim"),
        q_lora_rank=size("q_lora_rank"),
        full_attention_interval=size("full_attention_interval"),
        sliding_window=size("sliding_window"),
        index_topk=size("index_topk"),
        top_level_index_topk=_set_not_null(config, "index_topk"),
        vision=_vision(config, where),
        config_head_dim=size("head_dim"),
        head_dim_zero=type(merged.get("head_dim")) is int and merged["head_dim"] == 0,
        swa_head_dim=size("swa_head_dim"),
        global_head_dim=size("global_head_dim"),
        nested_text=_nested_text(config),
        top_level_keys=tuple(sorted(k for k in config if k in CONFIG_READ_KEYS)),
        remote_config=isinstance(config.get("auto_map"), (Mapping, list, str)) and "AutoConfig" in config["auto_map"],
        written_by=config["transformers_version"] if isinstance(config.get("transformers_version"), str) else None,
        swa_v_head_dim=size("swa_v_head_dim"),
        learnable_sink=bool(merged["learnable_sink"]) if "learnable_sink" in merged else None,
        hybrid_swa=merged.get("is_hybrid_swa") is True,
        use_mla=merged.get("use_mla") if isinstance(merged.get("use_mla"), bool) else None,
        layer_types=_layer_types(merged.get("layer_types")),
        null_keys=tuple(k for k in NULL_KEYS if k in merged and merged[k] is None),
        has_text_config=bool(text) or any(isinstance(config.get(k), Mapping) and config.get(k) for k in SUB_CONFIGS),
        language_config=next((k for k in (*SUB_CONFIGS, "text_config") if isinstance(config.get(k), Mapping)
                              and config.get(k)), None),  # fmt: skip
        sliding_window_pattern=_set_not_null(merged, "sliding_window_pattern"),
        kda_attention=_kda_attention(config) or _kda_attention(text),
        context_lengths=_context_lengths(config, text),
        modelopt_kv_cache=_modelopt_kv_cache(config),
        is_encoder_decoder=merged.get("is_encoder_decoder") is True,
        bidirectional_attention=bool(merged.get("use_bidirectional_attention")),
        rope=_rope(config, text),
        quant_method=_quant_method(config) if _quant_method(config) is not None else _quant_method(text),
        quant_config=_quant_config(config) or _quant_config(text),
        original_max_position_embeddings=_int(merged.get("original_max_position_embeddings")),
        unwritten=tuple(k for k in CLASS_FILLED_KEYS if k not in merged),
        config_objects=tuple(str(k) for k, v in config.items() if isinstance(v, Mapping) and v),
        compress_rates=merged.get("compress_rates") is not None
        and bool(_layer_types(merged.get("layer_types")) or _int(merged.get("num_nextn_predict_layers"))),
    )
    spec = ModelSpec(**fields)
    tied = bool(merged.get("tie_word_embeddings", False))
    return ModelSpec(**{**fields, "num_params": estimate_params(spec, tied_embeddings=tied)})


def estimate_params(spec: ModelSpec, *, tied_embeddings: bool = False) -> int | None:
    """Approximate total parameters of a decoder (embeddings, attention, dense or MoE MLP, norms).

    Good to a few percent for Llama/Qwen-style models; the catalog carries published totals for the others."""
    h, layers, heads, kv, hd = spec.hidden_size, spec.num_layers, spec.num_heads, spec.num_kv_heads, spec.head_dim
    if not all((h, layers, heads, kv, hd, spec.vocab_size)):
        return None
    embed = spec.vocab_size * h * (1 if tied_embeddings else 2)
    attn = h * heads * hd * 2 + h * kv * hd * 2
    if spec.is_moe:
        inter = spec.moe_intermediate_size or spec.intermediate_size or 0
        mlp = spec.num_experts * 3 * h * inter + h * spec.num_experts  # experts + router
    else:
        mlp = 3 * h * (spec.intermediate_size or 0)
    return embed + layers * (attn + mlp + 2 * h) + h


def load_config_dir(path: str | os.PathLike[str], *, model_id: str | None = None, origin: str = "directory") -> ModelSpec:
    """A ModelSpec from ``path/config.json``."""
    directory = _expand(Path(path))
    if not directory.is_dir():
        raise ModelError(f"{directory}: no such model directory; pass a directory holding config.json or a model id")
    config_file = directory / "config.json"
    try:
        text = read_text(config_file, "config.json")
    except FileNotFoundError:
        if config_file.is_symlink():
            raise ModelError(f"{config_file}: a broken link (its target is missing); re-download the model") from None
        raise ModelError(f"{directory}: no config.json in this directory; pass the model's root directory") from None
    except OSError as exc:  # launcher.files.FileRefused: not a regular file, too large, unreadable, not UTF-8
        raise ModelError(str(exc)) from None
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as exc:  # malformed; an integer of thousands of digits, deep nesting
        malformed, why = why_unreadable(exc)
        raise ModelError(f"{config_file}: {'malformed' if malformed else 'not usable'} JSON ({why}); fix or re-download it") from None
    return spec_from_config(config, model_id=model_id or str(path), path=str(directory), origin=origin, where=str(config_file))


# -- the Hugging Face cache (offline) --------------------------------------------------------------------------------


def hf_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub (as huggingface_hub resolves it)."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return _expand(Path(env["HF_HUB_CACHE"]), "HF_HUB_CACHE")
    if env.get("HF_HOME"):
        return _expand(Path(env["HF_HOME"]), "HF_HOME") / "hub"
    home = env.get("HOME")
    base = Path(home) if home else _expand(Path("~"), "the home directory")
    return base / ".cache" / "huggingface" / "hub"


def _expand(path: Path, what: str | None = None) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; a ModelError when that home directory is unknown."""
    try:
        return path.expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory"
        user = str(path).split("/", 1)[0]
        where = f"{what} ({path})" if what else str(path)
        raise ModelError(f"{where}: {user} names no user with a home directory here; write the full path") from None


def _snapshot_dir(repo_dir: Path, model_id: str) -> tuple[Path, str] | None:
    """The snapshot to read and why: the one refs/main names (as huggingface_hub resolves the id), else, when there is
    no refs/main, the newest snapshot holding a config.json. A refs/main whose snapshot has no readable config.json is a
    ModelError: silently reading another revision could describe another model."""
    snapshots = repo_dir / "snapshots"
    ref_file = repo_dir / "refs" / "main"
    try:
        ref = read_text(ref_file, "Hugging Face cache ref", limit=REF_FILE_LIMIT).strip()
    except FileNotFoundError:
        ref = ""
    except OSError as exc:  # launcher.files.FileRefused: not a regular file, too large, unreadable, not UTF-8
        raise ModelError(f"{exc}; or re-download {model_id}") from None
    if ref:
        if "/" in ref or ref in (".", "..") or not (snapshots / ref).is_dir():
            raise ModelError(
                f"{model_id}: the Hugging Face cache's refs/main names snapshot {ref!r}, which is not in {snapshots};"
                f" re-download it (`hf download {model_id} config.json`)"
            )
        return snapshots / ref, "refs/main"
    try:
        candidates = [d for d in snapshots.iterdir() if (d / "config.json").is_file()]
    except OSError:
        return None
    newest = max(candidates, key=lambda d: (d / "config.json").stat().st_mtime, default=None)
    if newest is None:
        return None
    return newest, "no refs/main: the newest snapshot with a config.json"


def hf_cache_ids(environ: Mapping[str, str] | None = None) -> list[str]:
    """Model ids with a snapshot in the local Hugging Face cache, sorted (a broken one is listed: choosing it says why)."""
    root = hf_cache_dir(environ)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    ids = []
    for entry in entries:
        if not entry.name.startswith("models--"):
            continue
        model_id = entry.name[len("models--") :].replace("--", "/", 1)
        try:
            found = _snapshot_dir(entry, model_id) is not None
        except ModelError:
            found = True
        if found:
            ids.append(model_id)
    return sorted(ids)


def _from_hf_cache(model_id: str, environ: Mapping[str, str] | None) -> ModelSpec | None:
    repo_dir = hf_cache_dir(environ) / ("models--" + model_id.replace("/", "--"))
    found = _snapshot_dir(repo_dir, model_id) if repo_dir.is_dir() else None
    if found is None:
        return None
    snapshot, why = found
    try:
        spec = load_config_dir(snapshot, model_id=model_id, origin="hf-cache")
    except ModelError as exc:
        raise ModelError(f"{exc} (Hugging Face cache snapshot {snapshot.name}, {why}; no other revision is used)") from None
    return replace(spec, notes=f"Hugging Face cache snapshot {snapshot.name} ({why})")


# -- the bundled catalog ----------------------------------------------------------------------------------------------


@cache
def _catalog() -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in os.listdir(CATALOG_DIR) if n.endswith(".json")):
        with open(os.path.join(CATALOG_DIR, name), encoding="utf-8") as file:
            data = json.loads(file.read())
        entries[data["id"]] = data
    return entries


def catalog_ids() -> list[str]:
    """Ids of the bundled catalog ("demo" first)."""
    ids = sorted(_catalog(), key=str.lower)
    return [DEMO_ID, *(i for i in ids if i != DEMO_ID)] if DEMO_ID in ids else ids


def catalog_config(model_id: str) -> dict[str, Any] | None:
    """The config.json facts the catalog holds for ``model_id`` (exact id), or None."""
    entry = _catalog().get(model_id)
    return dict(entry["config"]) if entry is not None else None


def catalog_file(model_id: str) -> str:
    """Where the catalog entry ``model_id`` is: the id with "/" written "--" (tests/test_models.py keeps every entry so,
    which also keeps the ids unique)."""
    return os.path.join(CATALOG_DIR, model_id.replace("/", "--") + ".json")


def _exact_entry(model_id: str) -> dict[str, Any] | None:
    """The entry whose id is exactly ``model_id``, read from its own file (a plan needs one entry, not the whole catalog).
    None when that file is missing, unreadable or holds another id (a case-insensitive file system); the caller then
    looks through the whole catalog."""
    try:
        with open(catalog_file(model_id), encoding="utf-8") as file:
            data = json.loads(file.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("id") == model_id else None


def catalog_spec(model_id: str) -> ModelSpec | None:
    entry = (_exact_entry(model_id) or _catalog().get(model_id)
             or next((e for k, e in _catalog().items() if k.lower() == model_id.lower()), None))  # fmt: skip
    if entry is None:
        return None
    where = f"catalog entry {entry['id']}"
    spec = spec_from_config(entry["config"], model_id=entry["id"], path=None, origin="catalog", where=where)
    extra = {k: entry[k] for k in ("num_params", "notes") if entry.get(k) is not None}
    return replace(spec, **extra)


# -- resolution -------------------------------------------------------------------------------------------------------


def _looks_like_path(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~")) or ref in (".", "..") or os.sep == "\\" and ":" in ref


def resolve_model(ref: str, *, environ: Mapping[str, str] | None = None) -> ModelSpec:
    """A directory with config.json, else an id in the offline HF cache, else the bundled catalog."""
    ref = (ref or "").strip()
    if not ref:
        raise ModelError("empty model reference; pass --model ID|DIR (e.g. Qwen/Qwen3-30B-A3B, or `demo`)")
    candidate = _expand(Path(ref))
    if candidate.is_dir():
        return load_config_dir(candidate, model_id=ref)
    if _looks_like_path(ref):
        raise ModelError(f"{ref}: no such model directory; pass an existing directory holding config.json or a model id")
    spec = _from_hf_cache(ref, environ)
    if spec is not None:
        return spec
    spec = catalog_spec(ref)
    if spec is not None:
        return spec
    cache = hf_cache_dir(environ)
    raise ModelError(
        f"unknown model id {ref!r} offline: not in the Hugging Face cache ({cache}) nor the bundled catalog;"
        f" run `hf download {ref} config.json` or pass a directory holding config.json"
    )
