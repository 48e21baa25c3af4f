"""Checks of memory, read from the engine's start-up verdict (``Plan.startup``, advisor.rules.startup).

Whether the weights fit and the KV pool is positive is the start-up model's error (one per engine, the release's own
wording); what is left here warns about a plan that starts but serves little.
"""

from __future__ import annotations

from advisor.rules.checks_context import WARNING
from advisor.rules.engine import Problem
from advisor.rules.startup import Startup


def startup_warnings(startup: Startup | None, engine: str, context_flag: str | None) -> list[Problem]:
    """kv_cache_short: the engine starts, but its KV pool holds no sequence of the context length it will accept."""
    if startup is None or not startup.starts or not startup.context_len or startup.kv_tokens is None:
        return []
    if startup.kv_tokens >= startup.context_len:
        return []
    flag = f"{context_flag} {startup.kv_tokens}" if context_flag else "a shorter context"
    return [
        Problem(
            "kv_cache_short", WARNING,
            f"{engine} starts, but its KV pool ({startup.kv_tokens:,} tokens per pool) holds no full sequence of its"
            f" context length {startup.context_len:,} ({startup.context_source}): longer requests are refused or cut",
            f"pass -- {flag} or less, raise --tp, or use a quantized checkpoint",
            "advisor/rules/startup.py (the engine's start-up model)",
        )
    ]  # fmt: skip
