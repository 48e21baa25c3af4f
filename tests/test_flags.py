"""advisor.rules.engine.flag_values: the one reading of flags in an engine argument list, and the callers built on it
(Scenario.flag / flag_value, SGLang's argument check with argparse's reading, vLLM's -O)."""

from __future__ import annotations

import pytest

from advisor.rules.engine import flag_value, flag_values, has_flag


@pytest.mark.parametrize(("tokens", "dash", "argparse", "anything"), [
    (["--f", "v"], ["v"], ["v"], ["v"]),
    (["--f=v"], ["v"], ["v"], ["v"]),
    (["--f="], [""], [""], [""]),  # an empty value is a value
    (["--f", "a", "--g", "--f=b", "--f", "c"], ["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c"]),  # repeated, in order
    (["--f", "--g", "1"], [None], [None], ["--g"]),  # followed by another flag
    (["--f", "-x"], [None], ["-x"], ["-x"]),  # a short flag (dash) or a value (argparse: -1 is a number)
    (["--f", "-1"], ["-1"], ["-1"], ["-1"]),  # a negative number is a value, as argparse reads it
    (["--f", "-0.5", "--f", "-.5", "--f", "-1.", "--f", "-1e3"], ["-0.5", "-.5", None, None], ["-0.5", "-.5", "-1.", "-1e3"],
     ["-0.5", "-.5", "-1.", "-1e3"]),
    (["--g", "--f"], [None], [None], [None]),  # bare at the end
    (["--fx", "1", "--f-y=2", "f", "--g=--f"], [], [], []),  # longer names and values that merely contain it
    ([], [], [], []),
])  # fmt: skip
def test_flag_values(tokens, dash, argparse, anything):
    assert flag_values(tokens, "--f") == dash
    assert flag_values(tokens, "--f", next_flag="--") == argparse
    assert flag_values(tokens, "--f", next_flag=None) == anything


@pytest.mark.parametrize(("tokens", "values"), [
    (["-O3"], ["3"]), (["-O", "3"], ["3"]), (["-O=3"], ["3"]), (["-O==3"], ["=3"]),  # vLLM v0.33.0 utils/argparse_utils.py: arg[3:] if arg[2] == "=" else arg[2:]
    (["--optimization-level", "1", "-O2"], ["1", "2"]), (["--optimization-level=0"], ["0"]),
    (["-O"], [None]), (["-O.mode=3"], [".mode=3"]), (["-Oz", "--other"], ["z"]),
])  # fmt: skip
def test_a_one_letter_flag_takes_its_value_attached(tokens, values):
    assert flag_values(tokens, "-O", "--optimization-level", next_flag=None) == values


def test_a_long_single_dash_name_takes_no_attached_value():
    assert flag_values(["-cc.pass_config.fuse_allreduce_rms=True"], "-cc.pass_config.fuse_allreduce_rms") == ["True"]
    assert flag_values(["-cc.pass_config.fuse_allreduce_rmsX"], "-cc.pass_config.fuse_allreduce_rms") == []


@pytest.mark.parametrize(("tokens", "value"), [
    (["--f", "v"], "v"), (["--f=v", "--f", "w"], "w"), (["--f", "v", "--f"], ""),  # the last one wins; bare is ""
    (["--f", "-x"], ""), (["--f="], ""), (["--g", "1"], None), ([], None),
])  # fmt: skip
def test_flag_value_is_the_last_value_and_bare_is_empty(tokens, value):
    assert flag_value(tokens, "--f") == value
    assert has_flag(tokens, "--f") == (value is not None)


def test_the_callers_read_what_they_read_before():
    from advisor.plan import Intent
    from advisor.probe.profiles import load_profile
    from advisor.rules.engine import Scenario
    from advisor.rules.sglang.arguments import argument_problems
    from advisor.rules.vllm.compilation import optimization_level

    facts = load_profile("h100-sxm-8")

    def scenario(*overrides: str) -> Scenario:
        return Scenario(facts, None, Intent(tp=8, engine="sglang", overrides=overrides))

    # SGLang's check reads "--x" after a flag as a missing value and "-1" as a value, as argparse does.
    missing = argument_problems(scenario("--attention-backend", "--disable-custom-all-reduce"), "0.5.14")
    assert [p.message.rsplit(": ", 1)[1] for p in missing] == ["--attention-backend needs a value"]
    assert not argument_problems(scenario("--cuda-graph-max-bs", "-1"), "0.5.14")
    # vLLM: -O as its parser takes it; the last level given wins.
    assert optimization_level(scenario("-O", "1", "--optimization-level=3", "-O0")) == 0
    assert optimization_level(scenario("-O")) == 2
    # The rules' reading: a dash ends a flag, so `--attention-backend -O3` has no value.
    assert scenario("--attention-backend", "-O3").flag("--attention-backend") == ""
