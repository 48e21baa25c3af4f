"""Shared fixtures: keep them small and generic (others may add fixtures here, additively)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def empty_hf_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Model lookups see an empty Hugging Face cache, whatever this machine has downloaded."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)


@pytest.fixture
def fake_nvml() -> Callable:
    """``fake_nvml("h200-8")`` or ``fake_nvml(facts)``: a fake pynvml replaying that machine (see tests/fakes)."""
    from fakes.fake_nvml import FakeNvml

    from advisor.facts import Facts
    from advisor.probe.profiles import load_profile

    def make(machine: str | Facts) -> FakeNvml:
        return FakeNvml(load_profile(machine) if isinstance(machine, str) else machine)

    return make


@pytest.fixture
def make_dist(tmp_path: Path) -> Callable:
    """Fake an installed distribution in ``tmp_path / "site"``, the way pip lays it out.

    ``make_dist("flashinfer-jit-cache", "0.6.11+cu128", files={"flashinfer_jit_cache/_build_meta.py": '__version__ = "0.6.11+cu128"'})``
    writes ``flashinfer_jit_cache-0.6.11+cu128.dist-info/METADATA`` and the files; ``metadata=`` replaces METADATA's text
    (bytes allowed, None writes no METADATA). Returns the site directory, to pass as a path entry.
    """
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)

    def make(name: str, version: str, files: dict[str, str] | None = None, metadata: str | bytes | None = "") -> Path:
        dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir()
        if metadata == "":
            metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        if isinstance(metadata, bytes):
            (dist_info / "METADATA").write_bytes(metadata)
        elif metadata is not None:
            (dist_info / "METADATA").write_text(metadata, encoding="utf-8")
        for rel, text in (files or {}).items():
            target = site / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return site

    return make
