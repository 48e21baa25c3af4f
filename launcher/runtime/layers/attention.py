"""GQA self-attention with a preallocated KV cache, heads split across ranks.

Each rank owns num_heads / tp query heads and num_kv_heads / tp kv heads; when tp exceeds the kv heads, each rank holds
one kv head, replicated over the tp / num_kv_heads ranks whose query heads use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from launcher.runtime.communicator import rmsnorm
from launcher.runtime.config import ModelConfig
from launcher.runtime.layers.linear import ColumnParallelLinear, RowParallelLinear
from launcher.runtime.layers.norm import RMSNorm
from launcher.runtime.layers.rotary import RotaryEmbedding
from launcher.runtime.weights import Shard, WeightReader


def kv_head_range(num_kv_heads: int, rank: int, world: int) -> tuple[int, int]:
    """[first, last) kv heads this rank holds."""
    if num_kv_heads >= world:
        per_rank = num_kv_heads // world
        return rank * per_rank, (rank + 1) * per_rank
    head = rank // (world // num_kv_heads)
    return head, head + 1


@dataclass(frozen=True)
class AttentionBatch:
    """Where this step's tokens sit in the KV cache, worked out once per forward for all layers."""

    positions: torch.Tensor  # [batch, tokens]
    slots: torch.Tensor  # [batch] KV-cache slot of each sequence
    slot_range: slice | None  # the slots as a slice when consecutive: the cache is then read as a view
    length: int  # keys to attend over: max position + 1
    mask: torch.Tensor | None  # [batch, 1, tokens, length] True = attend; None when `causal` or nothing is masked
    causal: bool
    cos: torch.Tensor  # [batch, tokens, 1, head_dim] rotary tables for these positions
    signed_sin: torch.Tensor
    grouped_decode: bool = False  # one token per sequence; query heads sharing a kv head become its query rows

    @classmethod
    def build(cls, positions: torch.Tensor, slots: torch.Tensor, rotary: RotaryEmbedding) -> AttentionBatch:
        batch, tokens = positions.shape
        tables = rotary.tables(positions)
        values = slots.tolist()
        consecutive = values == list(range(values[0], values[0] + batch))
        slot_range = slice(values[0], values[0] + batch) if consecutive else None
        length = int(positions.max()) + 1
        same_positions = bool((positions == positions[:1]).all())
        if same_positions and tokens == 1:  # decode with equal lengths: every cached key is visible
            return cls(positions, slots, slot_range, length, None, False, *tables)
        if same_positions and tokens == length:  # prefill from position 0: plain causal attention
            return cls(positions, slots, slot_range, length, None, True, *tables)
        keys = torch.arange(length, device=positions.device).view(1, 1, 1, length)
        return cls(positions, slots, slot_range, length, keys <= positions.view(batch, 1, tokens, 1), False, *tables)

    @classmethod
    def static_decode(cls, positions: torch.Tensor, slots: torch.Tensor, length: int, rotary: RotaryEmbedding):
        """A decode step with no host sync (CUDA-graph capture, cuda_graph.py): row i is cache slot i (slots must be
        arange(batch)), keys are read up to the fixed `length` and masked on the device by each row's position."""
        batch = positions.shape[0]
        keys = torch.arange(length, device=positions.device).view(1, 1, 1, length)
        mask = keys <= positions.view(batch, 1, 1, 1)
        return cls(positions, slots, slice(0, batch), length, mask, False, *rotary.tables(positions), grouped_decode=True)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, rotary: RotaryEmbedding, rank: int, world: int, dtype, device):
        super().__init__()
        d = config.head_dim
        self.head_dim = d
        self.num_heads = config.num_heads // world
        first_kv, last_kv = kv_head_range(config.num_kv_heads, rank, world)
        self.num_kv_heads = last_kv - first_kv
        q_shard = Shard(rank * self.num_heads * d, (rank + 1) * self.num_heads * d)
        kv_shard = Shard(first_kv * d, last_kv * d)
        self.qkv = ColumnParallelLinear(
            config.hidden_size,
            [(config.num_heads * d, q_shard), (config.num_kv_heads * d, kv_shard), (config.num_kv_heads * d, kv_shard)],
            bias=config.attention_bias,
            dtype=dtype,
            device=device,
        )
        self.o_proj = RowParallelLinear(config.num_heads * d, config.hidden_size, rank, world, dtype, device)
        self.q_norm = RMSNorm(d, config.rms_norm_eps, dtype, device) if config.qk_norm else None
        self.k_norm = RMSNorm(d, config.rms_norm_eps, dtype, device) if config.qk_norm else None
        self.qk_norm_weight: torch.Tensor | None = None  # [q heads + kv heads, head_dim]: both norms in one call
        self.rotary = rotary
        self.scale = d**-0.5
        self.k_cache: torch.Tensor | None = None  # [slots, kv_heads, max_len, head_dim], set by the engine
        self.v_cache: torch.Tensor | None = None

    def load(self, reader: WeightReader, prefix: str) -> None:
        self.qkv.load(reader, [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"])
        self.o_proj.load(reader, f"{prefix}.o_proj")
        if self.q_norm is not None:
            self.q_norm.load(reader, f"{prefix}.q_norm")
            self.k_norm.load(reader, f"{prefix}.k_norm")
            d = self.head_dim
            q_weight = self.q_norm.weight.expand(self.num_heads, d)
            self.qk_norm_weight = torch.cat([q_weight, self.k_norm.weight.expand(self.num_kv_heads, d)])

    def forward(self, x: torch.Tensor, at: AttentionBatch) -> torch.Tensor:
        """x: [batch, tokens, hidden]; returns this rank's partial sum of the output projection."""
        batch, tokens, _ = x.shape
        d, heads, kv_heads = self.head_dim, self.num_heads, self.num_kv_heads
        qkv = self.qkv(x)
        # queries and keys side by side ([batch, tokens, heads + kv heads, dim], a view): one norm, one rotation
        qk = qkv[..., : (heads + kv_heads) * d].view(batch, tokens, heads + kv_heads, d)
        v = qkv[..., (heads + kv_heads) * d :].view(batch, tokens, kv_heads, d)
        if self.qk_norm_weight is not None:
            qk = rmsnorm(qk, self.qk_norm_weight, self.q_norm.eps)
        q, k = self.rotary.rotate(qk, at.cos, at.signed_sin).split([heads, kv_heads], dim=2)

        # write this step's keys/values, then attend over each sequence's cache up to its own positions
        rows = at.slots.unsqueeze(1).expand(batch, tokens)
        self.k_cache[rows, :, at.positions] = k
        self.v_cache[rows, :, at.positions] = v
        slots = at.slot_range if at.slot_range is not None else at.slots
        keys, values = self.k_cache[slots, :, : at.length], self.v_cache[slots, :, : at.length]
        if at.grouped_decode:
            # [batch, kv heads, query heads per kv head, dim]: no kv expansion for GQA, whichever SDPA kernel runs
            grouped = q.reshape(batch, kv_heads, heads // kv_heads, d)
            out = F.scaled_dot_product_attention(grouped, keys, values, attn_mask=at.mask, scale=self.scale)
            return self.o_proj(out.reshape(batch, tokens, heads * d))
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            keys,
            values,
            attn_mask=at.mask,
            is_causal=at.causal,
            scale=self.scale,
            enable_gqa=self.num_heads != self.num_kv_heads,
        )
        return self.o_proj(out.transpose(1, 2).reshape(batch, tokens, self.num_heads * d))
