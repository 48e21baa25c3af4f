"""The decoder-only transformer shared by Llama, Qwen2, Qwen3, Qwen3-MoE and the Qwen3-VL-MoE text backbone.

Residual stream as in vLLM: each sublayer returns a partial sum; `Communicator.add_rmsnorm` allreduces it, adds the
residual and applies the next RMSNorm in one call, which is where FlashInfer's fused kernel plugs in.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from launcher.runtime.communicator import Communicator
from launcher.runtime.config import ModelConfig
from launcher.runtime.layers.attention import Attention, AttentionBatch
from launcher.runtime.layers.embedding import ParallelLMHead, VocabParallelEmbedding
from launcher.runtime.layers.mlp import GatedMLP
from launcher.runtime.layers.moe import MoE
from launcher.runtime.layers.norm import RMSNorm
from launcher.runtime.layers.rotary import RotaryEmbedding
from launcher.runtime.weights import WeightReader


def pack_weights(module: nn.Module) -> None:
    """Put loaded matmul weights in the layout their kernel reads fastest (see layers/onednn.py); once, after loading."""
    for sub in module.modules():
        if hasattr(sub, "pack_weights"):
            sub.pack_weights()


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, index: int, rotary: RotaryEmbedding, comm: Communicator, dtype, device):
        super().__init__()
        rank, world = comm.ctx.rank, comm.world_size
        self.comm = comm
        self.input_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype, device)
        self.attn = Attention(config, rotary, rank, world, dtype, device)
        self.post_attn_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype, device)
        if config.is_moe_layer(index):
            self.mlp = MoE(config, rank, world, dtype, device)
        else:
            self.mlp = GatedMLP(config.hidden_size, config.intermediate_size, rank, world, dtype, device)

    def load(self, reader: WeightReader, prefix: str) -> None:
        self.input_norm.load(reader, f"{prefix}.input_layernorm")
        self.attn.load(reader, f"{prefix}.self_attn")
        self.post_attn_norm.load(reader, f"{prefix}.post_attention_layernorm")
        self.mlp.load(reader, f"{prefix}.mlp")

    def forward(self, partial, residual, at: AttentionBatch):
        """partial: the previous sublayer's unreduced output (or the embeddings with residual None)."""
        if residual is None:
            residual, h = partial, self.input_norm(partial)
        else:
            h, residual = self.comm.add_rmsnorm(partial, residual, self.input_norm.weight, self.input_norm.eps)
        partial = self.attn(h, at)
        h, residual = self.comm.add_rmsnorm(partial, residual, self.post_attn_norm.weight, self.post_attn_norm.eps)
        return self.mlp(h), residual


class CausalLM(nn.Module):
    def __init__(self, config: ModelConfig, comm: Communicator, dtype: torch.dtype, device: torch.device, max_len: int):
        super().__init__()
        self.config, self.comm, self.dtype, self.device = config, comm, dtype, device
        c = config
        self.embed = VocabParallelEmbedding(c.vocab_size, c.hidden_size, comm, dtype, device)
        self.rotary = rotary = RotaryEmbedding(c.head_dim, c.rope_theta, max_len, c.rope_scaling, dtype, device)
        self.layers = nn.ModuleList(DecoderLayer(c, i, rotary, comm, dtype, device) for i in range(c.num_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype, device)
        self.lm_head = ParallelLMHead(c.vocab_size, c.hidden_size, comm, dtype, device)

    def load(self, reader: WeightReader, on_progress: Callable[[], None] = lambda: None) -> None:
        """Read this rank's slices, layer by layer (closing files in between keeps mapped pages out of memory)."""
        p = self.config.weight_prefix
        self.embed.load(reader, f"{p}embed_tokens")
        on_progress()
        for i, layer in enumerate(self.layers):
            layer.load(reader, f"{p}layers.{i}")
            reader.release()
            pack_weights(layer)
            on_progress()
        self.norm.load(reader, f"{p}norm")
        head = f"{p}embed_tokens" if self.config.tie_word_embeddings and not reader.has("lm_head.weight") else "lm_head"
        self.lm_head.load(reader, head)
        reader.release()
        pack_weights(self.lm_head)
        on_progress()
        reader.check_all_used()

    @property
    def load_steps(self) -> int:
        return len(self.layers) + 2

    @torch.inference_mode()
    def forward(
        self, ids: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, at: AttentionBatch | None = None
    ) -> torch.Tensor:
        """ids, positions: [batch, tokens]; slots: [batch] KV-cache slots; `at` when the caller built it (the static
        decode step of cuda_graph.py). Returns final hidden states."""
        if at is None:
            at = AttentionBatch.build(positions, slots, self.rotary)
        partial, residual = self.embed(ids), None
        for layer in self.layers:
            partial, residual = layer(partial, residual, at)
        h, _ = self.comm.add_rmsnorm(partial, residual, self.norm.weight, self.norm.eps)
        return h

    @torch.inference_mode()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)

