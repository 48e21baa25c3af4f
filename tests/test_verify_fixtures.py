"""`advisor verify` on the start-up logs rendered from each release's own format strings (tests/fixtures/logs, written by
`python -m conformance.logs` from the cached wheels): every value put into a log is read back, and the prediction table
agrees with the arguments the conformance harness recorded for that release and scenario."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.context import Options
from advisor.verify.compare import AGREE, LogText, observe, verify

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "logs"
LOGS = sorted(FIXTURES.glob("*.log"))
VARIANTS = (".ansi-crlf.", ".two-runs.", ".kubectl.")  # what conformance/logs.py's messy_variants add
PLAIN = [p for p in LOGS if not any(v in p.name for v in VARIANTS) and "-unmodelled-" not in p.name]
UNMODELLED = [p for p in LOGS if "-unmodelled-" in p.name]  # older releases no table models (best effort)
# The scenario each plain fixture renders (conformance/logs.py SGLANG_SCENARIOS, VLLM_SCENARIOS): the machine.
PROFILES = {"llama-3.1-8b-tp8": "h100-sxm-8", "qwen3-30b-a3b-tp4": "b200-8"}
# Rows the start-up model predicts are estimates; the fixtures' measured figures are illustrative.
ARGUMENT_SOURCE = re.compile(r"^(sglang|vllm) v")


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def expected(path: Path) -> dict:
    return json.loads(path.with_name(path.name[: -len(".log")] + ".expected.json").read_text(encoding="utf-8"))


def test_fixtures_cover_every_modelled_release():
    from advisor.rules import registry

    for engine in ("sglang", "vllm"):
        releases = {p.name.split("-")[1] for p in PLAIN if p.name.startswith(engine + "-")}
        modelled = set(registry.modelled_releases(engine)) if engine == "sglang" else set(_vllm_verified())
        assert modelled <= releases, f"{engine}: no fixture for {sorted(modelled - releases)}"


def _vllm_verified():
    from advisor.rules.vllm.common import VERIFIED

    return VERIFIED


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_value_put_into_the_log_is_read_back(path):
    want = expected(path)
    observation = observe([LogText(path.name, read(path))])
    for name, value in want["observed"].items():
        assert observation.observed.get(name) == value, f"{name}: {observation.observed.get(name)!r} != {value!r}"
    for note in want["notes"]:
        assert any(note in n for n in observation.notes), observation.notes


def _options(path: Path) -> Options:
    engine, release, rest = path.name[: -len(".log")].split("-", 2)
    scenario = next(key for key in PROFILES if rest.startswith(key))
    # SGLang's log does not name its release: the fixture's file name does.
    return Options(profile=PROFILES[scenario], engine_version=release if engine == "sglang" else None)


@pytest.mark.parametrize("path", PLAIN, ids=lambda p: p.name)
def test_the_prediction_agrees_with_what_the_release_resolved(path):
    result = verify([LogText(path.name, read(path))], _options(path))
    arguments = [r for r in result.rows if ARGUMENT_SOURCE.match(r.source)]
    assert arguments, result.rows
    wrong = [(r.field, r.predicted, r.observed) for r in arguments if r.verdict not in (AGREE, "not logged")]
    assert not wrong, wrong
    compared = {r.field for r in arguments if r.verdict == AGREE}
    core = {"mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs", "attention_backend"}
    if path.name.startswith("vllm-"):
        core = {"max_model_len", "compilation_mode", "cudagraph_mode", "enable_prefix_caching"}
    assert core <= compared, compared


@pytest.mark.parametrize("path", UNMODELLED, ids=lambda p: p.name)
def test_a_release_no_table_models_is_read_and_predicted_with_a_note(path):
    result = verify([LogText(path.name, read(path))], Options(profile="h100-sxm-8"))
    want = expected(path)["observed"]
    pool = "kv_cache_tokens" if "kv_cache_tokens" in want else "kv_cache_blocks"  # V0 logs blocks
    assert result.observed[pool] == want[pool]
    assert result.notes, "an unmodelled release must be said"
    assert result.rows
