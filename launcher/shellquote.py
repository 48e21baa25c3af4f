"""shlex.quote and shlex.join, without importing shlex: shlex imports re (and re imports enum and its compiler), which
cost `advisor check` a fifth of its time (tests/benchmarks/bench_check.py) for the one command line it prints.
The same rule as shlex's (CPython's Lib/shlex.py): a word of only ASCII letters, digits and ``_@%+=:,./-`` stays as it
is, the empty word is ``''``, anything else is single-quoted with each ``'`` written ``'"'"'``.
tests/test_shellquote.py holds both to shlex's over generated words.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which costs `advisor check`
if TYPE_CHECKING:
    from collections.abc import Iterable

SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def quote(word: str) -> str:
    """``shlex.quote(word)``."""
    if not word:
        return "''"
    if SAFE.issuperset(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def join(words: Iterable[str]) -> str:
    """``shlex.join(words)``."""
    return " ".join(quote(word) for word in words)
