"""`advisor` commands through click's CliRunner: the JSON contract (schema-validated), exit codes, human output."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from advisor import __version__, interactive
from advisor.cli import main
from advisor.facts import Facts
from advisor.probe.profiles import list_profiles, load_profile

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "advisor/schema/plan.schema.json").read_text())
PLAN_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
FACTS_VALIDATOR = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/facts"})

B300_VL = ["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8", "--engine", "sglang"]
MISMATCH = ["--with-package", "flashinfer-python==0.6.12", "--with-package", "flashinfer-jit-cache==0.6.11+cu128"]


@pytest.fixture(autouse=True)
def offline(empty_hf_cache, monkeypatch):
    monkeypatch.delenv("FLASHINFER_DISABLE_VERSION_CHECK", raising=False)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def check_json(*args: str) -> tuple[int, dict]:
    result = invoke("check", "--json", *args)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    errors = sorted(PLAN_VALIDATOR.iter_errors(data), key=str)
    assert not errors, errors[0]
    return result.exit_code, data


def decision(data: dict, decision_id: str) -> dict:
    return next(d for d in data["decisions"] if d["id"] == decision_id)


# -- the done-when scenarios -------------------------------------------------------------------------------------------


def test_fusion_auto_enabled_on_b300_with_sglang_0_5_14():
    code, data = check_json(*B300_VL, "--engine-version", "0.5.14")
    fusion = decision(data, "flashinfer_allreduce_fusion")
    assert fusion["state"] == "auto-enabled" and fusion["enabled"] is True
    assert fusion["flags"] == ["--flashinfer-allreduce-fusion-backend", "auto"]
    assert fusion["value"] == "auto"
    assert all(c["ok"] for c in fusion["conditions"])
    assert data["engine"] == {"name": "sglang", "version": "0.5.14", "rules": "0.5.14"}
    assert "--flashinfer-allreduce-fusion-backend" in data["argv"]
    assert code == 0


def test_fusion_not_enabled_with_sglang_0_5_13_because_of_the_architecture():
    _, data = check_json(*B300_VL, "--engine-version", "0.5.13")
    fusion = decision(data, "flashinfer_allreduce_fusion")
    assert fusion["state"] == "not-enabled" and fusion["enabled"] is False
    failed = [c["id"] for c in fusion["conditions"] if c["ok"] is False]
    assert failed == ["architecture"]
    assert "--flashinfer-allreduce-fusion-backend" not in data["argv"]
    matrix = {row["release"]: row for row in data["release_matrix"]}
    assert matrix["0.5.13"]["enabled"] is False and matrix["0.5.13"]["failed_conditions"] == ["architecture"]
    assert matrix["0.5.14"]["enabled"] is True and matrix["0.5.14"]["failed_conditions"] == []


def test_flashinfer_mismatch_exits_1_with_an_error_problem():
    code, data = check_json(*B300_VL, *MISMATCH)
    assert code == 1
    problem = next(p for p in data["problems"] if p["id"] == "flashinfer_version_mismatch")
    assert problem["severity"] == "error"
    # what the problem is about: flashinfer-python and the kernel packages that differ from it (the b300's cubin 0.7.4)
    assert problem["packages"] == ["flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache"]
    assert data["summary"]["errors"] >= 1
    packages = {p["name"]: p for p in data["facts"]["packages"]}
    assert packages["flashinfer-python"]["version"] == "0.6.12" and packages["flashinfer-python"]["overridden"]


def test_fusion_auto_enabled_but_unimportable_flashinfer_is_said_in_every_face():
    # SGLang auto-enables regardless of importability; the decision's first note says the fused path cannot run and
    # points at the problem, the same in `check --json`, `explain --json` and the human output of both.
    code, data = check_json(*B300_VL, *MISMATCH)
    assert code == 1
    fusion = next(d for d in data["decisions"] if d["id"] == "flashinfer_allreduce_fusion")
    assert fusion["state"] == "auto-enabled"
    note = fusion["notes"][0]
    assert note.startswith("the fused path cannot run here: `import flashinfer` will fail")
    assert "see problem flashinfer_version_mismatch" in note
    assert "flashinfer_version_mismatch" in {p["id"] for p in data["problems"]}
    explained = json.loads(invoke("explain", "flashinfer_allreduce_fusion", "--json", *B300_VL, *MISMATCH).stdout)
    assert explained["decision"] == fusion
    # explain also shows the problem the note points at, exactly as check reports it
    mismatch = next(p for p in data["problems"] if p["id"] == "flashinfer_version_mismatch")
    assert explained["problems"] == [mismatch]
    flat = " ".join(note.split())
    for args in (("check", *B300_VL, *MISMATCH), ("explain", "flashinfer_allreduce_fusion", *B300_VL, *MISMATCH)):
        out = invoke(*args).stdout
        text = " ".join(line.strip() for line in out.splitlines())
        assert "auto-enabled" in text and flat in text.replace("note: ", "")
        assert "Problems" in out and "[flashinfer_version_mismatch]" in out


# -- the contract ------------------------------------------------------------------------------------------------------


def test_json_object_has_the_contract_keys():
    _, data = check_json(*B300_VL)
    contract = {"schema_version", "facts", "intent", "model", "engine", "decisions", "problems", "argv", "release_matrix"}
    assert contract <= set(data)
    assert isinstance(data["schema_version"], int)
    for d in data["decisions"]:
        assert {"id", "title", "state", "enabled", "value", "conditions", "flags", "source"} <= set(d)
        for c in d["conditions"]:
            assert set(c) >= {"id", "text", "ok", "observed", "expected", "why", "fix"}
    ids = {d["id"] for d in data["decisions"]}
    assert {"flashinfer_allreduce_fusion", "custom_allreduce", "attention_backend", "moe_runner_backend", "memory_defaults"} <= ids
    assert decision(data, "memory_defaults")["value"]["chunked_prefill_size"] == 16384
    assert data["command"].startswith(data["argv"][0])
    assert data["facts"]["source"] == "simulated:b300-8"
    assert data["intent"]["tp"] == 8 and data["model"]["architecture"] == "Qwen3VLMoeForConditionalGeneration"


@pytest.mark.parametrize("profile", list_profiles())
def test_every_profile_and_engine_validates(profile):
    for args in (
        ["--model", "Qwen/Qwen3-30B-A3B"],  # the default engine of the profile
        ["--engine", "bundled"],  # the demo model
        ["--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"],
        ["--engine", "vllm", "--model", "meta-llama/Llama-3.1-8B-Instruct"],
        ["--engine", "bundled", "--model", "deepseek-ai/DeepSeek-V3", "--tp", "2", "--nnodes", "2"],
    ):
        _, data = check_json("--profile", profile, *args)
        assert data["facts"]["source"] == f"simulated:{profile}"


def test_strict_turns_warnings_into_exit_1():
    args = ["--profile", "h800-8", "--model", "Qwen/Qwen3-8B", "--tp", "8", "--engine", "bundled"]
    code, data = check_json(*args)
    assert code == 0 and data["summary"]["errors"] == 0 and data["summary"]["warnings"] >= 1
    strict, _ = check_json(*args, "--strict")
    assert strict == 1


def test_options_before_the_command_apply_to_it():
    result = invoke("--profile", "h200-8", "check", "--json", "--model", "Qwen/Qwen3-8B", "--engine", "vllm")
    data = json.loads(result.stdout)
    assert data["facts"]["source"] == "simulated:h200-8" and data["intent"]["engine"] == "vllm"
    # the command's own value wins over the group's
    result = invoke("--profile", "h200-8", "check", "--json", "--profile", "b200-8", "--model", "Qwen/Qwen3-8B")
    assert json.loads(result.stdout)["facts"]["source"] == "simulated:b200-8"


def test_defaults_follow_the_facts():
    _, data = check_json("--profile", "b300-8", "--model", "Qwen/Qwen3-8B")
    assert data["intent"]["engine"] == "sglang" and data["intent"]["tp"] == 8  # sglang installed, 8 GPUs
    _, data = check_json("--profile", "cpu-only")
    assert data["intent"]["engine"] == "bundled" and data["intent"]["tp"] == 2  # the demo model on two gloo ranks
    assert data["model"]["id"] == "demo" and data["intent"]["model"] is None


# -- human output ------------------------------------------------------------------------------------------------------


def test_human_check_shows_every_section():
    result = invoke("check", *B300_VL, "--engine-version", "0.5.13", *MISMATCH)
    assert result.exit_code == 1
    out = result.stdout
    for title in ("Machine", "Topology", "Packages", "Scenario", "Decisions", "Problems", "Command"):
        assert title in out
    lines = out.splitlines()
    header = next(line for line in lines if line.split()[:3] == ["GPU0", "GPU1", "GPU2"])
    assert header.split() == [f"GPU{i}" for i in range(8)]
    row3 = next(line for line in lines if line.startswith("GPU3 ") and "NV18" in line).split()
    assert row3 == ["GPU3", "NV18", "NV18", "NV18", "X", "NV18", "NV18", "NV18", "NV18"]
    flashinfer_row = next(line for line in lines if line.startswith("flashinfer-python "))
    assert "0.6.12" in flashinfer_row and "mismatch" in flashinfer_row
    assert re.search(r"\[x\]\s+architectures\[0\]", out) and "to change:" in out
    assert "flashinfer_version_mismatch" in out and "fix:" in out
    assert " -m sglang.launch_server --model-path Qwen/Qwen3-VL-235B-A22B-Instruct --tp-size 8" in out
    assert "\x1b[" not in out
    assert not [line for line in lines if line != line.rstrip()]


def test_pcie_topology_codes_and_legend():
    out = invoke("check", "--profile", "l40s-4", "--model", "Qwen/Qwen3-8B", "--engine", "vllm").stdout
    matrix = [line.split() for line in out.splitlines() if re.match(r"GPU\d+ ", line) and "|" not in line]
    cells = {cell for row in matrix for cell in row[1:5]}
    assert cells <= {"X", "PIX", "PXB", "PHB", "NODE", "SYS"} and "X" in cells and len(cells) > 1
    assert "SMP interconnect" in out or "PCIe" in out


# -- explain -----------------------------------------------------------------------------------------------------------


def test_explain_shows_the_whole_decision_and_release_matrix():
    result = invoke("explain", "flashinfer_allreduce_fusion", *B300_VL, "--engine-version", "0.5.13")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.count("why:") == out.count("to change:") >= 6  # every condition, passing ones included
    assert "release matrix" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isdigit()}
    assert "architecture" in rows["0.5.13"] and "auto-enabled" in rows["0.5.14"]
    assert "source: sglang v0.5.13" in out


def test_explain_json():
    result = invoke("explain", "custom_allreduce", *B300_VL, "--json")
    data = json.loads(result.stdout)
    assert data["decision"]["id"] == "custom_allreduce" and data["release_matrix"] == []
    assert data["problems"] == []  # no note of this decision names a problem
    jsonschema.validate(data["decision"], {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/decision"})


def test_explain_unknown_rule_lists_valid_ids():
    result = CliRunner().invoke(main, ["explain", "fusion", *B300_VL])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "flashinfer_allreduce_fusion" in result.stderr and "memory_defaults" in result.stderr


# -- probe, profiles, version --------------------------------------------------------------------------------------------


def test_probe_saves_facts_that_check_replays(tmp_path):
    path = tmp_path / "facts.json"
    result = invoke("probe", "--profile", "h100-sxm-8", "-o", str(path))
    assert result.exit_code == 0 and "advisor check --facts" in result.stdout
    saved = Facts.load(path)
    assert saved.gpus == load_profile("h100-sxm-8").gpus
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left nothing behind
    _, data = check_json("--facts", str(path), "--model", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--engine-version", "0.5.11")
    assert data["facts"]["source"] == f"file:{path}"
    assert decision(data, "flashinfer_allreduce_fusion")["state"] == "auto-enabled"


def test_probe_json_is_valid_facts():
    data = json.loads(invoke("probe", "--json", "--profile", "gb200-nvl72-tray").stdout)
    assert not list(FACTS_VALIDATOR.iter_errors(data))
    assert data["topology"]["fabric"]["state"] == "completed"


def test_probe_takes_options_given_before_it():
    data = json.loads(invoke("--profile", "l40s-4", "probe", "--json").stdout)
    assert data["source"] == "simulated:l40s-4"


def test_probe_human_output():
    out = invoke("probe", "--profile", "h100-pcie-2-bridge").stdout
    assert "Machine" in out and "Topology" in out and "Packages" in out
    assert "NVSwitch" in out and "GPU1" in out


def test_profiles_lists_every_profile_with_a_summary():
    result = invoke("profiles")
    assert result.exit_code == 0
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == list_profiles()
    assert "NVIDIA B300" in result.stdout
    data = json.loads(invoke("profiles", "--json").stdout)
    assert list(data) == list_profiles() and all(data.values())


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"advisor {__version__}"


def test_bare_advisor_opens_the_app_with_the_options(monkeypatch):
    """The group hands its options to the TUI's run_app (the TUI itself is tested in its own suite)."""
    seen = []
    fake = types.ModuleType("advisor.tui.app")
    fake.run_app = lambda options: seen.append(options)
    monkeypatch.setitem(sys.modules, "advisor.tui.app", fake)
    monkeypatch.setattr(interactive, "interactive_terminal", lambda: True)  # CliRunner's stdin and stdout are not terminals
    result = invoke("--profile", "b300-8", "--tp", "4", "--with-package", "sglang==0.5.14")
    assert result.exit_code == 0, result.output
    (options,) = seen
    assert options.profile == "b300-8" and options.tp == 4 and options.with_package == ("sglang==0.5.14",)


