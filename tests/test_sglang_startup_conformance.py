"""advisor/rules/sglang/startup.py against what each SGLang release's own KV-pool code computes.

The goldens (tests/conformance/golden/sglang-memory-<release>.jsonl) come from `python -m conformance sglang-memory`,
which runs the release's own start-up functions, taken from its wheel, on CPU with the GPU's free memory faked
(conformance/sglang/memory.py). Each line: the inputs, and max_total_num_tokens or the error the release raised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.rules.sglang.releases import RELEASES
from advisor.rules.sglang.startup import PoolInputs, engine_message, mm_reserve_gib, pool_outcome

GOLDEN = Path(__file__).parent / "conformance" / "golden"
GIB = 1024**3


def golden(release: str) -> list[dict]:
    path = GOLDEN / f"sglang-memory-{release}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_modelled_release_has_a_golden():
    assert [r for r in RELEASES if not (GOLDEN / f"sglang-memory-{r}.jsonl").exists()] == []


@pytest.mark.parametrize("release", RELEASES)
def test_the_pool_and_the_start_up_errors_match_the_release(release):
    rows = golden(release)
    assert {row["release"] for row in rows} == {release}
    assert any(row["error"] for row in rows) and any(row["error"] is None for row in rows)
    for row in rows:
        case = row["inputs"]
        p = PoolInputs(
            release=release, pre_model_load_gib=case["pre_model_load_gib"],
            weights_bytes=(case["pre_model_load_gib"] - case["available_gib"]) * GIB,
            mem_fraction_static=case["mem_fraction_static"], cell_size=case["cell_size"], page_size=case["page_size"],
            max_total_tokens=case["max_total_tokens"], context_len=case["context_len"],
            mm_reserve_gib=mm_reserve_gib(release, case["multimodal"]),
        )  # fmt: skip
        outcome = pool_outcome(p)
        if row["error"] is None:
            assert (outcome.error, outcome.tokens) == (None, row["max_total_num_tokens"]), row["case"]
        else:
            assert outcome.error is not None, row["case"]
            assert engine_message(p, outcome) == row["error"], row["case"]
