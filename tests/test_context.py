"""advisor.context: one path from the common options to Facts, ModelSpec, Intent and Plan, with one-line errors."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from advisor.context import (
    EXIT_ERRORS,
    EXIT_USAGE,
    AdvisorError,
    Options,
    default_engine,
    default_tp,
    exit_code_for,
    load_facts,
    make_plan,
    parse_with_packages,
    resolve,
)
from advisor.facts import Facts
from advisor.probe.profiles import load_profile

VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"


pytestmark = pytest.mark.usefixtures("empty_hf_cache")


def error_of(func, *args) -> AdvisorError:
    with pytest.raises(AdvisorError) as info:
        func(*args)
    message = str(info.value)
    assert "\n" not in message and message
    return info.value


def test_options_from_params_ignores_other_keys_and_freezes_lists():
    options = Options.from_params({"tp": 4, "with_package": ["a==1"], "as_json": True, "overrides": ["--x"]})
    assert options.tp == 4 and options.with_package == ("a==1",) and options.overrides == ("--x",)
    with pytest.raises(AttributeError):
        options.tp = 2  # frozen: the TUI derives new options with dataclasses.replace


def test_parse_with_packages():
    assert parse_with_packages(["flashinfer-python==0.6.12", " torch == 2.9.0+cu128 "]) == {
        "flashinfer-python": "0.6.12",
        "torch": "2.9.0+cu128",
    }
    for bad in ("flashinfer-python", "torch=2.9", "==1.0", "torch==", "torch===1", "a b==1"):
        assert error_of(parse_with_packages, [bad]).exit_code == EXIT_USAGE


def test_load_facts_from_each_source(tmp_path):
    profile = load_facts(Options(profile="h200-8"))
    assert profile.source == "simulated:h200-8" and len(profile.gpus) == 8
    path = tmp_path / "facts.json"
    profile.save(path)
    from_file = load_facts(Options(facts_file=str(path)))
    assert from_file.source == f"file:{path}" and from_file.gpus == profile.gpus
    live = load_facts(Options())
    assert live.source == "live"


def test_exactly_one_machine_source(tmp_path):
    err = error_of(load_facts, Options(profile="h200-8", facts_file=str(tmp_path / "f.json")))
    assert err.exit_code == EXIT_USAGE and "only one" in str(err)


def test_bad_sources_name_the_fix(tmp_path):
    err = error_of(load_facts, Options(profile="h900-8"))
    assert err.exit_code == EXIT_USAGE and "b300-8" in str(err)
    err = error_of(load_facts, Options(facts_file=str(tmp_path / "missing.json")))
    assert err.exit_code == EXIT_ERRORS and "advisor probe -o" in str(err)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert error_of(load_facts, Options(facts_file=str(broken))).exit_code == EXIT_ERRORS


def test_with_package_overrides_the_probed_version():
    facts = load_facts(Options(profile="b300-8", with_package=("flashinfer-jit-cache==0.6.11+cu128",)))
    pkg = facts.package("flashinfer-jit-cache")
    assert pkg.version == "0.6.11+cu128" and pkg.local_label == "cu128" and pkg.overridden


def test_python_replaces_the_packages_of_a_profile():
    facts = load_facts(Options(profile="b300-8", python=sys.executable))
    assert facts.source == "simulated:b300-8" and len(facts.gpus) == 8  # the machine stays simulated
    assert facts.package("torch").version == load_facts(Options()).package("torch").version  # this venv's torch
    assert not facts.package("sglang").installed  # the profile's sglang is gone with its packages
    assert facts.python_executable and facts.python_here  # an interpreter of this machine: printed commands name it


def test_python_errors(tmp_path):
    # an interpreter that is not there is an input that could not be used, like a missing facts file: exit 1
    assert error_of(load_facts, Options(python=str(tmp_path / "nope"))).exit_code == EXIT_ERRORS
    garbage = tmp_path / "fakepython"
    garbage.write_text("#!/bin/sh\necho hello\n", encoding="utf-8")
    garbage.chmod(0o755)
    err = error_of(load_facts, Options(profile="cpu-only", python=str(garbage)))
    assert err.exit_code == EXIT_ERRORS and "not a working Python" in str(err)


def test_default_engine_and_tp():
    b300 = load_profile("b300-8")
    assert default_engine(b300) == "sglang"  # sglang installed in the profile
    cpu = load_profile("cpu-only")
    assert default_engine(cpu) == "bundled"
    assert default_engine(cpu.with_packages({"sglang": "0.5.14"})) == "sglang"
    assert default_tp(b300, "sglang", VL) == 8
    assert default_tp(replace(b300, visible_gpus=(2, 3)), "sglang", VL) == 2  # CUDA_VISIBLE_DEVICES=2,3
    assert default_tp(cpu, "bundled", None) == 2  # the demo model on two gloo ranks
    assert default_tp(cpu, "bundled", "Qwen/Qwen3-8B") == 1
    assert default_tp(cpu, "sglang", "Qwen/Qwen3-8B") == 1


def test_resolve_fills_in_the_defaults():
    facts, model, intent = resolve(Options(profile="b300-8", model=VL))
    assert isinstance(facts, Facts) and model.architecture == "Qwen3VLMoeForConditionalGeneration"
    assert (intent.engine, intent.tp, intent.model, intent.engine_version) == ("sglang", 8, VL, None)
    _, demo, intent = resolve(Options(profile="cpu-only"))
    assert intent.engine == "bundled" and intent.model is None and demo is not None and demo.id == "demo"


def test_resolve_usage_errors():
    err = error_of(resolve, Options(profile="b300-8"))  # sglang needs a model
    assert err.exit_code == EXIT_USAGE and "--model" in str(err)
    assert error_of(resolve, Options(profile="b300-8", tp=0)).exit_code == EXIT_USAGE
    assert error_of(resolve, Options(profile="b300-8", model=VL, engine="trt")).exit_code == EXIT_USAGE
    err = error_of(resolve, Options(profile="b300-8", model=VL, engine_version="latest"))
    assert err.exit_code == EXIT_USAGE and "X.Y.Z" in str(err)


def test_resolve_model_errors(tmp_path):
    err = error_of(resolve, Options(profile="b300-8", model="nobody/nothing"))
    assert err.exit_code == EXIT_ERRORS and "nobody/nothing" in str(err)
    (tmp_path / "config.json").write_text("[1, 2", encoding="utf-8")
    assert error_of(resolve, Options(profile="b300-8", model=str(tmp_path))).exit_code == EXIT_ERRORS


def test_make_plan_and_exit_codes():
    plan = make_plan(Options(profile="b300-8", model=VL, engine_version="0.5.14"))
    assert plan.decision("flashinfer_allreduce_fusion").state == "auto-enabled"
    assert exit_code_for(plan) == 0
    broken = make_plan(
        Options(profile="b300-8", model=VL, with_package=("flashinfer-python==0.6.12", "flashinfer-jit-cache==0.6.11"))
    )
    assert exit_code_for(broken) == 1
    warned = make_plan(Options(profile="h800-8", model="Qwen/Qwen3-8B", engine="bundled"))
    assert {p.severity for p in warned.problems} >= {"warning"} and not warned.has_errors
    assert exit_code_for(warned) == 0 and exit_code_for(warned, strict=True) == 1


def test_plan_errors_become_usage_errors():
    err = error_of(make_plan, Options(profile="b300-8", model=VL, engine_version="0.1.0"))
    assert err.exit_code == EXIT_USAGE
