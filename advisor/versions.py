"""Release and CUDA version numbers, read with packaging.version (PEP 440).

packaging.version is imported on the first version that is more than digits and dots: importing it compiles its large
version pattern, the costliest single import of `advisor check` (tests/benchmarks/bench_check.py), while most strings
a plan reads ("0.5.23", "12.8") are plain numbers whose release tuple is simply the numbers (packaging reads them so
too: tests/test_versions.py holds the shortcut to packaging's reading).
"""

from __future__ import annotations

from advisor.memo import memo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.version import Version

_PLAIN = frozenset(".0123456789")


def parse_version(text: str | None) -> Version | None:
    """A sortable PEP 440 version ("0.6.18.post1", "0.7.0rc1", "v0.7.4+cu130"); None when missing or not a version."""
    if not text:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        return None


@memo  # the rule tables compare the same few release strings many times per plan
def release_numbers(text: str | None) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version ("0.5.14.post2" -> (0, 5, 14)); None when missing or not a version."""
    if not text:
        return None
    parts = text.split(".")
    if _PLAIN.issuperset(text) and "" not in parts:  # plain "0.5.23": the numbers are the release
        return tuple(int(part) for part in parts)
    version = parse_version(text)
    return None if version is None else version.release


@memo  # a plan asks for the same few releases about a thousand times
def parse_release(text: str | None) -> tuple[int, int, int] | None:
    """"0.5.14", "v0.5.14", "0.5.14.post2", "0.5.14rc1", "0.11.2+cu128" -> (0, 5, 14) (PEP 440, packaging.version);
    None when it is not a version with at least X.Y."""
    release = release_numbers(text)
    if release is None or len(release) < 2:
        return None
    major, minor, patch = (*release, 0)[:3]
    return major, minor, patch


def is_version(text: str | None) -> bool:
    """A PEP 440 version string (packaging.version reads it)."""
    return release_numbers(text) is not None


def at_least(version: str | None, floor: str) -> bool | None:
    """version >= floor in PEP 440 order; None when either is not a version."""
    mine, theirs = release_numbers(version), release_numbers(floor)
    if mine is None or theirs is None:
        return None
    if _PLAIN.issuperset(version) and _PLAIN.issuperset(floor):  # plain releases: PEP 440 ignores trailing zeros
        return _without_trailing_zeros(mine) >= _without_trailing_zeros(theirs)
    return parse_version(version) >= parse_version(floor)


def _without_trailing_zeros(release: tuple[int, ...]) -> tuple[int, ...]:
    end = len(release)
    while end > 1 and release[end - 1] == 0:
        end -= 1
    return release[:end]


def release_text(release: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in release)


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """"12.8" (torch's or the driver's CUDA version) -> (12, 8); None when missing or not a version."""
    release = release_numbers(text)
    if release is None or len(release) < 2:
        return None
    return release[0], release[1]
