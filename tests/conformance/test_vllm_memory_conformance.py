"""advisor/rules/vllm/startup.py's KV arithmetic against each vLLM release's own (goldens written by
`python -m conformance.vllm.memory X`, which runs the release's check_enough_kv_cache_memory, estimate_max_model_len and
block count on real KVCacheSpec objects): the block count, whether the max_model_len check passes, the estimated maximum
model length and the message, word for word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.rules.vllm import RELEASES
from advisor.rules.vllm.startup import KvSpec, kv_verdict

GOLDEN = Path(__file__).parent / "golden"
FILES = sorted(GOLDEN.glob("vllm-memory-*.jsonl"))


def _cases():
    for path in FILES:
        for n, line in enumerate(path.read_text().splitlines()):
            record = json.loads(line)
            yield pytest.param(record, id=f"{record['vllm']}-{n}")


def test_goldens_cover_releases():
    """A golden per modelled release: a release added to advisor.rules.vllm.RELEASES needs
    `python -m conformance.vllm.memory X`."""
    versions = {p.name.removeprefix("vllm-memory-").removesuffix(".jsonl") for p in FILES}
    assert versions == set(RELEASES)


@pytest.mark.parametrize("record", list(_cases()))
def test_kv_arithmetic_matches_release(record):
    item = record["input"]
    spec = KvSpec(layers=item["layers"], num_kv_heads=item["num_kv_heads"], head_size=item["head_size"],
                  dtype_bytes=1 if item["dtype"] == "fp8" else 2, mla=item["mla"], block_size=item["block_size"])  # fmt: skip
    assert spec.page_size_bytes == record["page_size_bytes"]
    verdict = kv_verdict(record["vllm"], spec, item["max_model_len"], item["available"])
    assert (verdict.num_blocks, verdict.ok, verdict.estimated_max_model_len, verdict.message) == (
        record["num_blocks"], record["ok"], record["estimated_max_model_len"], record["message"])  # fmt: skip
