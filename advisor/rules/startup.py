"""Will it start? What an engine computes about GPU memory when it starts, and whether it then refuses to.

Each engine package computes a :class:`Startup` for a scenario under its release (``Engine.startup``): the weights on
the tightest GPU, the memory it keeps outside the KV cache, the KV pool it carves from the rest, the sequences of the
context length it will use that the pool holds, and the start-up error the release raises when something does not fit,
worded as the release words it. The plan computes it once (``Plan.startup``); `check`, `layouts`, `launch`, `explain`
and the app all read that one verdict, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models import ModelSpec
from advisor.rules.problem import Problem

ERROR, INFO = "error", "info"

STARTUP_UNKNOWN = "startup_unknown"  # the problem id when the verdict cannot be told (a fact it needs is unknown)


@dataclass(frozen=True, slots=True)
class StartupError:
    """A start-up failure the release raises for this plan."""

    id: str  # the problem id, stable (docs/architecture.md): "startup_out_of_memory", "kv_cache_too_small", ...
    engine_message: str  # what the release prints, its numbers filled in
    explanation: str  # the arithmetic behind it, with this plan's numbers
    fixes: tuple[str, ...]  # ranked, most direct first, each with numbers ("--tp 4 (the smallest tp that fits)")
    source: str  # release, file, function


@dataclass(frozen=True, slots=True)
class Startup:
    """The engine's start-up arithmetic for one plan, on its tightest GPU (the smallest memory the engine uses).

    Byte figures are per GPU. ``starts`` is None when a fact the arithmetic needs is unknown (``unknown`` says which);
    ``estimates`` names each figure the release measures at start-up and the advisor can only estimate, with its
    margin."""

    context_len: int | None  # the sequence length the engine will use: the flag's, else its own default
    context_source: str  # where context_len comes from ("--context-length", "the model's max_position_embeddings")
    starts: bool | None
    total_bytes: float | None = None  # the tightest GPU's memory
    weights_bytes: float | None = None
    reserve_bytes: float | None = None  # kept outside the KV pool: activations, CUDA graphs, non-torch memory
    fraction: float | None = None  # mem_fraction_static / gpu_memory_utilization as resolved
    kv_tokens: int | None = None  # one KV pool's capacity, as the engine logs it
    kv_pools: int = 1  # pools of that size (attention-DP ranks under DP attention)
    sequences: int | None = None  # sequences of context_len held at once, over all pools
    error: StartupError | None = None
    unknown: str | None = None
    estimates: tuple[str, ...] = ()

    @property
    def total_kv_tokens(self) -> int:
        return (self.kv_tokens or 0) * self.kv_pools


def startup_problems(startup: Startup | None, engine: str) -> list[Problem]:
    """The plan's problems from its start-up verdict: the release's error as an error; a verdict that cannot be told as
    info naming the missing fact."""
    if startup is None:
        return []
    if startup.error is not None:
        err = startup.error
        fixes = (
            "; ".join(f"({i}) {fix}" for i, fix in enumerate(err.fixes, 1))
            if len(err.fixes) > 1
            else "".join(err.fixes)
        )
        return [Problem(err.id, ERROR, f"{engine} will not start: {err.engine_message} ({err.explanation})", fixes,
                        err.source)]  # fmt: skip
    if startup.starts is None and startup.unknown:
        return [Problem(STARTUP_UNKNOWN, INFO, f"cannot tell whether {engine} starts: {startup.unknown}",
                        "give the missing fact (a model directory with config.json, --facts from the GPU node)",
                        "advisor/rules/startup.py")]  # fmt: skip
    return []


def sequences_held(kv_tokens: int | None, pools: int, context_len: int | None) -> int | None:
    """Sequences of ``context_len`` tokens the pools hold at once (each sequence lives in one pool)."""
    if kv_tokens is None or not context_len:
        return None
    return pools * (max(kv_tokens, 0) // context_len)


# -- the model's shape: what every engine's arithmetic shares ------------------------------------------------------


def kv_layers(model: ModelSpec) -> int:
    """Layers that keep a KV cache: all, or every full_attention_interval-th one in hybrid linear-attention models."""
    layers = model.num_layers or 0
    if model.full_attention_interval and model.full_attention_interval > 1:
        return layers // model.full_attention_interval
    return layers


def kv_heads_per_rank(model: ModelSpec, attention_tp: int) -> int:
    """KV heads one rank stores: split over attention tp, one whole head (replicated) when tp exceeds them."""
    return max(1, (model.num_kv_heads or 0) // max(attention_tp, 1))


@dataclass(frozen=True, slots=True)
class KvShape:
    """What one rank caches per token and layer: ``heads`` KV heads of a K part ``head_size`` wide and a V part
    ``v_head_size`` wide; under MLA one compressed latent (kv_lora_rank + qk_rope_head_dim), the same on every rank,
    with no separate V."""

    layers: int
    heads: int
    head_size: int
    v_head_size: int
    mla: bool

    @property
    def elements_per_token(self) -> int:
        """KV elements one rank keeps per token over all layers."""
        return self.heads * (self.head_size + self.v_head_size) * self.layers


def kv_shape(model: ModelSpec, attention_tp: int, mla: bool | None = None) -> KvShape | None:
    """One rank's KV-cache shape (the MLA / standard split every engine's arithmetic shares); None when the config
    does not tell it. `mla` is the engine release's own verdict where it differs from the config's kv_lora_rank."""
    layers = kv_layers(model)
    if not layers:
        return None
    if model.uses_mla if mla is None else mla:
        if model.qk_rope_head_dim is None or model.kv_lora_rank is None:  # an MLA name whose config lacks the widths
            return None
        return KvShape(layers, 1, model.kv_lora_rank + model.qk_rope_head_dim, 0, True)
    if not model.head_dim or not model.num_kv_heads:
        return None
    return KvShape(layers, kv_heads_per_rank(model, attention_tp), model.head_dim, model.v_head_dim or model.head_dim,
                   False)  # fmt: skip


def kv_bytes_per_token(model: ModelSpec, attention_tp: int, kv_bytes: int, mla: bool | None = None) -> int | None:
    """One rank's KV-cache bytes per token over all layers (SGLang's cell_size; vLLM's page size / block size x layers);
    `mla` as in kv_shape."""
    shape = kv_shape(model, attention_tp, mla)
    return None if shape is None else shape.elements_per_token * kv_bytes


def attention_params(model: ModelSpec) -> int | None:
    """Parameters of the attention projections over all layers (replicated per attention-DP rank under DP attention)."""
    h, layers, heads = model.hidden_size, model.num_layers, model.num_heads
    if not (h and layers and heads and model.head_dim):
        return None
    if model.uses_mla:
        rope, v = model.qk_rope_head_dim, model.v_head_dim
        if rope is None or v is None:
            return None
        qk = model.head_dim  # nope + rope
        q = h * model.q_lora_rank + model.q_lora_rank * heads * qk if model.q_lora_rank else h * heads * qk
        kv = h * (model.kv_lora_rank + rope) + model.kv_lora_rank * heads * (qk - rope + v)
        return layers * (q + kv + heads * v * h)
    kv_heads = model.num_kv_heads or heads
    return layers * (h * heads * model.head_dim * 2 + h * kv_heads * model.head_dim * 2)


def weights_bytes_per_gpu(model: ModelSpec, dtype: str | None, tp: int, attention_tp: int) -> float | None:
    """num_params x bytes per param / tp; under DP attention the attention and the embedding are split over the
    attention tp only (sglang models: VocabParallelEmbedding(use_attn_tp_group=is_dp_attention_enabled()))."""
    per_param = model.bytes_per_param(dtype)
    if not model.num_params or per_param is None:
        return None
    if attention_tp >= tp:
        return model.num_params * per_param / tp
    attention = attention_params(model)
    if attention is None:
        return None
    replicated = attention + (model.vocab_size or 0) * (model.hidden_size or 0)
    return ((model.num_params - replicated) / tp + replicated / attention_tp) * per_param
