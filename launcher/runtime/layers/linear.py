"""Column- and row-parallel linear layers.

ColumnParallelLinear splits output features: each rank computes its slice, no communication. Several checkpoint
tensors (q/k/v, gate/up) can be fused into one matmul; each part has its own shard.
RowParallelLinear splits input features: each rank produces a partial sum, reduced by the communicator (fused with the
residual add and the next RMSNorm).
"""

from __future__ import annotations

import torch
from torch import nn

from launcher.runtime.layers.onednn import linear, packed_param
from launcher.runtime.weights import Shard, WeightReader


def empty_param(*shape: int, dtype: torch.dtype, device: torch.device) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, dtype=dtype, device=device), requires_grad=False)


class ColumnParallelLinear(nn.Module):
    def __init__(
        self,
        in_features: int,
        parts: list[tuple[int, Shard]],
        bias: bool,
        dtype: torch.dtype,
        device: torch.device,
    ):
        """parts: (full output features, this rank's shard) per checkpoint tensor, concatenated in order."""
        super().__init__()
        self.in_features = in_features
        self.parts = parts
        out_local = sum(shard.size for _, shard in parts)
        self.weight = empty_param(out_local, in_features, dtype=dtype, device=device)
        self.bias = empty_param(out_local, dtype=dtype, device=device) if bias else None

    def load(self, reader: WeightReader, names: list[str]) -> None:
        offset = 0
        for name, (full_out, shard) in zip(names, self.parts, strict=True):
            rows = slice(offset, offset + shard.size)
            self.weight[rows].copy_(reader.load(f"{name}.weight", (full_out, self.in_features), 0, shard))
            if self.bias is not None:
                self.bias[rows].copy_(reader.load(f"{name}.bias", (full_out,), 0, shard))
            offset += shard.size

    def pack_weights(self) -> None:
        self.weight = packed_param(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """Input features split evenly; forward returns this rank's partial sum (no bias in the supported models)."""

    def __init__(self, in_features: int, out_features: int, rank: int, world: int, dtype, device):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.shard = Shard.even(in_features, rank, world)
        self.weight = empty_param(out_features, self.shard.size, dtype=dtype, device=device)

    def load(self, reader: WeightReader, name: str) -> None:
        self.weight.copy_(reader.load(f"{name}.weight", (self.out_features, self.in_features), 1, self.shard))

    def pack_weights(self) -> None:
        self.weight = packed_param(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight)
