"""Will it start? What an engine computes about GPU memory when it starts, and whether it then refuses to.

Each engine package computes a :class:`Startup` for a scenario under its release (``Engine.startup``): the weights on
the tightest GPU, the memory it keeps outside the KV cache, the KV pool it carves from the rest, the sequences of the
context length it will use that the pool holds, and the start-up error the release raises when something does not fit,
worded as the release words it. The plan computes it once (``Plan.startup``); `check`, `layouts`, `launch`, `explain`
and the app all read that one verdict, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.problem import Problem

ERROR, INFO = "error", "info"

STARTUP_UNKNOWN = "startup_unknown"  # the problem id when the verdict cannot be told (a fact it needs is unknown)


@dataclass(frozen=True, slots=True)
class StartupError:
    """A start-up failure the release raises for this plan."""

    id: str  # the problem id, stable (docs/architecture.md): "startup_out_of_memory", "kv_cache_too_small", ...
    engine_message: str  # what the release prints, its numbers filled in
    explanation: str  # the arithmetic behind it, with this plan's numbers
    fixes: tuple[str, ...]  # ranked, most direct first, each with numbers ("--tp 4 (the smallest tp that fits)")
    source: str  # release, file, function


@dataclass(frozen=True, slots=True)
class Startup:
    """The engine's start-up arithmetic for one plan, on its tightest GPU (the smallest memory the engine uses).

    Byte figures are per GPU. ``starts`` is None when a fact the arithmetic needs is unknown (``unknown`` says which);
    ``estimates`` names each figure the release measures at start-up and the advisor can only estimate, with its
    margin."""

    context_len: int | None  # the sequence length the engine will use: the flag's, else its own default
    context_source: str  # where context_len comes from ("--context-length", "the model's max_position_embeddings")
    starts: bool | None
    total_bytes: float | None = None  # the tightest GPU's memory
    weights_bytes: float | None = None
    reserve_bytes: float | None = None  # kept outside the KV pool: activations, CUDA graphs, non-torch memory
    fraction: float | None = None  # mem_fraction_static / gpu_memory_utilization as resolved
    kv_tokens: int | None = None  # one KV pool's capacity, as the engine logs it
    kv_pools: int = 1  # pools of that size (attention-DP ranks under DP attention)
    sequences: int | None = None  # sequences of context_len held at once, over all pools
    error: StartupError | None = None
    unknown: str | None = None
    estimates: tuple[str, ...] = ()

    @property
    def total_kv_tokens(self) -> int:
        return (self.kv_tokens or 0) * self.kv_pools


def startup_problems(startup: Startup | None, engine: str) -> list[Problem]:
    """The plan's problems from its start-up verdict: the release's error as an error; a verdict that cannot be told as
    info naming the missing fact."""
    if startup is None:
        return []
    if startup.error is not None:
        err = startup.error
        fixes = "; ".join(f"({i}) {fix}" for i, fix in enumerate(err.fixes, 1)) if len(err.fixes) > 1 else "".join(err.fixes)
        return [Problem(err.id, ERROR, f"{engine} will not start: {err.engine_message} ({err.explanation})", fixes,
                        err.source)]  # fmt: skip
    if startup.starts is None and startup.unknown:
        return [Problem(STARTUP_UNKNOWN, INFO, f"cannot tell whether {engine} starts: {startup.unknown}",
                        "give the missing fact (a model directory with config.json, --facts from the GPU node)",
                        "advisor/rules/startup.py")]  # fmt: skip
    return []


def sequences_held(kv_tokens: int | None, pools: int, context_len: int | None) -> int | None:
    """Sequences of ``context_len`` tokens the pools hold at once (each sequence lives in one pool)."""
    if kv_tokens is None or not context_len:
        return None
    return pools * (max(kv_tokens, 0) // context_len)

