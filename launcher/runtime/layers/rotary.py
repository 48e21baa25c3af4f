"""Rotary position embeddings (HF "rotate half" layout), with optional llama3 frequency scaling.

Qwen3-VL's mrope gives every section the same position for text-only input, so it is this ordinary rope.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def inverse_frequencies(head_dim: int, theta: float, scaling: dict | None) -> torch.Tensor:
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
    if scaling is None:
        return inv_freq
    # llama3: long wavelengths slowed by `factor`, short kept, a smooth blend between
    factor = scaling["factor"]
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    old_len = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
    return torch.where(medium, blended, scaled)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, theta: float, max_positions: int, scaling: dict | None, dtype, device):
        super().__init__()
        inv_freq = inverse_frequencies(head_dim, theta, scaling)
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        # cos/sin computed in float32, used in the model dtype (as transformers does). The first half of sin is
        # stored negated: rotate_half(x) * sin == x.roll(half) * signed_sin exactly, and roll is one op instead of three
        signed_sin = torch.cat((-freqs.sin(), freqs.sin()), dim=-1)
        self.half = head_dim // 2
        self.register_buffer("cos", angles.cos().to(dtype=dtype, device=device), persistent=False)
        self.register_buffer("signed_sin", signed_sin.to(dtype=dtype, device=device), persistent=False)

    def tables(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin for positions [batch, tokens], shaped [batch, tokens, 1, head_dim] to broadcast over
        heads; looked up once per forward and shared by every layer."""
        return self.cos[positions].unsqueeze(2), self.signed_sin[positions].unsqueeze(2)

    def rotate(self, x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
        """x: [batch, tokens, heads, head_dim] (queries and keys together)."""
        return x * cos + x.roll(self.half, dims=-1) * signed_sin
