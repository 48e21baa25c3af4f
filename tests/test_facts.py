"""Facts: JSON round trips, saved files, and one-line errors for files this version cannot read."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from advisor.facts import SCHEMA_VERSION, Facts, FactsError, cuda_from_label, normalize_name
from advisor.probe.profiles import list_profiles, load_profile


@pytest.mark.parametrize("name", list_profiles())
def test_every_profile_round_trips_through_json(name, tmp_path):
    facts = load_profile(name)
    assert Facts.from_json(facts.to_json()) == facts
    path = tmp_path / f"{name}.json"
    facts.save(path)
    loaded = Facts.load(path)
    assert loaded.source == f"file:{path}"
    assert loaded.gpus == facts.gpus and loaded.topology == facts.topology and loaded.packages == facts.packages
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.json"]  # no temporary file left behind


def test_live_facts_round_trip(fake_nvml):
    from advisor.probe.live import probe_live

    facts = probe_live(environ={"CUDA_VISIBLE_DEVICES": "1,0"}, nvml=fake_nvml("gb200-nvl72-tray"))
    assert Facts.from_json(facts.to_json()) == facts


def test_a_loaded_file_never_claims_its_interpreter_is_this_machines(fake_nvml, tmp_path):
    from advisor.probe.live import probe_live

    facts = probe_live(environ={}, nvml=fake_nvml("h100-sxm-8"))
    assert facts.python_here  # probed here: printed commands may name it
    facts.save(tmp_path / "f.json")
    loaded = Facts.load(tmp_path / "f.json")
    assert loaded == replace(facts, source=f"file:{tmp_path / 'f.json'}", python_here=False)


def write(tmp_path, text):
    path = tmp_path / "facts.json"
    path.write_text(text)
    return path


def one_line_error(path) -> str:
    with pytest.raises(FactsError) as caught:
        Facts.load(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_malformed_json_names_the_file_and_the_place(tmp_path):
    message = one_line_error(write(tmp_path, '{"schema_version": 1,'))
    assert "not valid JSON (line 1" in message and "advisor probe -o" in message


def test_newer_schema_names_both_versions(tmp_path):
    message = one_line_error(write(tmp_path, json.dumps({"schema_version": SCHEMA_VERSION + 1})))
    assert f"schema {SCHEMA_VERSION + 1} is newer" in message and "upgrade tp-advisor" in message


@pytest.mark.parametrize(
    "data, words",
    [
        ([], "expected a JSON object"),
        ({"source": "live"}, "no integer schema_version"),
        ({"schema_version": 1, "gpus": [{"name": "x"}]}, "Gpu lacks index"),
        ({"schema_version": 1, "gpus": [{"index": 0, "capability": "9.0"}]}, "capability must be a list"),
        ({"schema_version": 1, "topology": []}, "Topology must be an object"),
    ],
)
def test_malformed_facts(tmp_path, data, words):
    assert words in one_line_error(write(tmp_path, json.dumps(data)))


def test_missing_and_unreadable_files(tmp_path):
    assert "no such facts file" in one_line_error(tmp_path / "absent.json")
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00")
    assert "cannot read facts file" in one_line_error(path)


def test_older_files_fill_new_fields_with_defaults():
    facts = Facts.from_json(json.dumps({"schema_version": 1, "gpus": [{"index": 0, "name": "NVIDIA H20"}]}))
    assert facts.gpus[0].name == "NVIDIA H20" and facts.gpus[0].unknown == {}
    assert facts.visible_gpus is None and facts.engine_gpus == facts.gpus and facts.visible_gpus_note is None


def test_with_packages_overrides_a_version():
    facts = load_profile("h20-8").with_packages({"flashinfer_jit_cache": "0.6.11+cu129", "torch": "2.9.1+cu128"})
    jit = facts.package("flashinfer-jit-cache")
    assert (jit.version, jit.module_version, jit.local_label, jit.overridden) == ("0.6.11+cu129", "0.6.11+cu129", "cu129", True)
    assert facts.package("torch").cuda == "12.8"
    assert facts.package("flashinfer-python").version == "0.6.12"
    assert facts.package("vllm").installed is False


def test_engine_gpus_follow_visible_order():
    facts = load_profile("l40s-4")
    from dataclasses import replace

    assert [g.index for g in replace(facts, visible_gpus=(2, 0)).engine_gpus] == [2, 0]


def test_names_and_labels():
    assert normalize_name("Flashinfer_Python") == "flashinfer-python"
    assert normalize_name("sgl.kernel") == "sgl-kernel"
    assert cuda_from_label("cu128") == "12.8" and cuda_from_label("cu130") == "13.0"
    assert cuda_from_label("cpu") is None and cuda_from_label(None) is None
