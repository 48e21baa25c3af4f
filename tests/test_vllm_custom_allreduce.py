"""vLLM's custom allreduce across nodes, release by release (advisor/rules/vllm/custom_allreduce.py CROSS_NODE, from the
released wheels' custom_all_reduce.py): up to v0.26 a group spanning nodes turns it off at once; from v0.27.1 it tries
the cross-node MNNVL path, which only a Blackwell group in one NVLink domain keeps (v0.29.0 checks for Blackwell first)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from advisor.intent import Intent
from advisor.models import load_config_dir
from advisor.plan import build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.vllm.custom_allreduce import CROSS_NODE, cross_node_mode

CONFIG = Path(__file__).resolve().parent / "conformance" / "configs" / "llama-3.1-8b"
WHEELS = Path.home() / ".cache" / "tp-advisor" / "conformance" / "wheels"
MEMBER = "vllm/distributed/device_communicators/custom_all_reduce.py"


def _decision(profile: str, release: str, nnodes: int, tp: int = 16):
    model = load_config_dir(CONFIG, model_id="llama-3.1-8b")
    intent = Intent(model="llama-3.1-8b", tp=tp, nnodes=nnodes, engine="vllm", engine_version=release)
    plan = build_plan(load_profile(profile), model, intent)
    decision = plan.decision("custom_allreduce")
    return decision, next(c for c in decision.conditions if c.id == "single_node")


@pytest.mark.parametrize("release", ["0.12.0", "0.25.1"])
def test_up_to_v0_26_a_group_spanning_nodes_is_off_on_any_gpu(release):
    for profile in ("h100-sxm-8", "b200-8"):
        decision, node = _decision(profile, release, 2)
        assert node.ok is False and not decision.enabled
        assert "nodes" in node.why


@pytest.mark.parametrize("release", ["0.27.1", "0.28.0", "0.29.0", "0.33.0"])
def test_from_v0_27_1_pre_blackwell_nodes_are_off_and_blackwell_depends_on_mnnvl(release):
    decision, node = _decision("h100-sxm-8", release, 2)
    assert node.ok is False and not decision.enabled and "MNNVL" in node.why
    decision, node = _decision("b200-8", release, 2, tp=8)
    assert node.ok is None  # one NVLink domain (GB200/GB300 NVL72) or not: not visible from one node
    assert not decision.enabled


@pytest.mark.parametrize("release", ["0.25.1", "0.29.0"])
def test_one_node_is_unchanged(release):
    decision, node = _decision("h100-sxm-8", release, 1, tp=8)
    assert node.ok is True and decision.enabled


def test_the_change_list_names_the_prs():
    assert [first for first, _ in CROSS_NODE] == ["0.12.0", "0.27.1", "0.29.0"]
    assert cross_node_mode("0.26.0") == "spans" and cross_node_mode("0.28.0") == "rendezvous"
    decision, node = _decision("b200-8", "0.29.0", 2, tp=8)
    assert "PR #53253" in node.why


def _source(release: str) -> str | None:
    found = sorted(WHEELS.glob(f"vllm-{release}-*.whl"))
    if not found:
        return None
    with zipfile.ZipFile(found[0]) as wheel:
        return wheel.read(MEMBER).decode("utf-8")


@pytest.mark.parametrize("release", ["0.25.1", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.33.0"])
def test_the_change_list_matches_the_released_code(release):
    text = _source(release)
    if text is None:
        pytest.skip(f"vllm {release} wheel not cached in {WHEELS}")
    mode = cross_node_mode(release)
    assert ("spans across nodes" in text) == (mode == "spans")
    assert ("_group_can_attempt_mnnvl(group" in text) == (mode == "gated")
