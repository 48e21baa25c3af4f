"""`advisor diff`: what changes for one scenario between two releases of an engine."""

from __future__ import annotations

import pytest
from cli_json import command_json, invoke

from advisor.rules.sglang import releases as sglang_releases

B300_VL = ["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8", "--engine", "sglang"]
BACKEND = ["--flashinfer-allreduce-fusion-backend", "auto"]


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


def diff_json(*args: str) -> dict:
    return command_json("diff", "diff.schema.json", *args)


def change(data: dict, decision_id: str) -> dict:
    return next(c for c in data["changes"] if c["id"] == decision_id)


def test_qwen3_vl_on_b300_gains_the_fusion_in_0_5_14():
    data = diff_json(*B300_VL, "--from", "0.5.13", "--to", "0.5.14")
    fusion = change(data, "flashinfer_allreduce_fusion")
    assert fusion["from"] == {"state": "not-enabled", "value": False, "flags": [], "settings": {}}
    assert fusion["to"] == {"state": "auto-enabled", "value": "auto", "flags": BACKEND, "settings": {}}
    architecture = next(c for c in fusion["conditions"] if c["id"] == "architecture")
    assert (architecture["from"], architecture["to"]) == (False, True)
    assert fusion["changed_in"] == "0.5.14" and "PR #28786" in fusion["source"]
    assert data["argv"]["to"][-2:] == BACKEND and "--flashinfer-allreduce-fusion-backend" not in data["argv"]["from"]
    assert [c["id"] for c in data["changes"]] == ["flashinfer_allreduce_fusion"]  # nothing else differs


def test_human_output_says_what_changed_and_where():
    result = invoke("diff", *B300_VL, "--from", "0.5.13", "--to", "0.5.14")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("sglang 0.5.13 -> 0.5.14: Qwen/Qwen3-VL-235B-A22B-Instruct, tp 8")
    assert "state: not-enabled -> auto-enabled" in out
    assert "flags: (none) -> --flashinfer-allreduce-fusion-backend auto" in out
    assert "changed in sglang 0.5.14; source: sglang v0.5.14, python/sglang/srt/server_args.py (PR #28786" in out
    assert "command to:" in out and out.count("--flashinfer-allreduce-fusion-backend auto") == 2


def test_changed_in_names_the_first_release_of_the_change():
    """0.5.10 -> 0.5.16 on the B300: the fusion arrived in 0.5.14, not 0.5.16."""
    fusion = change(diff_json(*B300_VL, "--from", "0.5.10", "--to", "0.5.16"), "flashinfer_allreduce_fusion")
    assert fusion["changed_in"] == "0.5.14" and fusion["source"].startswith("sglang v0.5.14")
    back = change(diff_json(*B300_VL, "--from", "0.5.16", "--to", "0.5.10"), "flashinfer_allreduce_fusion")
    assert back["to"]["state"] == "not-enabled" and back["changed_in"] == "0.5.13"  # downgrading: lost at 0.5.13


def b300s_without_nvswitch(tmp_path) -> str:
    """B300 nodes (SM10x: SGLang fuses across nodes) without an NVSwitch, saved as a facts file."""
    from dataclasses import replace

    from advisor.probe.profiles import load_profile

    b300 = load_profile("b300-8")
    path = tmp_path / "b300-no-nvswitch.json"
    replace(b300, topology=replace(b300.topology, nvswitch=False)).save(path)
    return str(path)


def test_problems_added_and_removed_are_reported(tmp_path):
    """Two B300 nodes without NVSwitch multicast cannot create the fusion's mnnvl workspace: when 0.5.14 turns the
    fusion on for Qwen3-VL, the warning about it appears; going back removes it."""
    args = ["--facts", b300s_without_nvswitch(tmp_path), "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--engine",
            "sglang", "--tp", "16", "--nnodes", "2"]  # fmt: skip
    up = diff_json(*args, "--from", "0.5.13", "--to", "0.5.14")
    down = diff_json(*args, "--from", "0.5.14", "--to", "0.5.13")
    assert [p["id"] for p in up["problems_added"]] == ["no_multicast_for_fusion"] and up["problems_removed"] == []
    assert [p["id"] for p in down["problems_removed"]] == ["no_multicast_for_fusion"] and down["problems_added"] == []
    result = invoke("diff", *args, "--from", "0.5.13", "--to", "0.5.14")
    assert "problems added:" in result.stdout and "no_multicast_for_fusion" in result.stdout


