"""The advisor's SGLang plan against what each release itself resolves (goldens written by `python -m conformance sglang X`).

CI never installs SGLang: it reads tests/conformance/golden/sglang-*.jsonl. Every (release, scenario, field) where the
advisor differs must be listed in sglang_known_disagreements.json, and nothing else: the test fails on a regression and
on a silent fix alike (rewrite the list with `python -m conformance report --write-known` and read its diff).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from conformance.sglang.compare import FIELDS, golden_lines, golden_releases  # noqa: E402
from conformance.sglang.compare import disagreements as find_disagreements  # noqa: E402
from conformance.sglang.report import REASON_NEEDED, load_known, load_named_known, scenario_architecture  # noqa: E402

RELEASES = golden_releases()
CONFIG_RELEASES = golden_releases("configs")  # config_grid.py: unnamed architectures and config-keyed properties
NAMED_RELEASES = golden_releases("named")  # config_grid.py: every named architecture with transformers' default config


def test_goldens_cover_the_grid():
    assert RELEASES, "no goldens: run python -m conformance sglang X.Y.Z"
    for release in RELEASES:
        lines = list(golden_lines(release))
        assert len(lines) >= 500, f"sglang {release}: {len(lines)} scenarios, the grid has >= 500"
        assert sum("fields" in line for line in lines) >= 500, f"sglang {release}: most scenarios were rejected"


@pytest.mark.parametrize("grid, release", [("main", r) for r in RELEASES] + [("configs", r) for r in CONFIG_RELEASES])
def test_every_field_agrees_or_is_a_known_disagreement(grid, release):
    found, compared, _ = find_disagreements(release, grid)
    known = {
        k
        for k in load_known()
        if k[0] == release and k[1].split("/")[1].startswith("synthetic-") == (grid == "configs")
    }
    new = sorted(found - known)
    fixed = sorted(known - found)
    assert not new, f"{len(new)} new disagreements with sglang {release}, e.g. {new[:5]}"
    assert not fixed, f"{len(fixed)} known disagreements now agree (update the list), e.g. {fixed[:5]}"


@pytest.mark.parametrize("release", NAMED_RELEASES)
def test_named_grid_agrees_or_is_a_known_disagreement_with_a_reason(release):
    """The named grid's residue is its own list (it does not make a release unverified), each architecture with why."""
    found, _, _ = find_disagreements(release, "named")
    known_all, reasons = load_named_known()
    known = {k for k in known_all if k[0] == release}
    new, fixed = sorted(found - known), sorted(known - found)
    assert not new, f"{len(new)} new disagreements with sglang {release} (named grid), e.g. {new[:5]}"
    assert not fixed, (
        f"{len(fixed)} known disagreements of the named grid now agree (update the list), e.g. {fixed[:5]}"
    )
    for _, sid, _ in known:
        assert reasons.get(scenario_architecture(sid), REASON_NEEDED) != REASON_NEEDED, sid


def test_config_grid_covers_the_newest_releases_and_its_configs_are_the_recipes():
    """The config grid's goldens exist for the newest releases, most scenarios resolve, and each stored
    synthetic-*/config.json is what config_grid.py's recipe writes (a hand edit would hold the rules to another file)."""
    import json

    from conformance.sglang.config_grid import CONFIGS, VARIANTS, model_dir, scenarios, variant_config

    assert {"0.5.8", "0.5.14", "0.5.20", "0.5.23"} <= set(CONFIG_RELEASES)
    for release in CONFIG_RELEASES:
        lines = list(golden_lines(release, "configs"))
        assert {line["id"] for line in lines} == {sc["id"] for sc in scenarios()}, f"sglang {release}: rerun the grid"
        assert sum("fields" in line for line in lines) >= len(lines) // 2, f"sglang {release}: most were rejected"
    for name in VARIANTS:
        stored = json.loads((CONFIGS / model_dir(name) / "config.json").read_text())
        assert stored == variant_config(name), f"{name}: run python -m conformance sglang-configs write"


