"""Release and CUDA version numbers, read as PEP 440 versions. Cheap to import.

``Version`` reads a version exactly as ``packaging.version.Version`` does (what is valid, the release numbers, the
order), written out here because importing packaging.version compiles its large version pattern, which cost
`advisor check` more than any other import (tests/benchmarks/bench_check.py). tests/test_versions.py holds it to
packaging's reading, over generated strings.
"""

from __future__ import annotations

from functools import lru_cache

_DIGITS = frozenset("0123456789")
_SIMPLE = frozenset(".0123456789")
_LOCAL_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
_SEPARATORS = "._-"
# PEP 440 spellings, tried in this order (as packaging's pattern does), and the name each one means.
_PRE_WORDS = ("alpha", "a", "beta", "b", "preview", "pre", "c", "rc")
_PRE_NAMES = {"alpha": "a", "beta": "b", "preview": "rc", "pre": "rc", "c": "rc"}
_POST_WORDS = ("post", "rev", "r")
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}  # a dev-only release ranks -1, a release without pre-release 3


class InvalidVersion(ValueError):
    """Not a PEP 440 version (packaging.version.InvalidVersion)."""


class Version:
    """A PEP 440 version: ``release`` (the numbers), ordered and equal as packaging.version.Version orders them."""

    __slots__ = ("_key", "_text", "release")

    def __init__(self, text: str) -> None:
        parsed = _parse(text)
        if parsed is None:
            raise InvalidVersion(f"Invalid version: {text!r}")
        epoch, release, pre, post, dev, local = parsed
        self._text = text
        self.release: tuple[int, ...] = release
        self._key = _sort_key(epoch, release, pre, post, dev, local)

    def __repr__(self) -> str:
        return f"<Version({self._text!r})>"

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return self._key == other._key if isinstance(other, Version) else NotImplemented

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key if isinstance(other, Version) else NotImplemented

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key if isinstance(other, Version) else NotImplemented

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key if isinstance(other, Version) else NotImplemented

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key if isinstance(other, Version) else NotImplemented


@lru_cache(maxsize=1024)  # a plan reads the same few versions (torch's CUDA, flashinfer's) many times
def _parse(text: str) -> tuple | None:
    """(epoch, release, pre, post, dev, local) of a PEP 440 version, None when it is not one.

    The grammar of packaging's VERSION_PATTERN, read left to right: every part after the release is optional and, once
    it matches, kept (the pattern's possessive quantifiers), each alternative tried in the pattern's order."""
    if _SIMPLE.issuperset(text):  # "0.5.14", "12.8": digits and dots only, as packaging's own shortcut
        parts = text.split(".")
        return None if "" in parts else (0, tuple(int(part) for part in parts), None, None, None, None)
    s = text.strip()
    if not s.isascii():  # the pattern's parts match ASCII only (surrounding Unicode whitespace is stripped)
        return None
    s = s.lower()
    n = len(s)

    def digits_end(i: int) -> int:
        while i < n and s[i] in _DIGITS:
            i += 1
        return i

    def after_separator(i: int) -> int:
        return i + 1 if i < n and s[i] in _SEPARATORS else i

    def word_at(i: int, words: tuple[str, ...]) -> str | None:
        return next((w for w in words if s.startswith(w, i)), None)

    i = 1 if s.startswith("v") else 0
    end = digits_end(i)
    if end == i:
        return None
    epoch = 0
    if end < n and s[end] == "!":
        epoch, i = int(s[i:end]), end + 1
        end = digits_end(i)
        if end == i:
            return None
    release = [int(s[i:end])]
    i = end
    while i < n and s[i] == "." and (end := digits_end(i + 1)) > i + 1:
        release.append(int(s[i + 1 : end]))
        i = end

    pre = post = dev = local = None
    j = after_separator(i)
    word = word_at(j, _PRE_WORDS)
    if word is not None:
        j = after_separator(j + len(word))
        end = digits_end(j)
        pre, i = (_PRE_NAMES.get(word, word), int(s[j:end] or 0)), end
    if i < n and s[i] == "-" and (end := digits_end(i + 1)) > i + 1:  # "1.0-1": an implicit post-release
        post, i = ("post", int(s[i + 1 : end])), end
    else:
        j = after_separator(i)
        word = word_at(j, _POST_WORDS)
        if word is not None:
            j = after_separator(j + len(word))
            end = digits_end(j)
            post, i = ("post", int(s[j:end] or 0)), end
    j = after_separator(i)
    if s.startswith("dev", j):
        j = after_separator(j + 3)
        end = digits_end(j)
        dev, i = ("dev", int(s[j:end] or 0)), end
    if i < n and s[i] == "+":
        parts = s[i + 1 :].replace("_", ".").replace("-", ".").split(".")
        if not all(part and _LOCAL_CHARS.issuperset(part) for part in parts):
            return None
        local = tuple(int(part) if part.isdigit() else part for part in parts)
        i = n
    if i != n:
        return None
    return epoch, tuple(release), pre, post, dev, local


def _sort_key(epoch: int, release: tuple[int, ...], pre, post, dev, local) -> tuple:  # noqa: ANN001
    """PEP 440 order as a tuple (packaging's _cmpkey): trailing zeros do not count, a dev-only release comes before its
    pre-releases, a release without pre-release after them, post-releases after, a local label after none."""
    kept = len(release)
    while kept and release[kept - 1] == 0:
        kept -= 1
    trimmed = release[:kept]
    if pre is None:
        pre_rank, pre_n = (-1 if post is None and dev is not None else 3), 0
    else:
        pre_rank, pre_n = _PRE_RANK[pre[0]], pre[1]
    suffix = (pre_rank, pre_n, 0 if post is None else 1, 0 if post is None else post[1],
              1 if dev is None else 0, 0 if dev is None else dev[1])  # fmt: skip
    if local is None:
        return epoch, trimmed, suffix
    return epoch, trimmed, suffix, tuple((part, "") if isinstance(part, int) else (-1, part) for part in local)


def parse_version(text: str | None) -> Version | None:
    """A sortable PEP 440 version ("0.6.18.post1", "0.7.0rc1", "v0.7.4+cu130"); None when missing or not a version."""
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


@lru_cache(maxsize=256)  # the rule tables compare the same few release strings many times per plan
def parse_release(text: str | None) -> tuple[int, int, int] | None:
    """"0.5.14", "v0.5.14", "0.5.14.post2", "0.5.14rc1", "0.11.2+cu128" -> (0, 5, 14) (PEP 440);
    None when it is not a version with at least X.Y."""
    version = parse_version(text)
    if version is None or len(version.release) < 2:
        return None
    major, minor, patch = (*version.release, 0)[:3]
    return major, minor, patch


def release_text(release: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in release)


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """"12.8" (torch's or the driver's CUDA version) -> (12, 8); None when missing or not a version."""
    version = parse_version(text)
    if version is None or len(version.release) < 2:
        return None
    return version.release[0], version.release[1]
