"""`advisor verify` (the real CLI, --json) on every start-up log rendered for a modelled release
(tests/fixtures/logs, written by `python -m conformance.logs`): the measured figures in them (weights, the KV pool,
context length) come from the release's own arithmetic on a faked GPU of the fixture's profile, so every logged field
agrees with the prediction and verify exits 0; a tampered figure differs and exits 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "logs"
MODELLED = sorted(p for p in FIXTURES.glob("*.log") if "-unmodelled-" not in p.name)
MEASURED = ("kv_cache_tokens", "weights_gib", "context_len")


def expected(path: Path) -> dict:
    return json.loads(path.with_name(path.name[: -len(".log")] + ".expected.json").read_text(encoding="utf-8"))


def verify(path: Path | None, args: list[str], stdin: str | None = None):
    log = "-" if path is None else str(path)
    result = CliRunner().invoke(main, ["verify", log, "--json", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, json.loads(result.output)


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(REPO)  # SGLang's logged model_path is the conformance config, relative to the repository


def test_every_modelled_release_has_fixtures_with_their_verify_arguments():
    assert len(MODELLED) >= 50
    for path in MODELLED:
        stated = expected(path)["verify"]
        assert stated["args"][:1] == ["--profile"], path.name
        assert "own" in stated["measured"], path.name  # where its figures come from


@pytest.mark.parametrize("path", MODELLED, ids=lambda p: p.name)
def test_every_logged_field_agrees_and_verify_exits_0(path):
    code, data = verify(path, expected(path)["verify"]["args"])
    logged = [r for r in data["rows"] if r["observed"] is not None]
    wrong = [(r["field"], r["predicted"], r["observed"]) for r in logged if r["verdict"] != "agree"]
    assert not wrong, wrong
    assert code == 0
    compared = {r["field"] for r in logged}
    assert {"kv_cache_tokens", "weights_gib"} <= compared, compared
    if path.name.startswith("sglang-"):
        assert "context_len" in compared


def _tampered(path: Path, field: str, factor: float) -> str:
    """The log with one measured figure scaled by ``factor``, as the engine would print it."""
    text = path.read_text(encoding="utf-8")
    patterns = {
        "kv_cache_tokens": r"(#tokens: |KV cache size: )([\d,]+)",
        "weights_gib": r"(mem usage=|Model loading took )([\d.]+)",
        "context_len": r"(context_len=)(\d+)",
    }

    def scale(match: re.Match) -> str:
        raw = match.group(2)
        value = float(raw.replace(",", "")) * factor
        shown = f"{value:.2f}" if "." in raw else f"{int(value):,}" if "," in raw else str(int(value))
        return match.group(1) + shown

    changed, count = re.subn(patterns[field], scale, text)
    assert count, f"{path.name}: no {field} line"
    return changed


TAMPER = [
    ("sglang-0.5.23-llama-3.1-8b-tp8.log", "kv_cache_tokens"),
    ("sglang-0.5.7-qwen3-30b-a3b-tp4.log", "weights_gib"),
    ("sglang-0.5.14-qwen3-30b-a3b-tp4.log", "context_len"),
    ("vllm-0.33.0-llama-3.1-8b-tp8.log", "kv_cache_tokens"),
    ("vllm-0.12.0-llama-3.1-8b-tp8-max-num-seqs-64.log", "weights_gib"),
]


@pytest.mark.parametrize(("name", "field"), TAMPER)
def test_a_tampered_figure_differs_and_exits_1(name, field):
    path = FIXTURES / name
    code, data = verify(None, expected(path)["verify"]["args"], _tampered(path, field, 0.5))
    row = next(r for r in data["rows"] if r["field"] == field)
    assert row["verdict"] == "differ", row
    assert row["source"]  # the rule behind the prediction
    assert code == 1


@pytest.mark.parametrize("name", ["sglang-0.5.23-llama-3.1-8b-tp8.log", "vllm-0.33.0-llama-3.1-8b-tp8.log"])
def test_an_estimated_figure_within_the_stated_margin_still_agrees(name):
    path = FIXTURES / name
    code, data = verify(None, expected(path)["verify"]["args"], _tampered(path, "kv_cache_tokens", 0.95))
    row = next(r for r in data["rows"] if r["field"] == "kv_cache_tokens")
    assert row["verdict"] == "agree" and code == 0
