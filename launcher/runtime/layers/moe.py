"""Mixture of experts with tensor-parallel experts (Qwen3-MoE, Qwen3-VL-MoE).

The router is replicated; every expert is split along its intermediate dimension, so each rank computes a partial sum
for every routed token and the usual allreduce completes it (no all-to-all).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from launcher.runtime.config import ModelConfig
from launcher.runtime.layers.linear import empty_param
from launcher.runtime.weights import Shard, WeightReader


class MoE(nn.Module):
    def __init__(self, config: ModelConfig, rank: int, world: int, dtype, device):
        super().__init__()
        self.num_experts, self.top_k = config.num_experts, config.num_experts_per_tok
        self.norm_topk_prob = config.norm_topk_prob
        self.hidden, self.intermediate = config.hidden_size, config.moe_intermediate_size
        self.fused_checkpoint = config.fused_experts
        self.shard = Shard.even(self.intermediate, rank, world)
        local = self.shard.size
        self.router = empty_param(self.num_experts, self.hidden, dtype=dtype, device=device)
        self.gate_up = empty_param(self.num_experts, 2 * local, self.hidden, dtype=dtype, device=device)
        self.down = empty_param(self.num_experts, self.hidden, local, dtype=dtype, device=device)

    def load(self, reader: WeightReader, prefix: str) -> None:
        e, h, i, local = self.num_experts, self.hidden, self.intermediate, self.shard.size
        self.router.copy_(reader.load(f"{prefix}.gate.weight", (e, h)))
        if self.fused_checkpoint:
            self._load_fused(reader, prefix)
            return
        for expert in range(e):
            base = f"{prefix}.experts.{expert}"
            self.gate_up[expert, :local].copy_(reader.load(f"{base}.gate_proj.weight", (i, h), 0, self.shard))
            self.gate_up[expert, local:].copy_(reader.load(f"{base}.up_proj.weight", (i, h), 0, self.shard))
            self.down[expert].copy_(reader.load(f"{base}.down_proj.weight", (h, i), 1, self.shard))

    def _load_fused(self, reader: WeightReader, prefix: str) -> None:
        """Qwen3-VL-MoE's stacked experts, in either layout transformers accepts: the released checkpoints' one
        (gate_up_proj [E, hidden, 2*I], gate then up along the last dim; down_proj [E, I, hidden]) or transformers'
        in-memory one that its save_pretrained writes ([E, 2*I, hidden], [E, hidden, I]). As in transformers, a shape
        that fits both is taken as the in-memory layout."""
        e, h, i, local = self.num_experts, self.hidden, self.intermediate, self.shard.size
        gate, up = self.shard, Shard(i + self.shard.start, i + self.shard.stop)
        name = f"{prefix}.experts.gate_up_proj"
        if reader.shape(name) == (e, 2 * i, h):
            self.gate_up[:, :local].copy_(reader.load(name, (e, 2 * i, h), 1, gate))
            self.gate_up[:, local:].copy_(reader.load(name, (e, 2 * i, h), 1, up))
        else:
            self.gate_up[:, :local].copy_(reader.load(name, (e, h, 2 * i), 2, gate).transpose(1, 2))
            self.gate_up[:, local:].copy_(reader.load(name, (e, h, 2 * i), 2, up).transpose(1, 2))
        name = f"{prefix}.experts.down_proj"
        if reader.shape(name) == (e, h, i):
            self.down.copy_(reader.load(name, (e, h, i), 2, self.shard))
        else:
            self.down.copy_(reader.load(name, (e, i, h), 1, self.shard).transpose(1, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, self.hidden)
        probs = F.softmax(F.linear(x, self.router), dim=-1, dtype=torch.float)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(x.dtype)
        out = torch.zeros_like(x)
        # group the (token, k) pairs by expert: one matmul pair per expert that received tokens
        flat_experts = experts.flatten()
        order = flat_experts.argsort(stable=True)
        counts = torch.bincount(flat_experts, minlength=self.num_experts).tolist()
        token_of = order // self.top_k
        weight_of = weights.flatten()[order]
        start = 0
        for expert, count in enumerate(counts):
            if count == 0:
                continue
            tokens = token_of[start : start + count]
            gate, up = F.linear(x[tokens], self.gate_up[expert]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, self.down[expert]) * weight_of[start : start + count, None]
            out.index_add_(0, tokens, y)
            start += count
        return out.view(shape)
