"""Release and CUDA version numbers, read with packaging.version (PEP 440)."""

from __future__ import annotations

from functools import cache

from packaging.version import Version


@cache  # the rule tables compare the same few release strings many times per plan
def parse_version(text: str | None) -> Version | None:
    """A sortable PEP 440 version ("0.6.18.post1", "0.7.0rc1", "v0.7.4+cu130"); None when missing or not a version."""
    if not text:
        return None
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a number past Python's int-conversion limit
        return None


def release_numbers(text: str | None) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version ("0.5.14.post2" -> (0, 5, 14)); None when missing or not a version."""
    version = parse_version(text)
    return None if version is None else version.release


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
    return parse_version(text) is not None


def at_least(version: str | None, floor: str) -> bool | None:
    """version >= floor in PEP 440 order; None when either is not a version."""
    mine, theirs = parse_version(version), parse_version(floor)
    if mine is None or theirs is None:
        return None
    return mine >= theirs


def release_text(release: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in release)


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """"12.8" (torch's or the driver's CUDA version) -> (12, 8); None when missing or not a version."""
    release = release_numbers(text)
    if release is None or len(release) < 2:
        return None
    return release[0], release[1]
