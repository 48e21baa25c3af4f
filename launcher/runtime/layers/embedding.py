"""Vocab-parallel embedding and LM head: each rank holds ceil(vocab / tp) rows (the last rank zero-padded)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from launcher.runtime.communicator import Communicator
from launcher.runtime.layers.linear import empty_param
from launcher.runtime.layers.onednn import linear, packed_param
from launcher.runtime.weights import Shard, WeightReader


def vocab_shard(vocab: int, rank: int, world: int) -> Shard:
    per_rank = -(-vocab // world)
    return Shard(rank * per_rank, (rank + 1) * per_rank, size=per_rank)


class _VocabSharded(nn.Module):
    """This rank's rows of a [vocab, hidden] weight (the embedding and the LM head split it the same way)."""

    def __init__(self, vocab: int, hidden: int, comm: Communicator, dtype: torch.dtype, device: torch.device):
        super().__init__()
        self.vocab, self.hidden, self.comm = vocab, hidden, comm
        self.shard = vocab_shard(vocab, comm.ctx.rank, comm.world_size)
        self.weight = empty_param(self.shard.size, hidden, dtype=dtype, device=device)

    def load(self, reader: WeightReader, name: str) -> None:
        self.weight.copy_(reader.load(f"{name}.weight", (self.vocab, self.hidden), 0, self.shard))


class VocabParallelEmbedding(_VocabSharded):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.comm.world_size == 1:
            return F.embedding(ids, self.weight)
        local = ids - self.shard.start
        outside = (local < 0) | (local >= self.shard.size)
        out = F.embedding(local.masked_fill(outside, 0), self.weight)
        out.masked_fill_(outside.unsqueeze(-1), 0)
        return self.comm.all_reduce(out)


class ParallelLMHead(_VocabSharded):
    """Logits for this rank's vocab rows, all-gathered to the full vocab (float32, padding removed)."""

    def pack_weights(self) -> None:
        self.weight = packed_param(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.comm.all_gather_last_dim(linear(x, self.weight))
        return logits[..., : self.vocab].float()