def test_known_disagreements_name_only_modelled_fields_and_goldens():
    for release, _, field in load_known():
        assert release in RELEASES and field in FIELDS


def test_checked_releases_are_the_goldens_without_disagreements():
    from advisor.rules.sglang import releases as sglang_releases

    disagreeing = {release for release, _, _ in load_known()}
    assert set(sglang_releases.CHECKED_RELEASES) == set(RELEASES) - disagreeing
    assert set(sglang_releases.CHECKED_RELEASES) <= set(sglang_releases.RELEASES)


def test_explain_says_a_release_without_golden_is_unverified(monkeypatch):
    from advisor.plan import Intent, build_plan
    from advisor.probe.profiles import load_profile
    from advisor.rules.sglang import releases

    facts = load_profile("h100-sxm-8")
    # A modelled release whose golden is missing (as v0.5.16 was before its harness run), and one with its golden.
    monkeypatch.setattr(releases, "CHECKED_RELEASES", releases.CHECKED_RELEASES - {"0.5.16"})
    for release, unchecked in (("0.5.16", True), (RELEASES[-1], False)):
        plan = build_plan(facts, None, Intent(tp=8, engine="sglang", engine_version=release))
        for decision in ("memory_defaults", "attention_backend", "flashinfer_allreduce_fusion"):
            notes = plan.decision(decision).notes
            said = any(n.startswith(f"unverified for v{release}") for n in notes)
            assert said is unchecked, (release, decision, notes)


def test_optional_fields_are_skipped_only_where_a_golden_lacks_them():
    """The prefill-graph fields are compared wherever a golden records them: in every compared scenario of a release or
    in none (v0.5.7 to v0.5.13 name them piecewise_*; later goldens have them once the runner reads cuda_graph_config).
    The largest size is in every golden (from v0.5.14 cuda_graph_prefill_max_bs), so it is compared in every release."""
    from conformance.sglang.compare import ABSENT, OPTIONAL_FIELDS, golden_values

    for release in RELEASES:
        lines = [line for line in golden_lines(release) if "fields" in line]
        for field in OPTIONAL_FIELDS:
            present = {golden_values(line["fields"])[field] is not ABSENT for line in lines}
            assert len(present) == 1, f"sglang {release}: {field} recorded in some scenarios only"
            if tuple(int(x) for x in release.split(".")) <= (0, 5, 13) or field == "piecewise_cuda_graph_max_tokens":
                assert present == {True}, f"sglang {release}: the golden lacks {field}"


# What transformers' AutoConfig says (through SGLang's get_config) when no config class exists for the model_type: the
# checkpoint's own one needs --trust-remote-code, or none exists. The plan's sglang_remote_code_required /
# sglang_model_type_unknown must say it for those configs, and for no config the release loaded.
NO_CONFIG_CLASS = ("contains custom code which must be executed", "does not recognize this architecture")


@pytest.mark.parametrize("grid, release", [(g, r) for g in ("main", "configs", "named") for r in golden_releases(g)])
def test_a_config_without_a_config_class_is_refused_and_only_that(grid, release):
    from advisor.rules.sglang.refusals import MODEL_TYPE_UNKNOWN_ID, REMOTE_CODE_REQUIRED_ID
    from conformance.sglang.compare import advisor_plan

    first, without_class, loaded = {}, set(), set()
    for line in golden_lines(release, grid):
        model = line["scenario"]["model"]
        first.setdefault(model, line["scenario"])
        if any(text in line.get("error", "") for text in NO_CONFIG_CLASS):
            without_class.add(model)
        elif "fields" in line:
            loaded.add(model)
    assert not without_class & loaded, sorted(without_class & loaded)
    wrong = {}
    for model in without_class | loaded:
        plan = advisor_plan(release, first[model], grid=grid)
        refused = any(p.id in (MODEL_TYPE_UNKNOWN_ID, REMOTE_CODE_REQUIRED_ID) for p in plan.problems)
        if refused != (model in without_class):
            wrong[model] = "plan refuses, release loaded it" if refused else "release refused, plan loads it"
    assert wrong == {}, wrong
