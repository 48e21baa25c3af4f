"""The vLLM rules against vLLM itself: every field of every golden (tests/conformance/golden/vllm-X.jsonl, written by
``python -m conformance.vllm X`` from vLLM's own engine-config resolution) compared with the plan for the same scenario.

Disagreements that remain are listed exactly in KNOWN (asserted equal, so a regression and a silent fix both fail).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, FORCED_OFF
from advisor.rules.vllm import common as vllm_common
from advisor.rules.vllm import compilation as vllm_compilation
from advisor.rules.vllm import fusion as vllm_fusion

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDENS = sorted(GOLDEN_DIR.glob("vllm-[0-9]*.jsonl"))  # vllm-memory-X.jsonl: test_vllm_memory_conformance.py
# The architectures grid (python -m conformance.vllm X --grid architectures): each config under tests/conformance/configs.
ARCH_GOLDENS = sorted(GOLDEN_DIR.glob("vllm-architectures-*.jsonl"))
# What vLLM says when its registry serves no architecture of the config (_raise_for_unsupported).
REFUSED = "are not supported for now"
# What vLLM says when tp does not split the attention heads (ModelConfig.verify_with_parallel_config); the plan's
# tp_not_divisible error says the same.
NOT_DIVISIBLE = "must be divisible by tensor parallel size"
MiB = 2**20

# (release, scenario, field): what the plan says differs from vLLM, with the reason. None today: every field of every
# golden agrees (the MLA backends too, since the harness makes GPU tensors on the meta device).
KNOWN: set[tuple[str, str, str]] = set()
# The architectures grid: what differs from vLLM there, with the reason. None today.
KNOWN_ARCH: set[tuple[str, str, str]] = set()


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@cache
def _facts(profile: str):
    # The harness fakes flashinfer as importable (vLLM's wheels depend on flashinfer-python): so does the plan.
    return load_profile(profile)


def plan_for(version: str, scenario: dict):
    intent = Intent(model=scenario["model"], tp=scenario["tp"], engine="vllm", engine_version=version,
                    overrides=tuple(scenario["overrides"]))  # fmt: skip
    model = scenario["model"]  # a catalog id, or a config directory relative to the repository
    return build_plan(_facts(scenario["profile"]), resolve_model(str(REPO / model) if model.startswith("tests/") else model),
                      intent)  # fmt: skip


def compare(record: dict) -> dict[str, tuple[object, object]]:
    """field -> (golden, plan) for every field that differs."""
    version, scenario = record["vllm"], record["scenario"]
    plan = plan_for(version, scenario)
    compilation = plan.decision("compilation").value
    memory = plan.decision("memory_defaults").value
    fusion = plan.decision("flashinfer_allreduce_fusion")
    expected = {
        "optimization_level": compilation["optimization_level"],
        "compilation_mode": compilation["compilation_mode"],
        "cudagraph_mode": compilation["cudagraph_mode"],
        # the pass runs when the config enables it and the model is compiled
        "fusion_runs": fusion.enabled,
        "disable_custom_all_reduce": plan.decision("custom_allreduce").state == FORCED_OFF,
        "attention_backend": plan.decision("attention_backend").value,
        "enable_chunked_prefill": plan.decision("chunked_prefill").enabled,
        "enable_prefix_caching": plan.decision("prefix_caching").enabled,
        "async_scheduling": plan.decision("async_scheduling").enabled,
        **{key: memory[key] for key in ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
                                        "kv_cache_dtype", "block_size", "max_model_len")},
    }  # fmt: skip
    golden = {key: record.get(key) for key in expected if key != "fusion_runs"}
    if str(golden["attention_backend"]).startswith("error:"):  # no backend fits: vLLM fails, the plan picks none
        golden["attention_backend"] = None
    golden["fusion_runs"] = bool(record["fuse_allreduce_rms"]) and record["compilation_mode"] == vllm_compilation.VLLM_COMPILE
    if record.get("fi_allreduce_fusion_max_bytes") is not None or record["fuse_allreduce_rms"]:
        gpu = _facts(scenario["profile"]).engine_gpus[0]
        size = vllm_fusion.max_size_mb(gpu.capability, scenario["tp"], version)
        expected["fi_allreduce_fusion_max_bytes"] = int(size * MiB) if size is not None else None
        golden["fi_allreduce_fusion_max_bytes"] = record.get("fi_allreduce_fusion_max_bytes")
    return {k: (golden[k], expected[k]) for k in expected if golden[k] != expected[k]}


def scenario_key(record: dict) -> str:
    s = record["scenario"]
    return f"{s['profile']}|{s['model']}|tp{s['tp']}|{' '.join(s['overrides'])}"


def test_goldens_cover_six_releases():
    releases = [p.stem.removeprefix("vllm-") for p in GOLDENS]
    assert set(vllm_common.VERIFIED) <= set(releases), f"missing goldens: {sorted(set(vllm_common.VERIFIED) - set(releases))}"


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_every_field_agrees(path: Path):
    records = _records(path)
    assert records, f"{path} is empty"
    resolved = [r for r in records if "error" not in r]
    assert resolved, f"{path}: vLLM resolved no scenario"
    diffs = {scenario_key(r): compare(r) for r in resolved}
    version = records[0]["vllm"]
    found = {(version, key, field) for key, diff in diffs.items() for field in diff}
    known = {k for k in KNOWN if k[0] == version}
    shown = {key: {f: list(v) for f, v in diff.items()} for key, diff in diffs.items() if diff}
    assert found == known, json.dumps(shown, indent=1, default=str)[:8000]


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_vllm_resolved_every_scenario(path: Path):
    """A scenario vLLM could not resolve in the harness proves none of its fields (v0.12.0 and v0.15.1 once refused tp 8
    for the build machine's small host memory)."""
    errors = [f"{scenario_key(r)}: {r['error']}" for r in _records(path) if "error" in r]
    assert errors == []


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_every_flag_the_grid_passes_parses(path: Path):
    """The harness passes the argv through vLLM's own parser: a rejected flag is a golden error line."""
    rejected = [r for r in _records(path) if str(r.get("error", "")).startswith("argv rejected")]
    assert rejected == []


# (release, scenario): an error of the harness, not of vLLM (the resolution could not run here), with the reason. None
# today.
KNOWN_ARCH_ERRORS: dict[tuple[str, str], str] = {}


def _refused(plan) -> bool:
    """Whether the plan says the release's registry does not serve the architecture (refused, or the Transformers
    backend)."""
    return any(p.id == ARCHITECTURE_NOT_NAMED for p in plan.problems)


def _not_in_registry(record: dict) -> bool:
    """vLLM refused the architecture, or ran it through its Transformers backend (TransformersForCausalLM, ...)."""
    return REFUSED in record.get("error", "") or str(record.get("architecture") or "").startswith("Transformers")


@pytest.mark.parametrize("path", ARCH_GOLDENS, ids=[p.stem for p in ARCH_GOLDENS])
def test_every_field_agrees_on_every_architecture(path: Path):
    """Every config of the architectures grid, public and synthetic: each field as vLLM resolves it, and a refusal
    where vLLM refuses the architecture (and only there)."""
    records = _records(path)
    assert records, f"{path} is empty"
    version = records[0]["vllm"]
    diffs, refusals, harness = {}, {}, {}
    for record in records:
        key = scenario_key(record)
        error = record.get("error")
        if error is None:
            diffs[key] = compare(record)
            refusals[key] = (_not_in_registry(record), _refused(plan_for(version, record["scenario"])))
        elif REFUSED in error:
            refusals[key] = (True, _refused(plan_for(version, record["scenario"])))
        elif NOT_DIVISIBLE in error:
            plan = plan_for(version, record["scenario"])
            refusals[key] = (True, any(p.id == "tp_not_divisible" and p.severity == "error" for p in plan.problems))
        else:
            harness[(version, key)] = error
    found = {(version, key, field) for key, diff in diffs.items() for field in diff}
    shown = {key: {f: list(v) for f, v in diff.items()} for key, diff in diffs.items() if diff}
    assert found == {k for k in KNOWN_ARCH if k[0] == version}, json.dumps(shown, indent=1, default=str)[:8000]
    assert {k: v for k, v in refusals.items() if v[0] != v[1]} == {}
    assert set(harness) == {k for k in KNOWN_ARCH_ERRORS if k[0] == version}, harness


def test_architectures_grid_holds_unknown_names():
    """The synthetic configs (unknown names with MLA, sliding-window and Mamba layers) are in every architectures
    golden, and the release refuses each unknown name."""
    for path in ARCH_GOLDENS:
        records = {r["scenario"]["model"]: r for r in _records(path) if r["scenario"]["profile"] == "h100-sxm-8"}
        for kind in ("mla", "swa", "mamba"):
            record = records[f"tests/conformance/configs/synthetic-unknown-{kind}"]
            assert REFUSED in record.get("error", ""), (path.name, kind)
