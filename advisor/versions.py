"""Release and CUDA version numbers, read with packaging.version (PEP 440). Cheap to import."""

from __future__ import annotations

from functools import lru_cache

from packaging.version import InvalidVersion, Version


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
    """"0.5.14", "v0.5.14", "0.5.14.post2", "0.5.14rc1", "0.11.2+cu128" -> (0, 5, 14) (PEP 440, packaging.version);
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