def test_a_fusion_the_gpus_cannot_map_is_off_at_start_up(tmp_path):
    """Two H100s without peer-to-peer: 0.5.14 sets the fusion flag for Qwen3-VL, but the IPC workspace cannot be
    created, so the decision says off at start-up (and keeps the flag SGLang sets)."""
    from dataclasses import replace

    from advisor.probe.profiles import load_profile

    bridge = load_profile("h100-pcie-2-bridge")
    no_p2p = dict(nvlinks=0, nvlink_p2p=None, p2p_read="NS", p2p_write="NS")
    links = tuple(replace(link, **no_p2p) for link in bridge.topology.links)
    path = tmp_path / "h100-no-p2p.json"
    replace(bridge, topology=replace(bridge.topology, links=links)).save(path)
    args = ["--facts", str(path), "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--engine", "sglang", "--tp", "2"]
    data = diff_json(*args, "--from", "0.5.13", "--to", "0.5.14")
    fusion = change(data, "flashinfer_allreduce_fusion")
    assert fusion["to"]["state"] == "not-enabled" and fusion["to"]["flags"] == BACKEND
    assert data["problems_added"] == []


def test_defaults_from_installed_to_newest():
    data = diff_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--engine", "sglang")
    assert data["to_release"] == sglang_releases.NEWEST
    assert data["from_release"] == "0.5.9"  # the profile's installed sglang
    result = invoke("diff", *B300_VL, "--with-package", "sglang==0.5.14.post1")
    assert result.exit_code == 0 and "(from 0.5.14: installed)" in result.stdout


def test_same_release_is_no_change():
    data = diff_json(*B300_VL, "--from", "0.5.14", "--to", "v0.5.14")
    assert data["changes"] == [] and data["problems_added"] == [] and data["argv"]["from"] == data["argv"]["to"]
    result = invoke("diff", *B300_VL, "--from", "0.5.14", "--to", "0.5.14")
    assert result.exit_code == 0 and "same release: nothing changes" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "0.4.0"], "error: --from 0.4.0: sglang 0.4.0 is not a modelled release; pass one of 0.5.7 .."),
        (["--to", "9.9.9"], "error: --to 9.9.9: sglang 9.9.9 is not a modelled release"),
        (["--to", "latest"], "error: --to 'latest' is not a release number; pass X.Y.Z"),
    ],
)
def test_unknown_releases_are_one_line_usage_errors(args, message):
    result = invoke("diff", *B300_VL, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_bundled_engine_has_no_releases():
    result = invoke("diff", "--profile", "b300-8", "--engine", "bundled")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: advisor diff compares releases of sglang or vllm; the bundled engine has no")


def test_vllm_diff_with_one_modelled_release():
    from advisor.rules.registry import modelled_releases

    releases = modelled_releases("vllm")
    args = ["--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--engine", "vllm"]
    data = diff_json(*args, "--from", releases[0], "--to", releases[-1])
    assert data["engine"] == "vllm" and data["to_release"] == releases[-1]
    if len(releases) == 1:
        result = invoke("diff", *args)  # vllm is not installed in the profile and there is no release before
        assert result.exit_code == 2 and "pass --from" in result.stderr


def test_a_setting_that_changes_is_a_change():
    """The prefill (piecewise) CUDA graph turns on by default in v0.5.10: a memory_defaults setting, not its value."""
    args = ["--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "8", "--engine", "sglang"]
    memory = change(diff_json(*args, "--from", "0.5.9", "--to", "0.5.10"), "memory_defaults")
    assert memory["from"]["settings"]["piecewise_cuda_graph"] is False
    assert memory["to"]["settings"]["piecewise_cuda_graph"] is True and memory["changed_in"] == "0.5.10"
    result = invoke("diff", *args, "--from", "0.5.9", "--to", "0.5.10")
    assert "piecewise_cuda_graph: false -> true" in result.stdout
