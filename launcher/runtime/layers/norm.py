"""RMSNorm with its weight (the normalisation itself lives in communicator.rmsnorm, shared with the fused path)."""

from __future__ import annotations

import torch
from torch import nn

from launcher.runtime.communicator import rmsnorm
from launcher.runtime.layers.linear import empty_param
from launcher.runtime.weights import WeightReader


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float, dtype: torch.dtype, device: torch.device):
        super().__init__()
        self.size, self.eps = size, eps
        self.weight = empty_param(size, dtype=dtype, device=device)

    def load(self, reader: WeightReader, name: str) -> None:
        self.weight.copy_(reader.load(f"{name}.weight", (self.size,)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
