"""The fuzz goldens (tests/conformance/golden/vllm-fuzz-X.jsonl, written by ``python -m conformance.vllm X --grid fuzz
--write-golden IDS.json``): perturbed configs on which the advisor once disagreed with vLLM's create_engine_config,
each with the config embedded and what the release resolved (or the error it refused with). The plan must agree on
every field, and refuse where vLLM refused, without vLLM installed.

Scenarios that still differ are listed in KNOWN_FUZZ with the reason (asserted exactly, so a fix and a regression both
fail).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import load_config_dir
from conformance.vllm.compare import accepted_class, differences, plan_for, refusal_class

GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDENS = sorted(GOLDEN_DIR.glob("vllm-fuzz-*.jsonl"))
# (release, scenario id, field or refusal class) -> why the plan still differs.
KNOWN_FUZZ: dict[tuple[str, str, str], str] = {}


def _disagreements(line: dict, tmp: Path) -> set[str]:
    # runs of several seeds share model folder names (fuzz-NNNN): one folder per line
    folder = tmp / f"{len(list(tmp.iterdir())):04d}" / line["scenario"]["model"]
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(line["config"]))
    release, sc, record = line["vllm"], line["scenario"], line["record"]
    plan = plan_for(release, sc["profile"], sc["tp"], load_config_dir(folder, model_id=sc["model"]))
    if "error" in record:
        return {cls} if (cls := refusal_class(record["error"], plan)) else set()
    found = set(differences(record, plan, sc["profile"], sc["tp"], release))
    return found | ({cls} if (cls := accepted_class(record, plan)) else set())


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_fuzz_golden_agrees(path: Path, tmp_path: Path):
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert lines, f"{path} is empty"
    found = {(ln["vllm"], ln["id"], what) for ln in lines for what in _disagreements(ln, tmp_path)}
    known = {k for k in KNOWN_FUZZ if k[0] == lines[0]["vllm"]}
    assert found == known, sorted(found ^ known)
