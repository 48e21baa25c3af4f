"""advisor.report and advisor.render_facts: the JSON object, the topology matrix, package statuses, plain/colour output."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, replace

import pytest

from advisor.context import Options, make_plan
from advisor.probe.profiles import load_profile
from advisor.render_facts import (
    ABSENT,
    MISMATCH,
    MISSING,
    OK,
    machine_summary,
    package_rows,
    packages_named_by,
    topology_legend,
    topology_matrix,
)
from advisor.report import jsonable, make_console, plan_to_dict, print_facts, print_plan
from advisor.rules.engine import Problem

VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)


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
        Problem("flashinfer_version_mismatch", "error", "import flashinfer will fail", "install matching versions"),
        Problem("vllm_not_installed", "warning", "vllm is not installed here", "`pip install vllm`"),
        Problem("no_gpus", "info", "torch will run on CPU", "nothing"),  # info never marks a package
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
    problems = [Problem("sglang_not_installed", "warning", "sglang is not installed here", "`pip install sglang`")]
    rows = {r.name: r for r in package_rows(facts, problems)}
    assert rows["sglang"].status == MISSING and rows["sglang"].version == "-"
    assert "sglang" not in {r.name for r in package_rows(facts, [])}


def test_packages_named_by_matches_whole_names_only():
    names = ["torch", "flashinfer-python", "flashinfer-jit-cache", "pynvml", "nvidia-ml-py"]
    problems = [
        Problem("x", "warning", "the runtime uses torch.distributed with gloo", "upgrade flashinfer-jit-cache-sm90a"),
        Problem("y", "error", "the `pynvml` wrapper shadows nvidia-ml-py", "pip uninstall pynvml"),
    ]
    problems.append(Problem("no_gpus", "warning", "sglang needs NVIDIA GPUs; torch is a CPU build", "use a GPU node"))
    named = packages_named_by(problems, names)
    assert "torch" not in named and "flashinfer-jit-cache" not in named
    assert named["pynvml"] == ["y"] and named["nvidia-ml-py"] == ["y"]


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
