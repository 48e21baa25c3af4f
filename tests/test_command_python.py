"""The interpreter a printed command names: this machine's only for a plan of this machine, the one --python names when
given, and for a machine that is not this one (a profile, a saved facts file) what a person types there."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import pytest
from cli_json import invoke

from advisor.context import Options, plan_for, resolve
from advisor.facts import Facts
from advisor.probe.profiles import list_profiles, load_profile
from advisor.rules import registry
from advisor.rules.command import OTHER_MACHINE_PYTHON, command_for

MODEL = "Qwen/Qwen3-8B"


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


def names_this_machine(argv: list[str]) -> bool:
    """Whether a token is an interpreter or program of this machine's Python environment."""
    ours = {sys.executable, os.path.realpath(sys.executable)}
    return any(token in ours or token.startswith(sys.prefix + os.sep) for token in argv)


@pytest.mark.parametrize("engine", registry.names())
@pytest.mark.parametrize("profile", list_profiles())
def test_a_profiles_command_never_names_an_interpreter_of_this_machine(profile, engine):
    facts, spec, intent = resolve(Options(profile=profile, engine=engine, model=None if engine == "bundled" else MODEL))
    plan = plan_for(facts, spec, intent)
    if not plan.argv:  # the plan cannot become a command (a problem says why)
        return
    assert not names_this_machine(list(plan.argv)), plan.argv
    assert facts.python_executable not in plan.argv  # nor the profile's recorded path: it is no one's interpreter here
    assert plan.argv[0] in (OTHER_MACHINE_PYTHON, "vllm")


@pytest.mark.parametrize("engine", registry.names())
def test_a_saved_facts_file_is_another_machine_too(engine, tmp_path):
    path = tmp_path / "node.json"
    replace(load_profile("h100-sxm-8"), source="live", python_executable=sys.executable).save(path)
    facts = Facts.load(path)
    assert not facts.python_here  # saved here or elsewhere, a loaded file is not this machine's probe
    plan = plan_for(*resolve(Options(facts_file=str(path), engine=engine, model=None if engine == "bundled" else MODEL)))
    assert not names_this_machine(list(plan.argv)), plan.argv


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_python_with_a_profile_names_that_interpreter(engine):
    """--python with a profile: the packages were read from that interpreter, here, so it is the one to run."""
    result = invoke("check", "--json", "--profile", "h100-sxm-8", "--python", sys.executable, "--engine", engine,
                    "--model", MODEL)  # fmt: skip
    argv = json.loads(result.stdout)["argv"]
    interpreter = json.loads(result.stdout)["facts"]["python_executable"]
    assert interpreter and os.path.samefile(interpreter, sys.executable)
    program = argv[0]
    # SGLang runs through the interpreter; vLLM through its console script beside it, else its module
    assert program == interpreter or os.path.dirname(program) == os.path.dirname(interpreter), argv


def test_live_facts_name_the_probed_interpreter():
    facts, spec, intent = resolve(Options(profile="h100-sxm-8", engine="sglang", model=MODEL))
    live = replace(facts, source="live", python_executable="/opt/sgl/bin/python", python_here=True)
    assert command_for(plan_for(live, spec, intent))[0] == "/opt/sgl/bin/python"
