"""conformance/release_json.py, the write step both flags commands share: the stored goldens come back byte for byte,
and a release lands in version order whatever order it was run in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import release_json
from conformance.sglang import flags as sglang_flags
from conformance.vllm import flags as vllm_flags


@pytest.mark.parametrize("harness", [sglang_flags, vllm_flags], ids=["sglang", "vllm"])
def test_rewriting_a_stored_golden_changes_nothing(harness, tmp_path: Path):
    stored = harness.OUT.read_text()
    out = tmp_path / "cli_flags.json"
    out.write_text(stored)
    data = release_json.load(out, harness.ABOUT)
    last = list(data["releases"])[-1]
    release_json.store(out, data, last, data["releases"][last])
    assert out.read_text() == stored


def test_a_release_is_stored_in_version_order(tmp_path: Path):
    out = tmp_path / "new.json"
    data = release_json.load(out, "about")
    for release in ("0.10.0", "0.9.2", "0.10.0rc1"):
        release_json.store(out, data, release, [release])
    text = out.read_text()
    assert list(json.loads(text)["releases"]) == ["0.9.2", "0.10.0rc1", "0.10.0"]
    assert text.count("\n") == 3 + 3 + 2  # one release a line
