"""advisor.report and advisor.render_facts: the JSON object, the topology matrix, package statuses, plain/colour output."""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, replace

import pytest

from advisor.context import Options, make_plan
from advisor.facts import Facts, normalize_name
from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import list_profiles, load_profile
from advisor.render_facts import (
    ABSENT,
    MISMATCH,
    MISSING,
    OK,
    machine_summary,
    package_rows,
    problems_by_package,
    topology_legend,
    topology_matrix,
)
from advisor.report import facts_to_dict, jsonable, make_console, plan_to_dict, print_facts, print_plan
from advisor.rules.engine import Problem

VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"


pytestmark = pytest.mark.usefixtures("empty_hf_cache")


@dataclass(frozen=True)
class _Point:
    x: int
    tags: tuple[str, ...]


def test_jsonable():
    assert jsonable((1, (2, 3))) == [1, [2, 3]]
    assert jsonable({"a": frozenset({"y", "x"})}) == {"a": ["x", "y"]}
    assert jsonable(_Point(1, ("a",))) == {"x": 1, "tags": ["a"]}
    assert jsonable({1: None}) == {"1": None}
    assert jsonable(object).startswith("<class")


@pytest.mark.parametrize("profile", list_profiles())
def test_records_are_converted_as_their_asdict(profile):
    """jsonable reads a record's fields in one pass: the same as converting its asdict, and facts_to_dict the same as
    converting Facts.to_dict()."""
    plan = make_plan(Options(profile=profile, model=VL if profile != "cpu-only" else None))
    assert facts_to_dict(plan.facts) == jsonable(plan.facts.to_dict()) == jsonable(asdict(plan.facts))
    for value in (plan.intent, plan.model, *plan.decisions, *plan.problems, *plan.release_matrix):
        assert json.dumps(jsonable(value)) == json.dumps(jsonable(asdict(value)))  # the same keys in the same order


def test_plan_dict_round_trips_through_json():
    plan = make_plan(Options(profile="b300-8", model=VL, engine_version="0.5.14"))
    data = plan_to_dict(plan)
    assert json.loads(json.dumps(data)) == data
    assert data["schema_version"] == 1
    assert data["argv"] == list(plan.argv) and data["flags"] == list(plan.flags)
    fusion = data["decisions"][[d.id for d in plan.decisions].index("flashinfer_allreduce_fusion")]
    assert fusion["source"]["release"].startswith("sglang v0.5.14") and fusion["source"]["text"]
    assert len(data["release_matrix"]) == len(plan.release_matrix) > 5


def test_topology_matrix_like_nvidia_smi():
    header, rows = topology_matrix(load_profile("b300-8"))
    assert header == ["", *(f"GPU{i}" for i in range(8))]
    assert [r[0] for r in rows] == [f"GPU{i}" for i in range(8)]
    for i, row in enumerate(rows):
        assert row[1 + i] == "X" and all(c == "NV18" for j, c in enumerate(row[1:]) if j != i)
    assert [code for code, _ in topology_legend(rows)] == ["X", "NV#"]

    header, rows = topology_matrix(load_profile("l40s-4"))
    codes = {c for row in rows for c in row[1:]}
    assert codes <= {"X", "PIX", "PXB", "PHB", "NODE", "SYS"} and len(codes) > 1
    assert {code for code, _ in topology_legend(rows)} == codes

    bridge = load_profile("h100-pcie-2-bridge")
    assert topology_matrix(bridge)[1] == [["GPU0", "X", "NV12"], ["GPU1", "NV12", "X"]]
    assert topology_matrix(load_profile("cpu-only")) == ([""], [])


def test_unknown_links_show_a_question_mark():
    facts = load_profile("h100-sxm-8")
    partial = replace(facts, topology=replace(facts.topology, links=facts.topology.links[1:]))
    _, rows = topology_matrix(partial)
    assert rows[0][2] == "?" and rows[1][1] == "?"
    assert ("?", "unknown (the probe could not tell)") in topology_legend(rows)


