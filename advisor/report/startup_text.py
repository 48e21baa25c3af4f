"""The start-up verdict and its arithmetic as lines of text (`advisor explain`, the app): one wording for every face."""

from __future__ import annotations

from advisor.rules.startup import Startup

GIB = 1024**3


def _gib(value: float | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f} GiB"


def verdict_line(startup: Startup, engine: str) -> str:
    if startup.error is not None:
        return f"{engine} will not start: {startup.error.engine_message}"
    if startup.starts:
        return f"{engine} starts"
    return f"cannot tell whether {engine} starts" + (f": {startup.unknown}" if startup.unknown else "")


def startup_lines(startup: Startup | None, engine: str, fraction_name: str | None = None) -> list[str]:
    """The verdict first, then the figures it rests on, the fixes when it fails, and the estimates with their margin."""
    if startup is None:
        return [f"no start-up verdict: {engine} has no start-up model, or the plan has no model"]
    lines = [verdict_line(startup, engine)]
    if startup.context_len:
        lines.append(f"context: {startup.context_len:,} tokens ({startup.context_source})")
    if startup.total_bytes is not None:
        memory = f"GPU (tightest): {_gib(startup.total_bytes)}; weights {_gib(startup.weights_bytes)} per GPU"
        if startup.reserve_bytes is not None:
            memory += f"; kept outside the KV pool {_gib(startup.reserve_bytes)}"
        if startup.fraction is not None:
            memory += f" ({fraction_name or 'memory fraction'} {startup.fraction:g})"
        lines.append(memory)
    if startup.kv_tokens is not None:
        pools = f" x {startup.kv_pools} pools" if startup.kv_pools > 1 else ""
        held = (
            f", {startup.sequences} sequences of {startup.context_len:,} tokens"
            if startup.sequences is not None and startup.context_len
            else ""
        )
        lines.append(f"KV pool: {startup.kv_tokens:,} tokens{pools}{held}")
    if startup.error is not None:
        lines.append(f"arithmetic: {startup.error.explanation}")
        lines += [f"fix ({i}): {fix}" for i, fix in enumerate(startup.error.fixes, 1)]
        lines.append(f"source: {startup.error.source}")
    lines += [f"estimate: {note}" for note in startup.estimates]
    return lines
