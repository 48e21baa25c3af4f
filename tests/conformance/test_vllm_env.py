"""The vLLM environment builder's bookkeeping (conformance/vllm/env.py): which built release seeds a new one, and that
scenarios missing a module are the only ones resolved again. pip and the resolver are replaced: both need the network
or a release's environment, which the test suite does not have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.vllm import env


def _built(cache: Path, version: str, modules: tuple[str, ...]) -> None:
    root = cache / f"vllm-{version}"
    for module in modules:
        (root / "deps" / module).mkdir(parents=True)
        (root / "deps" / module / "__init__.py").write_text("")
    (root / "ready").write_text("ok\n")


@pytest.mark.parametrize(
    ("version", "seed", "triton"),
    [("0.14.1", "0.12.0", True), ("0.15.1", "0.12.0", False), ("0.31.0", "0.33.0", False), ("0.26.0", "0.25.1", False)],
)
def test_seed_is_the_nearest_built_release(tmp_path, monkeypatch, version, seed, triton):
    monkeypatch.setattr(env, "CACHE", tmp_path)
    for built in ("0.12.0", "0.25.1", "0.33.0"):
        _built(
            tmp_path,
            built,
            ("triton", f"from_{built.replace('.', '_')}")
            if built == "0.12.0"
            else (f"from_{built.replace('.', '_')}",),
        )
    deps = tmp_path / "new" / "deps"
    env._seed(deps, version)
    assert (deps / f"from_{seed.replace('.', '_')}").is_dir()
    assert (deps / "triton").exists() is triton  # only a release before 0.15 keeps triton


def test_seed_without_a_built_release_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(env, "CACHE", tmp_path)
    env._seed(tmp_path / "deps", "0.14.1")
    assert not (tmp_path / "deps").exists()


def test_complete_resolves_again_only_the_scenarios_that_missed_a_module(tmp_path, monkeypatch):
    monkeypatch.setattr(env, "CACHE", tmp_path)
    (tmp_path / "vllm-0.14.1" / "deps").mkdir(parents=True)
    installed: list[str] = []
    resolved_again: list[list[str]] = []
    monkeypatch.setattr(env, "_install", lambda version, module, pins, deps, log: installed.append(module))

    def resolver(version, scenarios, out):
        ids = [item["id"] for item in json.loads(Path(scenarios).read_text())]
        resolved_again.append(ids)
        out.write_text("".join(json.dumps({"scenario": i, "attention_backend": "FLASH_ATTN"}) + "\n" for i in ids))
        return type("Done", (), {"returncode": 0, "stderr": ""})()

    monkeypatch.setattr(env, "run_resolver", resolver)
    inputs = [{"id": f"s{i}"} for i in range(5)]
    results = tmp_path / "results.jsonl"
    lines = [{"scenario": "s0", "attention_backend": "FLASH_ATTN"},
             {"scenario": "s1", "error": "ValidationError: failed to be inspected (No module named 'mistral_common')"},
             {"scenario": "s2", "attention_backend": "TRITON_ATTN"},
             {"scenario": "s3", "error": "ImportError: No module named 'mistral_common.tokens'"},
             {"scenario": "s4", "error": "ValidationError: failed (No module named 'torchaudio')"}]  # fmt: skip
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env.complete("0.14.1", inputs, results, log=lambda message: None)
    assert installed == ["mistral_common"]  # torchaudio is never installed
    assert resolved_again == [["s1", "s3"]]
    merged = [json.loads(line) for line in results.read_text().splitlines()]
    assert [line["scenario"] for line in merged] == ["s0", "s1", "s2", "s3", "s4"]
    assert merged[1] == {"scenario": "s1", "attention_backend": "FLASH_ATTN"}
    assert merged[2]["attention_backend"] == "TRITON_ATTN" and "torchaudio" in merged[4]["error"]
