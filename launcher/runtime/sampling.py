"""Next-token choice: greedy, or temperature + top-p with a per-sequence seeded generator.

Every rank holds the same logits (all-gathered) and the same generators, and the engine broadcasts rank 0's choice
anyway, so all ranks continue with identical tokens.

Numerically safe for every value the API accepts (temperature in [0, 2], top_p in (0, 1]): the arithmetic runs in
float64; temperatures below GREEDY_BELOW are greedy (logits / 1e-39 overflows even float64 for ordinary logits, and
the distribution is one-hot long before that); the top-p prefix always keeps the best token (top_p = 1e-46 is 0 in
float32); non-finite logits are masked; and a distribution that still degenerates (zero or non-finite mass) falls back
to the greedy token. `sample` never raises for one row's values, so one request cannot stop the engine loop.
"""

from __future__ import annotations

import torch

GREEDY_BELOW = 1e-4  # a temperature below this is greedy: at 1e-4 a logit gap of 0.01 is already a factor e**100


def make_generator(seed: int) -> torch.Generator:
    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    return generator


def is_greedy(temperature: float) -> bool:
    return not temperature >= GREEDY_BELOW  # nan is greedy too


def _argmax(logits: torch.Tensor) -> int:
    """The best token, ignoring NaN (token 0 when every logit is NaN)."""
    return int(torch.nan_to_num(logits.double(), nan=float("-inf")).argmax())


def sample_one(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None) -> int:
    """logits: [vocab] on CPU, any float dtype."""
    if is_greedy(temperature) or generator is None:
        return _argmax(logits)
    scaled = torch.nan_to_num(logits.double(), nan=float("-inf"), posinf=float("inf")) / float(temperature)
    if not torch.isfinite(scaled).any() or torch.isposinf(scaled).any():
        return _argmax(logits)
    probs = torch.softmax(scaled, dim=-1)
    if not top_p >= 1.0:
        sorted_probs, order = probs.sort(descending=True)
        # keep the smallest prefix whose mass reaches top_p, and always the best token
        keep = (sorted_probs.cumsum(-1) - sorted_probs) < top_p
        keep[0] = True
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs * keep)
    total = float(probs.sum())
    if not (total > 0 and total < float("inf")) or not bool(torch.isfinite(probs).all()):
        return _argmax(logits)
    return int(torch.multinomial(probs / total, 1, generator=generator))


def sample(logits: torch.Tensor, params: list, generators: list) -> list[int]:
    """logits: [batch, vocab]; params/generators per row. Greedy rows take one batched argmax."""
    if all(is_greedy(p.temperature) for p in params):
        return logits.argmax(dim=-1).tolist()
    logits = logits.cpu()
    return [_sample_row(row, p, g) for row, p, g in zip(logits, params, generators, strict=True)]


def _sample_row(logits: torch.Tensor, params: object, generator: torch.Generator | None) -> int:
    """One row; whatever goes wrong with this row's values, it gets the greedy token (the same on every rank) and the
    other rows and the engine loop carry on."""
    try:
        return sample_one(logits, params.temperature, params.top_p, generator)  # type: ignore[attr-defined]
    except (RuntimeError, ValueError, TypeError, OverflowError, ZeroDivisionError):
        return _argmax(logits)
