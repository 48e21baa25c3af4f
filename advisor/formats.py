"""How people read a boolean and an amount of memory, in every face (the report, `layouts`, the app): one spelling each.

JSON output keeps JSON's ``true`` / ``false`` and plain numbers; an engine's own flag syntax (``fuse_allreduce_rms=True``)
is the engine's. Everything written for a person goes through these two.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

GIB = 2**30
MIB = 2**20


def yes_no(value: bool | None, unknown: str = "?") -> str:
    """True -> "yes", False -> "no", None -> ``unknown``."""
    if value is None:
        return unknown
    return "yes" if value else "no"


def gib(n_bytes: float | None, unknown: str = "?") -> str:
    """Bytes as GiB with one decimal, rounded half up from the exact value: 177,005,608,960 bytes -> "164.9 GiB".

    Always from the bytes (or :func:`gib_of_mib`), never from a GiB figure rounded before: rounding twice writes one
    amount two ways (164.85 -> "164.8" beside 164.8504 -> "164.9")."""
    if n_bytes is None:
        return unknown
    tenths = (Decimal(repr(float(n_bytes))) / GIB).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{tenths} GiB"


def gib_of_mib(mib: float | None, unknown: str = "?") -> str:
    """MiB (as NVML reports GPU memory) as GiB: 81559 -> "79.6 GiB"."""
    return unknown if mib is None else gib(mib * MIB, unknown)
