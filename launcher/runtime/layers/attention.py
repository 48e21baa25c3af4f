"""GQA self-attention with a preallocated KV cache, heads split across ranks.

Each rank owns num_heads / tp query heads and num_kv_heads / tp kv heads; when tp exceeds the kv heads, each rank holds
one kv head, replicated over the tp / num_kv_heads ranks whose query heads use it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

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
        self.rotary = rotary
        self.scale = d**-0.5
        self.k_cache: torch.Tensor | None = None  # [slots, max_len, kv_heads, head_dim], set by the engine
        self.v_cache: torch.Tensor | None = None

    def load(self, reader: WeightReader, prefix: str) -> None:
        self.qkv.load(reader, [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"])
        self.o_proj.load(reader, f"{prefix}.o_proj")
        if self.q_norm is not None:
            self.q_norm.load(reader, f"{prefix}.q_norm")
            self.k_norm.load(reader, f"{prefix}.k_norm")

    def forward(self, x: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, slot_range: slice | None):
        """x: [batch, tokens, hidden]; positions: [batch, tokens]; slots: [batch] KV slots; returns a partial sum."""
        batch, tokens, _ = x.shape
        d = self.head_dim
        q, k, v = self.qkv(x).split([self.num_heads * d, self.num_kv_heads * d, self.num_kv_heads * d], dim=-1)
        q = q.view(batch, tokens, self.num_heads, d)
        k = k.view(batch, tokens, self.num_kv_heads, d)
        v = v.view(batch, tokens, self.num_kv_heads, d)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = self.rotary(q, k, positions)

        # write this step's keys/values, then attend over each sequence's cache up to its own positions
        rows = slots.unsqueeze(1).expand(batch, tokens)
        self.k_cache[rows, positions] = k
        self.v_cache[rows, positions] = v
        length = int(positions.max()) + 1
        if slot_range is not None:  # consecutive slots: a view, no gather
            keys, values = self.k_cache[slot_range, :length], self.v_cache[slot_range, :length]
        else:
            keys, values = self.k_cache[slots, :length], self.v_cache[slots, :length]
        mask = torch.arange(length, device=x.device).view(1, 1, 1, length) <= positions.view(batch, 1, tokens, 1)
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            keys.transpose(1, 2),
            values.transpose(1, 2),
            attn_mask=mask,
            scale=self.scale,
            enable_gqa=self.num_heads != self.num_kv_heads,
        )
        return self.o_proj(out.transpose(1, 2).reshape(batch, tokens, self.num_heads * d))
