"""The fuzz cases the advisor once got wrong, held to what the release resolved (goldens written by
`python -m conformance sglang-fuzz X --write-golden IDS.json`, each line with its config.json embedded).

CI never installs SGLang: each stored config is written to a temporary folder and planned; every field must agree with
the release's, and a scenario the release rejected must be refused by the advisor too (an error problem, or a config it
will not read).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from conformance.sglang.compare import GOLDEN, advisor_plan, differing_fields, golden_values, plan_values  # noqa: E402

LINES = [
    (path.name[len("sglang-fuzz-") : -len(".jsonl")], json.loads(text))
    for path in sorted(GOLDEN.glob("sglang-fuzz-*.jsonl"))
    for text in path.read_text().splitlines()
]


def test_fuzz_goldens_exist():
    assert {release for release, _ in LINES} >= {"0.5.23"}, "run python -m conformance sglang-fuzz 0.5.23"


@pytest.mark.parametrize("release, line", LINES, ids=[f"{r}/{line['id']}" for r, line in LINES])
def test_fuzz_case_agrees_with_the_release(release, line, tmp_path):
    from advisor.models import ModelError, load_config_dir

    scenario = line["scenario"]
    folder = tmp_path / scenario["model"]
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(line["config"]))
    try:
        model = load_config_dir(folder, model_id=scenario["model"])
    except ModelError:
        assert "error" in line, f"the advisor refuses a config sglang {release} resolves ({scenario['tags']})"
        return
    plan = advisor_plan(release, scenario, model, grid="fuzz")
    if "error" in line:
        errors = [p.id for p in plan.problems if p.severity == "error"]
        assert errors, f"sglang {release} rejects it ({line['error']}); the advisor plans it"
        return
    differ = differing_fields(golden_values(line["fields"]), plan_values(plan))
    assert not differ, f"{differ} differ from sglang {release} ({scenario['base']} with {scenario['tags']})"


def test_fuzz_scenarios_are_deterministic_from_the_seed(tmp_path):
    from conformance.sglang.fuzz import CAUSES, scenarios

    def run(root, seed):
        return [{k: v for k, v in sc.items() if k != "config_dir"} for sc in scenarios(12, seed, root)]

    first, again, other = run(tmp_path / "a", 5), run(tmp_path / "b", 5), run(tmp_path / "c", 6)
    assert first == again and first != other
    assert all(tag.split(":")[0] in CAUSES for sc in first for tag in sc["tags"])
    assert all((tmp_path / "a" / sc["model"] / "config.json").is_file() for sc in first)