def test_package_statuses_follow_the_problems():
    facts = load_profile("b300-8").with_packages({"flashinfer-python": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128"})
    problems = [
        Problem("flashinfer_version_mismatch", "error", "import flashinfer will fail", "install matching versions",
                packages=("flashinfer-python", "flashinfer-jit-cache")),
        Problem("vllm_not_installed", "warning", "vllm is not installed here", "`pip install vllm`", packages=("vllm",)),
        Problem("no_gpus", "info", "torch will run on CPU", "nothing", packages=("torch",)),  # info never marks one
    ]
    vllm = replace(facts.package("sglang"), name="vllm", installed=False, version=None)  # needed, not installed
    unused = replace(facts.package("sglang"), name="sglang-router", installed=False, version=None)
    facts = replace(facts, packages=(*facts.packages, vllm, unused))
    rows = {r.name: r for r in package_rows(facts, problems)}
    assert rows["flashinfer-python"].status == MISMATCH
    assert rows["flashinfer-jit-cache"].status == MISMATCH and rows["flashinfer-jit-cache"].version == "0.6.11+cu128"
    assert rows["vllm"].status == MISSING and rows["vllm"].problems == ("vllm_not_installed",)
    assert rows["sglang-router"].status == ABSENT and rows["sglang-router"].version == "-"
    assert rows["torch"].status == OK and rows["sglang"].status == OK
    assert "overridden" in rows["flashinfer-python"].detail


def test_a_needed_package_the_probe_did_not_list_is_missing():
    facts = load_profile("cpu-only")
    problems = [Problem("sglang_not_installed", "warning", "sglang is not installed here", "`pip install sglang`",
                        packages=("sglang",))]
    rows = {r.name: r for r in package_rows(facts, problems)}
    assert rows["sglang"].status == MISSING and rows["sglang"].version == "-"
    assert "sglang" not in {r.name for r in package_rows(facts, [])}


def test_the_table_marks_the_problems_packages_and_never_names_in_their_text():
    facts = load_profile("h800-8")  # pynvml beside nvidia-ml-py, torch, triton, flashinfer trio
    problems = [
        Problem("unofficial_pynvml", "warning", "the `pynvml` wrapper shadows nvidia-ml-py; torch and triton are fine",
                "pip uninstall pynvml && pip install nvidia-ml-py", packages=("pynvml",)),
        Problem("tp_exceeds_gpus", "error", "torch needs 16 GPUs for flashinfer-python", "lower --tp"),
        Problem("flashinfer_gpu_arch", "info", "flashinfer-python builds no kernels for SM80", "nothing",
                packages=("flashinfer-python",)),
    ]  # fmt: skip
    rows = {r.name: r for r in package_rows(facts, problems)}
    marked = {name for name, row in rows.items() if row.status != OK}
    assert marked == {"pynvml"} and rows["pynvml"].problems == ("unofficial_pynvml",)
    assert rows["nvidia-ml-py"].status == OK and rows["torch"].status == OK and rows["triton"].status == OK
    assert problems_by_package(problems) == {"pynvml": ["unofficial_pynvml"]}
    # two problems about one package list both ids, in the problems' order, each once
    twice = [*problems, Problem("other", "error", "x", "y", packages=("pynvml", "pynvml"))]
    assert problems_by_package(twice) == {"pynvml": ["unofficial_pynvml", "other"]}


# Problems that are about packages (Problem.packages set) and problems about the machine, the layout, the model or the
# advisor's own rules (never about a package, whatever their text says). A new problem id must be put in one of them.
ABOUT_PACKAGES = {
    "flashinfer_version_mismatch", "flashinfer_cpu_torch_import", "flashinfer_jit_cache_cuda_mismatch",
    "flashinfer_gpu_arch", "torch_cuda_vs_driver", "unofficial_pynvml", "sglang_not_installed", "vllm_not_installed",
    "torch_not_installed", "engine_version_unparsed",
}  # fmt: skip
NOT_ABOUT_PACKAGES = {
    "no_gpus", "tp_exceeds_gpus", "tp_not_divisible", "mig_enabled", "startup_out_of_memory", "kv_cache_too_small",
    "kv_cache_short", "startup_unknown", "no_multicast_for_fusion",
    "no_command", "check_failed", "engine_version_newer", "fusion_backend_error", "architecture_not_named",
    # launch pitfalls of the machine (advisor/rules/checks_machine.py)
    "p2p_unavailable", "pcie_acs_or_iommu", "gpus_span_numa", "gpu_order", "gpu_memory_in_use", "heterogeneous_gpus",
    "shm_too_small", "nccl_env_override", "fabric_not_ready", "memlock_limit",
}  # fmt: skip
# engine_version_older is about vllm only when the installed vllm is the release judged (not an --engine-version)
DEPENDS = {"engine_version_older"}

SEED = {"flashinfer-python": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128"}
FORCE_FUSION = ("--enable-flashinfer-allreduce-fusion",)


def _plan(profile: str | None, model: str | None = "Qwen/Qwen3-30B-A3B", packages: dict[str, str] | None = None,
          facts: Facts | None = None, **intent):  # fmt: skip
    facts = facts if facts is not None else load_profile(profile)
    facts = facts.with_packages(packages) if packages else facts
    return build_plan(facts, resolve_model(model) if model else None, Intent(model=model, **intent))


def _scenarios() -> dict[str, object]:
    live_cpu = replace(load_profile("cpu-only"), source="live")
    h100 = load_profile("h100-sxm-8")
    mig = replace(h100, gpus=(replace(h100.gpus[0], mig_mode="enabled"), *h100.gpus[1:]))
    return {
        "seed": _plan("b300-8", packages=SEED, tp=8, engine="sglang"),
        "seed-h20": _plan("h20-8", packages=SEED, tp=8, engine="sglang"),
        "pynvml": _plan("h800-8", model=None, tp=8, engine="bundled"),
        "torch-vs-driver": _plan("h100-sxm-8", model=None, packages={"torch": "2.12.0+cu130"}, tp=8, engine="bundled"),
        "torch-vs-driver-minor": _plan("h100-sxm-8", packages={"torch": "2.9.1+cu129"}, tp=8, engine="sglang"),
        "cpu-import": _plan("cpu-only", model=None, packages={"flashinfer-python": "0.7.0"}, tp=2, engine="bundled"),
        "sglang-missing": _plan(None, facts=live_cpu, tp=2, engine="sglang"),
        "vllm-missing": _plan(None, facts=live_cpu, tp=2, engine="vllm"),
        "torch-missing": _plan(None, model=None, facts=Facts(), tp=2, engine="bundled"),
        "gpu-arch": _plan("a100-sxm-8", tp=8, engine="sglang", overrides=FORCE_FUSION),
        "unparsed": _plan("b300-8", packages={"sglang": "custom"}, tp=8, engine="sglang"),
        "newer": _plan("b300-8", packages={"sglang": "0.6.0"}, tp=8, engine="sglang"),
        "older-rules": _plan("a100-sxm-8", tp=8, engine="vllm", engine_version="0.9.0"),
        "older-installed": _plan("a100-sxm-8", packages={"vllm": "0.9.0"}, tp=8, engine="vllm"),
        "multi-node-fusion": _plan("h100-sxm-8", tp=16, nnodes=2, engine="sglang", overrides=FORCE_FUSION),
        "multicast": _plan("h100-pcie-2-bridge", tp=2, engine="sglang"),
        "tp-vs-gpus": _plan("h200-8", tp=16, engine="sglang"),
        "weights": _plan("h100-sxm-8", model="deepseek-ai/DeepSeek-V3", tp=2, engine="sglang"),
        "mig": _plan(None, facts=mig, tp=8, engine="sglang"),
        "tp-divisibility": _plan("h100-sxm-8", tp=6, engine="sglang"),
        "p2p": _plan("rtx-4090-2", model="Qwen/Qwen3-8B", tp=2, engine="sglang"),
        "container": _plan("a100-pcie-4-container", model="Qwen/Qwen3-8B", tp=8, nnodes=2, engine="vllm"),
        "numa": _plan("l40s-4", model="Qwen/Qwen3-8B", tp=4, engine="vllm"),
        "workstation": _plan("workstation-mixed-2", model="Qwen/Qwen3-8B", tp=2, engine="sglang"),
        "fabric": _plan("h200-8-fabric-pending", model="Qwen/Qwen3-8B", tp=8, engine="sglang"),
    }


def test_every_problem_about_a_package_says_which_and_the_table_marks_exactly_those():
    plans = _scenarios()
    seen = set()
    for name, plan in plans.items():
        for problem in plan.problems:
            seen.add(problem.id)
            assert problem.id in ABOUT_PACKAGES | NOT_ABOUT_PACKAGES | DEPENDS, (name, problem.id)
            if problem.id in ABOUT_PACKAGES:
                assert problem.packages, (name, problem)
            if problem.id in NOT_ABOUT_PACKAGES:
                assert problem.packages == (), (name, problem)
            assert all(p == normalize_name(p) for p in problem.packages), problem
            assert len(set(problem.packages)) == len(problem.packages), problem
        # the table: marked rows are exactly the packages of the errors and warnings, each with their ids
        loud = [p for p in plan.problems if p.severity in ("error", "warning")]
        rows = {r.name: r for r in package_rows(plan.facts, plan.problems)}
        assert {n for n, r in rows.items() if r.status in (MISMATCH, MISSING)} == {n for p in loud for n in p.packages}
        for row in rows.values():
            assert row.problems == tuple(dict.fromkeys(p.id for p in loud if row.name in p.packages)), (name, row)
    assert seen >= ABOUT_PACKAGES | DEPENDS, "a scenario for every problem about a package"
    older = {k: [p.packages for p in plans[k].problems if p.id == "engine_version_older"] for k in plans if "older" in k}
    assert older == {"older-rules": [()], "older-installed": [("vllm",)]}


def test_packages_are_what_the_check_found_not_what_the_text_mentions():
    plans = _scenarios()
    statuses = {k: {r.name: r.status for r in package_rows(p.facts, p.problems)} for k, p in plans.items()}
    # the seed case: flashinfer-python and the jit-cache; the b300's cubin 0.7.4 differs too, the h20's 0.6.12 matches
    assert statuses["seed"]["flashinfer-python"] == statuses["seed"]["flashinfer-jit-cache"] == MISMATCH
    assert statuses["seed"]["flashinfer-cubin"] == MISMATCH and statuses["seed-h20"]["flashinfer-cubin"] == OK
    assert statuses["seed"]["flashinfer-jit-cache-sm100a"] == OK
    # "beside nvidia-ml-py 13.570.86" / "pip install ... nvidia-ml-py": the wrapper is the problem, not NVIDIA's package
    pynvml = plans["pynvml"].problems[0]
    assert "nvidia-ml-py" in pynvml.message + pynvml.fix
    assert statuses["pynvml"]["pynvml"] == MISMATCH and statuses["pynvml"]["nvidia-ml-py"] == OK
    # torch_cuda_vs_driver's message names triton (kernels compiled at run time) in passing
    minor = next(p for p in plans["torch-vs-driver-minor"].problems if p.id == "torch_cuda_vs_driver")
    assert "triton" in minor.message and minor.packages == ("torch",)
    assert statuses["torch-vs-driver-minor"]["torch"] == MISMATCH and statuses["torch-vs-driver-minor"]["triton"] == OK
    # fusion_backend_error says "SGLang v0.5.9: ..." and "use v0.5.14+": about the flag and the layout, not the install
    backend = next(p for p in plans["multi-node-fusion"].problems if p.id == "fusion_backend_error")
    assert "sglang" in backend.message.lower() and statuses["multi-node-fusion"]["sglang"] == OK
    # a flashinfer mismatch names no kernel package that is not installed (the cpu-only profile has no jit-cache)
    assert "flashinfer-jit-cache" not in statuses["cpu-import"]
    assert statuses["cpu-import"]["torch"] == MISMATCH and statuses["cpu-import"]["flashinfer-cubin"] == MISMATCH
    # a needed package the probe did not list shows as missing
    assert statuses["sglang-missing"]["sglang"] == MISSING and statuses["torch-missing"]["torch"] == MISSING


def test_machine_summary_labels_simulated_and_driverless_machines():
    summary = dict(machine_summary(load_profile("gb200-nvl72-tray")))
    assert "simulated" in summary["source"] and summary["NVSwitch"] in ("yes", "no")
    assert summary["NVLink fabric"].startswith("completed")
    assert "4 x NVIDIA GB200" in summary["GPUs"]
    cpu = dict(machine_summary(load_profile("cpu-only")))
    assert cpu["GPUs"] == "none" and cpu["driver"]
    visible = dict(machine_summary(replace(load_profile("h200-8"), visible_gpus=(4, 5), environment={"CUDA_VISIBLE_DEVICES": "4,5"})))
    assert visible["engine sees"] == "GPU4, GPU5 (CUDA_VISIBLE_DEVICES=4,5)"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _render(stream, monkeypatch, no_color: bool) -> str:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    plan = make_plan(Options(profile="b300-8", model=VL, engine_version="0.5.13"))
    print_plan(plan, make_console(file=stream))
    return stream.getvalue()


def test_colour_on_a_terminal_and_none_with_no_color(monkeypatch):
    coloured = _render(_Tty(), monkeypatch, no_color=False)
    assert "\x1b[32m" in coloured or "\x1b[1;32m" in coloured  # green checks
    assert "✓" in coloured or "[ok]" in coloured
    plain = _render(_Tty(), monkeypatch, no_color=True)
    assert not any(f"\x1b[{c}" in plain for c in ("31m", "32m", "33m", "1;31m", "1;32m"))


def test_plain_when_not_a_terminal(monkeypatch):
    out = _render(io.StringIO(), monkeypatch, no_color=False)
    assert "\x1b[" not in out
    assert "[ok]" in out and "[x]" in out and "✓" not in out
    assert all(ord(ch) < 128 for ch in out), "plain output should be ASCII"
    assert not [line for line in out.splitlines() if line != line.rstrip()]


def test_print_facts_without_gpus():
    stream = io.StringIO()
    print_facts(load_profile("cpu-only"), make_console(file=stream))
    out = stream.getvalue()
    assert "Machine" in out and "Packages" in out and "Topology" not in out
