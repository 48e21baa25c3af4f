"""build_plan: engine version resolution, decisions, problems, flags, argv and the release matrix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.models import resolve_model
from advisor.plan import Intent, PlanError, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import AUTO_ENABLED, NOT_ENABLED

ROOT = Path(__file__).resolve().parents[1]
VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"
SGLANG_IDS = ["flashinfer_allreduce_fusion", "custom_allreduce", "attention_backend", "moe_runner_backend", "memory_defaults"]


def plan_for(profile="b300-8", model=VL, **intent):
    facts = load_profile(profile)
    spec = resolve_model(model) if model else None
    return build_plan(facts, spec, Intent(model=model, **intent))


def test_seed_scenario_v0_5_14_vs_v0_5_13():
    on = plan_for(tp=8, engine="sglang", engine_version="0.5.14")
    assert [d.id for d in on.decisions] == SGLANG_IDS
    fusion = on.decision("flashinfer_allreduce_fusion")
    assert fusion.state == AUTO_ENABLED and fusion.flags == ("--flashinfer-allreduce-fusion-backend", "auto")
    assert on.engine == {"name": "sglang", "version": "0.5.14", "rules": "0.5.14"}
    argv = list(on.argv)
    assert argv[1:3] == ["-m", "sglang.launch_server"]
    i = argv.index("--flashinfer-allreduce-fusion-backend")
    assert argv[i + 1] == "auto" and argv[argv.index("--tp-size") + 1] == "8"
    off = plan_for(tp=8, engine="sglang", engine_version="0.5.13")
    assert off.decision("flashinfer_allreduce_fusion").state == NOT_ENABLED
    assert [c.id for c in off.decision("flashinfer_allreduce_fusion").failed] == ["architecture"]
    assert "--enable-flashinfer-allreduce-fusion" not in off.argv


def test_release_matrix_covers_every_modelled_release():
    plan = plan_for("h100-sxm-8", "Qwen/Qwen3-Next-80B-A3B-Instruct", tp=8, engine="sglang")
    releases = [r.release for r in plan.release_matrix]
    assert releases == [f"0.5.{n}" for n in range(7, 24)]
    assert [r.release for r in plan.release_matrix if r.enabled][0] == "0.5.11"
    assert plan.release_matrix[3].failed_conditions == ("architecture",)  # v0.5.10


def test_engine_version_comes_from_intent_then_probe_then_newest():
    assert plan_for("h200-8", tp=8, engine="sglang").engine["version"] == "0.5.14"  # probed sglang 0.5.14
    assert plan_for("h200-8", tp=8, engine="sglang", engine_version="v0.5.12").engine["version"] == "0.5.12"
    plan = plan_for("a100-sxm-8", tp=8, engine="sglang")  # sglang not installed there
    assert plan.engine == {"name": "sglang", "version": "0.5.23", "rules": "0.5.23"}


def test_newer_engine_version_warns_and_uses_newest():
    plan = plan_for(tp=8, engine="sglang", engine_version="0.5.30")
    assert plan.engine["rules"] == "0.5.23"
    warning = next(p for p in plan.problems if p.id == "engine_version_newer")
    assert warning.severity == "warning" and "uses the newest modelled release v0.5.23" in warning.message
    current = plan_for(tp=8, engine="sglang", engine_version="0.5.23")
    assert current.engine["rules"] == "0.5.23" and "engine_version_newer" not in {p.id for p in current.problems}


@pytest.mark.parametrize(
    ("engine", "version", "rules"),
    [("sglang", "0.5.9rc1", "0.5.9"), ("sglang", "v0.5.14.dev2", "0.5.14"), ("vllm", "0.12.0rc1", "0.12.0")],
)
def test_a_pre_release_says_whose_rules_it_gets(engine, version, rules):
    plan = plan_for("h100-sxm-8", "Qwen/Qwen3-30B-A3B", tp=8, engine=engine, engine_version=version)
    warning = next(p for p in plan.problems if p.id == "engine_version_prerelease")
    assert plan.engine["rules"] == rules and f"rules of release v{rules}" in warning.message
    release = plan_for("h100-sxm-8", "Qwen/Qwen3-30B-A3B", tp=8, engine=engine, engine_version=rules)
    assert "engine_version_prerelease" not in {p.id for p in release.problems}


def test_an_installed_pre_release_says_so_too():
    facts = load_profile("h100-sxm-8").with_packages({"sglang": "0.5.9rc1"})
    plan = build_plan(facts, resolve_model("Qwen/Qwen3-30B-A3B"), Intent(model="Qwen/Qwen3-30B-A3B", tp=8, engine="sglang"))
    assert plan.engine["rules"] == "0.5.9" and "engine_version_prerelease" in {p.id for p in plan.problems}


def test_engine_version_for_the_bundled_runtime_is_reported_not_ignored():
    plan = plan_for("h100-sxm-8", None, tp=1, engine="bundled", engine_version="0.5.9")
    warning = next(p for p in plan.problems if p.id == "engine_version_ignored")
    assert warning.severity == "warning" and "--engine-version 0.5.9" in warning.message
    assert "engine_version_ignored" not in {p.id for p in plan_for("h100-sxm-8", None, tp=1, engine="bundled").problems}


@pytest.mark.parametrize(
    ("intent", "needle"),
    [
        ({"tp": 0}, "--tp must be"),
        ({"tp": -1}, "--tp must be"),
        ({"tp": 8, "nnodes": 0}, "--nnodes must be"),
        ({"tp": 8, "engine": "sglang", "engine_version": "abc"}, "not a version"),
        ({"tp": 8, "engine": "sglang", "engine_version": "0.4.0"}, "older than the oldest modelled release"),
        ({"tp": 8, "engine": "vllm", "engine_version": "nightly"}, "not a version"),
        ({"tp": 3, "nnodes": 2}, "does not split evenly"),
        ({"tp": 8, "engine": "trt"}, "unknown engine"),
    ],
)
def test_bad_intents_raise_one_line_plan_errors(intent, needle):
    with pytest.raises(PlanError) as info:
        plan_for(**intent)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_checks_problems_are_in_the_plan():
    facts = load_profile("h100-sxm-8").with_packages(
        {"flashinfer-python": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128", "flashinfer-cubin": "0.6.12"})
    plan = build_plan(facts, resolve_model("Qwen/Qwen3-30B-A3B"), Intent(tp=8, engine="sglang"))
    mismatch = next(p for p in plan.problems if p.id == "flashinfer_version_mismatch")
    assert mismatch.severity == "error" and plan.has_errors
    plan = build_plan(facts, resolve_model("Qwen/Qwen3-30B-A3B"), Intent(tp=16))
    assert any(p.id == "tp_exceeds_gpus" for p in plan.problems)


def test_bundled_plan_on_gpus_and_on_cpu():
    gpu = build_plan(load_profile("b300-8"), resolve_model("demo"), Intent(tp=8))
    assert [d.id for d in gpu.decisions] == ["flashinfer_allreduce_fusion", "device"]
    assert gpu.flags == ("--allreduce", "flashinfer-fusion")
    assert gpu.engine["name"] == "bundled"
    argv = list(gpu.argv)
    assert "torch.distributed.run" in argv and argv[argv.index("--allreduce") + 1] == "flashinfer-fusion"
    cpu = build_plan(load_profile("cpu-only"), resolve_model("demo"), Intent(tp=2))
    assert cpu.flags == ("--allreduce", "torch")
    argv = list(cpu.argv)
    assert argv[argv.index("--device") + 1] == "cpu" and argv[argv.index("--allreduce") + 1] == "torch"
    assert cpu.release_matrix  # the what-if view exists for every engine


def test_vllm_plan():
    plan = plan_for("h200-8", "Qwen/Qwen3-30B-A3B", tp=8, engine="vllm", engine_version="0.18.0")
    assert [d.id for d in plan.decisions] == ["flashinfer_allreduce_fusion", "custom_allreduce", "compilation",
                                              "attention_backend", "memory_defaults", "chunked_prefill",
                                              "prefix_caching", "async_scheduling"]  # fmt: skip
    assert plan.decision("flashinfer_allreduce_fusion").value == 128  # 0.5 MiB / (2048 x 2 bytes)
    assert plan.argv[:3] == ("vllm", "serve", "Qwen/Qwen3-30B-A3B")  # simulated: the other machine's `vllm`


def test_sglang_without_a_model_has_no_command_and_says_why():
    plan = build_plan(load_profile("b300-8"), resolve_model("demo"), Intent(tp=8, engine="sglang"))
    assert plan.argv == ()
    problem = next(p for p in plan.problems if p.id == "no_command")
    assert "--model" in problem.message


def test_user_overrides_reach_argv_once():
    plan = plan_for(tp=8, engine="sglang", overrides=("--flashinfer-allreduce-fusion-backend", "trtllm"))
    fusion = plan.decision("flashinfer_allreduce_fusion")
    assert fusion.state == "forced-on" and fusion.value == "trtllm"
    assert plan.argv.count("--flashinfer-allreduce-fusion-backend") == 1
    assert plan.argv[-2:] == ("--flashinfer-allreduce-fusion-backend", "trtllm")


def test_rules_checks_and_plan_import_no_heavy_modules():
    code = (
        "import sys, json\n"
        "from advisor.plan import build_plan, Intent\n"
        "from advisor.models import resolve_model\n"
        "from advisor.probe.profiles import load_profile\n"
        "import advisor.rules.sglang, advisor.rules.vllm, advisor.rules.bundled, advisor.rules.checks\n"
        "for engine in ('sglang', 'vllm', 'bundled'):\n"
        "    build_plan(load_profile('b300-8'), resolve_model('Qwen/Qwen3-30B-A3B'), Intent(tp=8, engine=engine))\n"
        "heavy = ('torch', 'flashinfer', 'textual', 'transformers', 'rich')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize(
    ("profile", "engine", "model", "packages", "intent"),
    [
        ("b300-8", "sglang", VL, {}, {"tp": 8}),
        ("b300-8", "sglang", "demo", {"sglang": "main"}, {"tp": 8}),  # engine_version_unparsed + no_command
        ("h100-sxm-8", "sglang", VL, {"flashinfer-python": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128"},
         {"tp": 16, "nnodes": 2, "engine_version": "0.6.0"}),
        ("l40s-4", "vllm", "Qwen/Qwen3-30B-A3B", {}, {"tp": 3, "engine_version": "0.10.0"}),
        ("cpu-only", "bundled", "demo", {}, {"tp": 2}),
        ("h800-8", "bundled", "Qwen/Qwen3-30B-A3B", {}, {"tp": 8}),
    ],
)  # fmt: skip
def test_every_decision_and_problem_cites_its_source(profile, engine, model, packages, intent):
    facts = load_profile(profile)
    if packages:
        facts = facts.with_packages(packages)
    plan = build_plan(facts, resolve_model(model), Intent(model=None if model == "demo" else model, engine=engine, **intent))
    assert plan.decisions and plan.problems
    for d in plan.decisions:
        assert d.source is not None and d.source.release and d.source.file, d.id
    for p in plan.problems:
        assert p.source, p.id
