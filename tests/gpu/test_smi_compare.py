"""The probe-vs-nvidia-smi comparison (tests/gpu/smi_compare.py) on recorded nvidia-smi output: a two-GPU H200 machine
written in nvidia-smi's documented formats, against the probe's facts for the same GPUs (agreeing), and against facts
changed one field at a time (each change must be reported). Runs on CPU, in the default test run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from smi_compare import compare, main, parse_compute_cap, parse_nvlink_status, parse_smi_xml, parse_topo

from advisor.probe.profiles import load_profile

DATA = Path(__file__).parent / "data"


def recorded() -> dict[str, str]:
    return {
        "smi_xml": (DATA / "h200-2.smi.xml").read_text(),
        "topo": (DATA / "h200-2.topo.txt").read_text(),
        "nvlink": (DATA / "h200-2.nvlink.txt").read_text(),
        "compute_cap": (DATA / "h200-2.compute_cap.csv").read_text(),
    }


@pytest.fixture
def facts() -> dict:
    """`advisor probe --json` for the recorded machine: GPUs 0 and 1 of the simulated h200-8 profile."""
    return json.loads((DATA / "h200-2.probe.json").read_text())


def test_the_recorded_probe_is_the_h200_profiles_first_two_gpus(facts):
    profile = json.loads(load_profile("h200-8").to_json())
    assert facts["gpus"] == profile["gpus"][:2] and facts["driver"] == profile["driver"]
    assert facts["topology"]["links"] == [profile["topology"]["links"][0]]


def test_parsers_read_the_documented_formats():
    smi = parse_smi_xml(recorded()["smi_xml"])
    assert (smi.driver_version, smi.cuda_version, smi.attached_gpus) == ("580.95.05", "13.0", 2)
    assert smi.gpus[1].name == "NVIDIA H200" and smi.gpus[1].pci_bus_id == "00000000:2A:00.0"
    assert smi.gpus[0].memory_total_mib == 143771 and smi.gpus[0].mig_mode == "disabled"
    assert parse_topo(recorded()["topo"]) == {0: {0: "X", 1: "NV18"}, 1: {0: "NV18", 1: "X"}}
    assert parse_nvlink_status(recorded()["nvlink"]) == {0: 18, 1: 18}
    assert parse_nvlink_status("GPU 0: NVIDIA L40S (UUID: GPU-1)\n\t Link 0: <inactive>\n") == {0: 0}
    assert parse_compute_cap(recorded()["compute_cap"]) == {0: (9, 0), 1: (9, 0)}


def test_agreeing_facts_pass_every_field(facts):
    checks, unchecked = compare(facts, **recorded())
    assert unchecked == []
    assert [c.field for c in checks if not c.ok] == []
    fields = {c.field for c in checks}
    for gpu in ("gpu[0]", "gpu[1]"):
        for name in ("name", "uuid", "pci_bus_id", "memory_total_mib", "mig_mode", "capability", "nvlinks_active"):
            assert f"{gpu}.{name}" in fields
    assert {"driver.version", "driver.cuda_version", "gpu_count", "topology"} <= fields


@pytest.mark.parametrize(
    ("path", "value", "failed"),
    [
        (("gpus", 0, "name"), "NVIDIA H100 80GB HBM3", "gpu[0].name"),
        (("gpus", 1, "uuid"), "GPU-00000000-0000-0000-0000-000000000000", "gpu[1].uuid"),
        (("gpus", 1, "pci_bus_id"), "00000000:2B:00.0", "gpu[1].pci_bus_id"),
        (("gpus", 0, "memory_total_mib"), 143770, "gpu[0].memory_total_mib"),
        (("gpus", 0, "memory_total_mib"), None, "gpu[0].memory_total_mib"),  # unknown to the probe is a failure too
        (("gpus", 0, "capability"), [8, 0], "gpu[0].capability"),
        (("gpus", 1, "mig_mode"), "enabled", "gpu[1].mig_mode"),
        (("gpus", 1, "nvlinks_active"), 12, "gpu[1].nvlinks_active"),
        (("driver", "version"), "570.124.06", "driver.version"),
        (("driver", "cuda_version"), "12.8", "driver.cuda_version"),
        (("topology", "links", 0, "nvlinks"), 0, "topology"),  # then the probe's cell is the PCIe level, PXB
    ],
)
def test_each_differing_field_is_reported(facts, path, value, failed):
    changed = copy.deepcopy(facts)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    checks, _ = compare(changed, **recorded())
    assert [c.field for c in checks if not c.ok] == [failed]


def test_a_missing_gpu_fails(facts):
    facts["gpus"] = facts["gpus"][:1]
    failed = {c.field for c in compare(facts, **recorded())[0] if not c.ok}
    assert {"gpu_count", "gpu[1].name", "gpu[1].uuid", "topology"} <= failed


def test_cli_exit_codes_and_json(facts, tmp_path, capsys):
    paths = {}
    for name, text in recorded().items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps(facts))
    args = [str(probe), str(paths["smi_xml"]), str(paths["topo"]), "--nvlink", str(paths["nvlink"]),
            "--compute-cap", str(paths["compute_cap"]), "--json", str(tmp_path / "out.json")]
    assert main(args) == 0
    assert "18/18 fields agree" in capsys.readouterr().out
    assert json.loads((tmp_path / "out.json").read_text())["ok"] is True
    facts["gpus"][0]["name"] = "NVIDIA A100"
    probe.write_text(json.dumps(facts))
    assert main(args) == 1
    assert "DIFF gpu[0].name: probe 'NVIDIA A100', nvidia-smi 'NVIDIA H200'" in capsys.readouterr().out
    assert main([str(probe), str(tmp_path / "missing.xml"), str(paths["topo"])]) == 1
    assert capsys.readouterr().err.startswith("error: cannot compare")
