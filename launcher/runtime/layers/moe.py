"""Mixture of experts with tensor-parallel experts (Qwen3-MoE, Qwen3-VL-MoE).

The router is replicated; every expert is split along its intermediate dimension, so each rank computes a partial sum
for every routed token and the usual allreduce completes it (no all-to-all).

Two ways to run the experts, picked per call by `use_dense`:
- dense (few tokens, e.g. decode): every expert on every token in two matmuls over all experts' weights laid side by
  side, the intermediate activations scaled by a [tokens, experts] routing matrix that is zero outside each token's
  top-k. With tokens x top_k >= experts nearly every expert is routed to anyway, so its weights are read once either
  way; the dense form does it in a handful of ops instead of a Python loop with a host sync, at the price of
  experts / top_k times the (here small) arithmetic.
- grouped (many tokens, e.g. prefill): (token, k) pairs sorted by expert, one matmul pair per expert that received
  tokens, so the arithmetic stays at top_k experts per token.
Weights: gate_up [experts, 2 x local, hidden] (gate rows then up rows per expert) and down [hidden, experts, local], so
that both flatten for free to the dense form's two matrices [experts x 2 x local, hidden] and [hidden, experts x local]
and slice per expert for the grouped form. On CPU in float32 the dense matrices are also kept in oneDNN's prepacked
layout (layers/onednn.py): 1.4x faster decode on the demo model, for a second copy of the expert weights in memory.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from launcher.runtime.config import ModelConfig
from launcher.runtime.layers.linear import empty_param
from launcher.runtime.layers.onednn import can_pack, linear, pack, packed_param
from launcher.runtime.weights import Shard, WeightReader

# Beyond this many tokens the dense form's extra arithmetic (experts / top_k times the routed work) outweighs the
# saved loop; measured on CPU, demo shape (8 experts, top 2): dense 1.6x faster at 16 tokens, even at 32, 2x slower at 64.
DENSE_MAX_TOKENS = 32


def use_dense(tokens: int, num_experts: int, top_k: int) -> bool:
    """Dense when nearly every expert receives a token anyway and the extra arithmetic stays small."""
    return tokens * top_k >= num_experts and tokens <= DENSE_MAX_TOKENS


class MoE(nn.Module):
    # Set while a CUDA graph is captured (cuda_graph.py): below the dense form's range, take the gathered path, which
    # never asks the host how many tokens each expert got.
    sync_free = False

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
        self.down = empty_param(self.hidden, self.num_experts, local, dtype=dtype, device=device)
        # the dense form's matrices: views of the above, or prepacked copies on CPU (set by pack_weights)
        self.dense_gate_up: torch.Tensor = self.gate_up.view(-1, self.hidden)
        self.dense_down: torch.Tensor = self.down.view(self.hidden, -1)

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
            self.down[:, expert].copy_(reader.load(f"{base}.down_proj.weight", (h, i), 1, self.shard))

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
            self.down.copy_(reader.load(name, (e, h, i), 2, self.shard).transpose(0, 1))
        else:
            self.down.copy_(reader.load(name, (e, i, h), 1, self.shard).permute(2, 0, 1))

    def pack_weights(self) -> None:
        self.router = packed_param(self.router)
        if can_pack(self.dense_gate_up):  # copies beside gate_up/down, which the grouped form still slices
            self.dense_gate_up, self.dense_down = pack(self.dense_gate_up), pack(self.dense_down)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, self.hidden)
        probs = F.softmax(linear(x, self.router), dim=-1, dtype=torch.float)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(x.dtype)
        if use_dense(x.shape[0], self.num_experts, self.top_k):
            out = self._dense(x, weights, experts)
        elif self.sync_free and x.shape[0] <= DENSE_MAX_TOKENS:
            out = self._gathered(x, weights, experts)
        else:
            out = self._grouped(x, weights, experts)
        return out.view(shape)

    def _dense(self, x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """All experts on all tokens; each expert's activations scaled by its routing weight (zero when not routed)
        before one down matmul sums the experts. `where`, not a bare multiply, so an overflow in an expert the token
        does not use cannot turn into NaN (0 x inf)."""
        tokens, local = x.shape[0], self.shard.size
        gate, up = linear(x, self.dense_gate_up).view(tokens, self.num_experts, 2 * local).chunk(2, dim=-1)
        routing = torch.zeros(tokens, self.num_experts, 1, dtype=x.dtype, device=x.device)
        routing.scatter_(1, experts.unsqueeze(-1), weights.unsqueeze(-1))
        act = torch.where(routing != 0, F.silu(gate) * up * routing, 0.0)
        return linear(act.view(tokens, -1), self.dense_down)

    def _gathered(self, x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """Each (token, k) pair multiplied by a copy of its expert's weights (batched matmuls): fixed shapes and no
        host sync, and only the routed experts' weights are read; for the few tokens of a decode step."""
        tokens, pairs = x.shape[0], experts.numel()
        flat = experts.flatten()
        # [pairs, hidden, 1], pair = token * top_k + k (expand, not repeat_interleave: its output size is never in doubt)
        xs = x.unsqueeze(1).expand(tokens, self.top_k, self.hidden).reshape(pairs, self.hidden, 1)
        gate, up = torch.bmm(self.gate_up[flat], xs).squeeze(-1).chunk(2, dim=-1)
        down = self.down[:, flat].transpose(0, 1)  # [pairs, hidden, local]
        y = torch.bmm(down, (F.silu(gate) * up).unsqueeze(-1)).view(pairs, self.hidden)
        return (y * weights.reshape(pairs, 1)).view(tokens, self.top_k, self.hidden).sum(dim=1)

    def _grouped(self, x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """(token, k) pairs grouped by expert: one matmul pair per expert that received tokens."""
        out = torch.zeros_like(x)
        flat_experts = experts.flatten()
        order = flat_experts.argsort(stable=True)
        counts = torch.bincount(flat_experts, minlength=self.num_experts).tolist()  # host sync: sizes the loop
        token_of = order // self.top_k
        weight_of = weights.flatten()[order]
        start = 0
        for expert, count in enumerate(counts):
            if count == 0:
                continue
            tokens = token_of[start : start + count]
            gate, up = F.linear(x[tokens], self.gate_up[expert]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, self.down[:, expert]) * weight_of[start : start + count, None]
            out.index_add_(0, tokens, y)
            start += count
        return out