def test_bare_advisor_without_a_terminal_prints_the_check_report(monkeypatch):
    """Piped or redirected, bare `advisor` prints what `advisor check` prints (same exit code), never the app."""
    fake = types.ModuleType("advisor.tui.app")
    fake.run_app = lambda options: pytest.fail("the app started without a terminal")
    monkeypatch.setitem(sys.modules, "advisor.tui.app", fake)
    args = ("--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B")
    bare, check = invoke(*args), invoke("check", *args)
    assert bare.exit_code == check.exit_code == 0, bare.output
    assert bare.stdout == check.stdout
    assert "\x1b[" not in bare.stdout and "Decisions" in bare.stdout


def test_check_and_explain_take_engine_args_after_double_dash():
    _, data = check_json("--profile", "h200-8", "--model", "Qwen/Qwen3-8B", "--engine", "vllm", "--tp", "2", "--", "-O0",
                         "--max-num-seqs", "64")  # fmt: skip
    decisions = {d["id"]: d for d in data["decisions"]}
    assert decisions["compilation"]["state"] == "forced-off"
    assert decisions["flashinfer_allreduce_fusion"]["state"] == "not-enabled"
    assert decisions["memory_defaults"]["state"] == "forced-on" and decisions["memory_defaults"]["value"]["max_num_seqs"] == 64
    assert data["intent"]["overrides"] == ["-O0", "--max-num-seqs", "64"]
    result = invoke("explain", "custom_allreduce", "--json", "--profile", "h200-8", "--model", "Qwen/Qwen3-8B",
                    "--engine", "vllm", "--tp", "2", "--", "--disable-custom-all-reduce")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["decision"]["state"] == "forced-off"
