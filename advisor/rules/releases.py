"""Looking a value up by engine release: the one way both engines' tables are read.

Every table row holds from a ``first`` release. A change list (vLLM's tables) is a sequence of (first, value) pairs,
oldest first, each holding until the next one's first: ``at`` reads it. A row that holds for releases first..last
(SGLang's tables, where several rows may hold at once) is tested with ``within``; its ``last`` is None while the row
still holds in the newest modelled release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from advisor.versions import parse_release

if TYPE_CHECKING:
    from collections.abc import Sequence

T = TypeVar("T")


def at(table: Sequence[tuple[str, T]], version: str) -> T:
    """The value of a change list for ``version``: the newest entry at or below it; the first entry for older ones."""
    release = parse_release(version)
    value = table[0][1]
    for first, entry in table:
        if parse_release(first) <= release:
            value = entry
    return value


def within(version: str | tuple[int, ...], first: str, last: str | None) -> bool:
    """Whether ``version`` (text or parsed) lies in first..last; ``last`` None: no newer release ends the row."""
    release = parse_release(version) if isinstance(version, str) else version
    return parse_release(first) <= release and (last is None or release <= parse_release(last))
