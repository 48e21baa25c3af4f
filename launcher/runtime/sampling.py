"""Next-token choice: greedy, or temperature + top-p with a per-sequence seeded generator.

Every rank holds the same logits (all-gathered) and the same generators, and the engine broadcasts rank 0's choice
anyway, so all ranks continue with identical tokens.
"""

from __future__ import annotations

import torch


def make_generator(seed: int) -> torch.Generator:
    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    return generator


def sample_one(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None) -> int:
    """logits: [vocab] float32 on CPU."""
    if temperature <= 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(descending=True)
        # keep the smallest prefix whose mass reaches top_p (always at least the best token)
        keep = (sorted_probs.cumsum(-1) - sorted_probs) < top_p
        sorted_probs = sorted_probs * keep
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))


def sample(logits: torch.Tensor, params: list, generators: list) -> list[int]:
    """logits: [batch, vocab]; params/generators per row. Greedy rows take one batched argmax."""
    if all(p.temperature <= 0 for p in params):
        return logits.argmax(dim=-1).tolist()
    logits = logits.float().cpu()
    return [sample_one(row, p.temperature, p.top_p, g) for row, p, g in zip(logits, params, generators, strict=True)]
