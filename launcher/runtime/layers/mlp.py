"""Gated (SwiGLU) MLP: gate and up column-parallel in one matmul, down row-parallel."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from launcher.runtime.layers.linear import ColumnParallelLinear, RowParallelLinear
from launcher.runtime.weights import Shard, WeightReader


class GatedMLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int, rank: int, world: int, dtype, device):
        super().__init__()
        shard = Shard.even(intermediate, rank, world)
        self.gate_up = ColumnParallelLinear(hidden, [(intermediate, shard), (intermediate, shard)], False, dtype, device)
        self.down = RowParallelLinear(intermediate, hidden, rank, world, dtype, device)

    def load(self, reader: WeightReader, prefix: str) -> None:
        self.gate_up.load(reader, [f"{prefix}.gate_proj", f"{prefix}.up_proj"])
        self.down.load(reader, f"{prefix}.down_proj")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)
