"""Model configuration read from a Hugging Face config.json: only the fields the runtime uses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from launcher.runtime.errors import RuntimeUsageError

# architecture -> (family, weight prefix of the text backbone)
SUPPORTED_ARCHITECTURES: dict[str, tuple[str, str]] = {
    "LlamaForCausalLM": ("llama", "model."),
    "Qwen2ForCausalLM": ("qwen2", "model."),
    "Qwen3ForCausalLM": ("qwen3", "model."),
    "Qwen3MoeForCausalLM": ("qwen3_moe", "model."),
    "Qwen3VLMoeForConditionalGeneration": ("qwen3_vl_moe", "model.language_model."),
}


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    family: str
    weight_prefix: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict | None
    max_position_embeddings: int
    tie_word_embeddings: bool
    torch_dtype: str
    attention_bias: bool = False
    qk_norm: bool = False
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = True
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple[int, ...] = ()
    fused_experts: bool = False  # Qwen3-VL-MoE stores experts as [E, hidden, 2*I] / [E, I, hidden]
    eos_token_ids: tuple[int, ...] = field(default=())

    @property
    def is_text_backbone_of_vl(self) -> bool:
        return self.family == "qwen3_vl_moe"

    def is_moe_layer(self, index: int) -> bool:
        return (
            self.num_experts > 0
            and index not in self.mlp_only_layers
            and (index + 1) % self.decoder_sparse_step == 0
        )


def _eos_ids(*values) -> tuple[int, ...]:
    ids: list[int] = []
    for value in values:
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, int) and item not in ids:
                ids.append(item)
    return tuple(ids)


def _rope(text: dict) -> tuple[float, dict | None]:
    """rope_theta and scaling from either the 4.x fields or the 5.x `rope_parameters` dict."""
    params = text.get("rope_parameters") or {}
    scaling = text.get("rope_scaling") or None
    theta = text.get("rope_theta", params.get("rope_theta", 10000.0))
    rope_type = (scaling or params).get("rope_type", (scaling or params).get("type", "default"))
    if rope_type in ("default", None, "mrope"):
        return float(theta), None
    if rope_type == "llama3":
        return float(theta), dict(scaling or params)
    raise RuntimeUsageError(
        f"rope type {rope_type!r} is not supported by the bundled runtime (default and llama3 are); use --engine sglang"
    )


def load_config(model_dir: Path) -> ModelConfig:
    path = model_dir / "config.json"
    if not path.is_file():
        raise RuntimeUsageError(f"{model_dir} has no config.json; pass a Hugging Face model directory or --model demo")
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise RuntimeUsageError(f"cannot read {path}: {err}") from None
    gen_eos = None
    gen_path = model_dir / "generation_config.json"
    if gen_path.is_file():
        try:
            gen_eos = json.loads(gen_path.read_text()).get("eos_token_id")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, AttributeError):
            gen_eos = None
    return config_from_dict(raw, where=str(path), name=str(model_dir), gen_eos=gen_eos)


def config_from_dict(raw: object, *, where: str, name: str, gen_eos: object = None) -> ModelConfig:
    """The checks and fields of ``load_config`` for a config.json already decoded (``where`` names it in messages,
    ``name`` the model); `advisor check --engine bundled` runs them on catalog entries too."""
    path = where
    if not isinstance(raw, dict):
        raise RuntimeUsageError(f"{path} holds {_json_kind(raw)}, not a JSON object; pass a Hugging Face model directory")
    architectures = raw.get("architectures") or []
    arch = architectures[0] if isinstance(architectures, list) and architectures else "<none>"
    if not isinstance(arch, str):
        arch = repr(arch)
    if arch not in SUPPORTED_ARCHITECTURES:
        supported = ", ".join(SUPPORTED_ARCHITECTURES)
        raise RuntimeUsageError(
            f"architecture {arch} is not supported by the bundled runtime (supported: {supported}); use --engine sglang"
        )
    family, prefix = SUPPORTED_ARCHITECTURES[arch]
    text = raw.get("text_config", raw) if family == "qwen3_vl_moe" else raw
    if not isinstance(text, dict):
        raise RuntimeUsageError(f"{path}: text_config holds {_json_kind(text)}, not a JSON object")
    if raw.get("quantization_config") or text.get("quantization_config"):
        raise RuntimeUsageError(f"{name} is quantized; the bundled runtime loads unquantized weights only")
    try:
        heads = _positive(text, "num_attention_heads")
        hidden = _positive(text, "hidden_size")
        for key in ("vocab_size", "num_hidden_layers"):
            _positive(text, key)
        theta, scaling = _rope(text)
        moe = family in ("qwen3_moe", "qwen3_vl_moe")
        config = ModelConfig(
            architecture=arch,
            family=family,
            weight_prefix=prefix,
            vocab_size=int(text["vocab_size"]),
            hidden_size=hidden,
            num_layers=int(text["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads),
            intermediate_size=int(text.get("intermediate_size") or 0),
            rms_norm_eps=float(text.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            max_position_embeddings=int(text.get("max_position_embeddings", 4096)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            torch_dtype=str(text.get("dtype") or text.get("torch_dtype") or raw.get("torch_dtype") or "float32"),
            attention_bias=family == "qwen2" or bool(text.get("attention_bias", False)),
            qk_norm=family in ("qwen3", "qwen3_moe", "qwen3_vl_moe"),
            num_experts=int(text.get("num_experts") or text.get("num_local_experts") or 0) if moe else 0,
            num_experts_per_tok=int(text.get("num_experts_per_tok", 0)) if moe else 0,
            moe_intermediate_size=int(text.get("moe_intermediate_size", 0)) if moe else 0,
            # Qwen3-VL-MoE always renormalises the top-k weights (its config has no such flag).
            norm_topk_prob=bool(text.get("norm_topk_prob", True)),
            decoder_sparse_step=int(text.get("decoder_sparse_step", 1) or 1),
            mlp_only_layers=tuple(text.get("mlp_only_layers") or ()),
            fused_experts=family == "qwen3_vl_moe",
            eos_token_ids=_eos_ids(gen_eos, text.get("eos_token_id"), raw.get("eos_token_id")),
        )
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as err:
        raise RuntimeUsageError(f"{path} lacks or garbles a required field: {err}") from None
    for name in ("num_kv_heads", "head_dim", "max_position_embeddings"):
        if getattr(config, name) < 1:
            raise RuntimeUsageError(f"{path}: {name} is {getattr(config, name)}; it must be a positive integer")
    return config


def _positive(fields: dict, key: str) -> int:
    value = int(fields[key])
    if value < 1:
        raise ValueError(f"{key} is {value}; it must be a positive integer")
    return value


def _json_kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


GIB = 1024**3


@dataclass(frozen=True)
class MemoryEstimate:
    """What one rank allocates up front: its slices of the weights and its KV cache (activations not counted)."""

    weights: int
    kv_cache: int

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache

    def describe(self, batch: int, max_len: int) -> str:
        return (
            f"about {self.total / GIB:.1f} GiB per rank (weights {self.weights / GIB:.1f} GiB + KV cache "
            f"{self.kv_cache / GIB:.1f} GiB for --max-batch-size {batch} x --max-model-len {max_len})"
        )


def memory_estimate(config: ModelConfig, tp: int, dtype_bytes: int, batch: int, max_len: int) -> MemoryEstimate:
    """A lower bound of the bytes one rank allocates before serving (it never overstates: a refusal based on it is
    never wrong)."""
    c = config
    attention = c.hidden_size * (c.num_heads + 2 * c.num_kv_heads) * c.head_dim + c.num_heads * c.head_dim * c.hidden_size
    dense_mlp = 3 * c.hidden_size * c.intermediate_size
    moe_mlp = 3 * c.hidden_size * c.moe_intermediate_size * c.num_experts
    layers = sum(attention + (moe_mlp if c.is_moe_layer(i) else dense_mlp) for i in range(c.num_layers))
    embeddings = c.vocab_size * c.hidden_size * (1 if c.tie_word_embeddings else 2)
    kv_heads = max(1, c.num_kv_heads // tp)
    kv = 2 * c.num_layers * batch * max_len * kv_heads * c.head_dim
    return MemoryEstimate(weights=(layers + embeddings) // tp * dtype_bytes, kv_cache=kv * dtype_bytes)


def check_tp(config: ModelConfig, tp: int) -> None:
    """Tensor parallelism splits heads, intermediate sizes and experts' intermediate dims evenly."""
    problems = []
    if config.num_heads % tp:
        problems.append(f"attention heads {config.num_heads}")
    if config.num_kv_heads % tp and tp % config.num_kv_heads:
        problems.append(f"kv heads {config.num_kv_heads} (nor does tp divide by them)")
    if config.intermediate_size and config.intermediate_size % tp:
        problems.append(f"intermediate size {config.intermediate_size}")
    if config.moe_intermediate_size and config.moe_intermediate_size % tp:
        problems.append(f"moe intermediate size {config.moe_intermediate_size}")
    if problems:
        raise RuntimeUsageError(f"--tp-size {tp} does not divide {', '.join(problems)}; pick a tp that divides them")
