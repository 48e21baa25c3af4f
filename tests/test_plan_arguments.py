"""Engine arguments after `--` that set what the plan sets (the model, the tensor- and data-parallel sizes): issue 30,
item 9. `--tp 8 -- --tp-size 4` used to report nothing while the command carried both flags (the engine takes the last);
now a contradiction is an error naming both and the fix, a repetition is a note, and the command line carries one value
per setting. DP attention with a dp size that does not divide tp is an error (SGLang's
ServerArgs._handle_data_parallelism asserts tp_size % dp_size == 0)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.command import command_for
from advisor.rules.sglang.arguments import DP_ATTENTION_ID
from advisor.rules.sglang.arguments import PLAN_ARGUMENTS as SGLANG_ARGUMENTS
from advisor.rules.vllm.arguments import PLAN_ARGUMENTS as VLLM_ARGUMENTS

MODEL = "Qwen/Qwen3-30B-A3B"
PROFILE = load_profile("h100-sxm-8")
SPEC = resolve_model(MODEL)
TP_SPELLINGS = {"sglang": ("--tensor-parallel-size", "--tp-size"), "vllm": ("--tensor-parallel-size", "-tp")}
MODEL_SPELLINGS = {"sglang": ("--model-path", "--model"), "vllm": ("--model",)}


def plan(engine: str, overrides: tuple[str, ...] = (), **intent):
    intent = Intent(engine=engine, model=MODEL, tp=intent.pop("tp", 8), overrides=overrides, **intent)
    return build_plan(PROFILE, SPEC, intent)


def ids(p, engine: str) -> list[tuple[str, str]]:
    return [(x.id, x.severity) for x in p.problems if x.id.startswith(f"{engine}_argument_") and "rejected" not in x.id]


def values(argv: list[str], spellings: tuple[str, ...]) -> list[str]:
    found = []
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if name in spellings:
            found.append(value if eq else argv[i + 1])
    return found


def test_the_issue_case_is_an_error_naming_both_and_the_fix():
    p = plan("sglang", ("--tp-size", "4"))
    [problem] = [x for x in p.problems if x.id == "sglang_argument_conflicts_plan"]
    assert problem.severity == "error"
    assert "--tp-size 4" in problem.message and "--tp 8" in problem.message
    assert "pass --tp 4" in problem.fix and "drop --tp-size" in problem.fix
    argv = command_for(p)
    assert values(argv, TP_SPELLINGS["sglang"]) == ["8"]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_repeated_plan_value_is_a_note_and_carried_once(engine):
    spelling = TP_SPELLINGS[engine][-1]
    p = plan(engine, (spelling, "8", "--max-num-seqs" if engine == "vllm" else "--mem-fraction-static", "0.8"))
    assert ids(p, engine) == [(f"{engine}_argument_in_plan", "info")]
    argv = command_for(p)
    assert values(argv, TP_SPELLINGS[engine]) == ["8"]
    assert "0.8" in argv  # the other overrides stay


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_second_model_is_an_error_and_the_line_names_one(engine):
    spelling = MODEL_SPELLINGS[engine][0]
    p = plan(engine, (f"{spelling}=other/model",))
    assert ids(p, engine) == [(f"{engine}_argument_conflicts_plan", "error")]
    argv = command_for(p)
    assert "other/model" not in " ".join(argv) and MODEL in argv


@pytest.mark.parametrize(("tp", "dp", "error"), [(8, 3, True), (1, 2, True), (6, 4, True), (8, 4, False), (8, 8, False)])
def test_dp_attention_needs_a_dp_size_that_divides_tp(tp, dp, error):
    p = plan("sglang", tp=tp, dp_attention=True, dp_size=dp)
    found = [x for x in p.problems if x.id == DP_ATTENTION_ID]
    assert bool(found) is error
    if error:
        assert found[0].severity == "error" and f"--dp-size {dp}" in found[0].message and f"--tp {tp}" in found[0].message


def test_without_such_arguments_nothing_changes():
    p = plan("sglang", ("--mem-fraction-static", "0.8"))
    assert ids(p, "sglang") == [] and not [x for x in p.problems if x.id == DP_ATTENTION_ID]
    assert command_for(p)[-2:] == ["--mem-fraction-static", "0.8"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    engine=st.sampled_from(["sglang", "vllm"]),
    setting=st.sampled_from(["tp", "dp_size"]),
    given_values=st.lists(st.integers(1, 16), min_size=1, max_size=3),
    attached=st.lists(st.booleans(), min_size=3, max_size=3),
    spelling_picks=st.lists(st.integers(0, 1), min_size=3, max_size=3),
    before=st.booleans(),
)
def test_any_spelling_and_order_gives_one_value_and_the_right_verdict(
    engine, setting, given_values, attached, spelling_picks, before
):
    arguments = {a.option: a for a in (SGLANG_ARGUMENTS if engine == "sglang" else VLLM_ARGUMENTS)}
    argument = arguments["--tp" if setting == "tp" else "--dp-size"]
    spellings = argument.spellings
    overrides: list[str] = ["--max-running-requests" if engine == "sglang" else "--max-num-seqs", "16"] if before else []
    for value, eq, pick in zip(given_values, attached, spelling_picks, strict=False):
        name = spellings[pick % len(spellings)]
        overrides += [f"{name}={value}"] if eq else [name, str(value)]
    p = plan(engine, tuple(overrides))
    planned = 8 if setting == "tp" else 1
    found = ids(p, engine)
    assert len(found) == len(given_values)
    conflicts = sum(value != planned for value in given_values)
    assert found.count((f"{engine}_argument_conflicts_plan", "error")) == conflicts
    assert found.count((f"{engine}_argument_in_plan", "info")) == len(given_values) - conflicts
    argv = command_for(p)
    assert len(values(argv, spellings)) <= 1  # the plan's value only (SGLang and vLLM leave dp 1 off the line)
    assert p.has_errors is (conflicts > 0)


@pytest.mark.parametrize(("engine", "spelling"), [("sglang", "--tp-size"), ("vllm", "-tp"), ("vllm", "--data-parallel-size")])
def test_a_value_that_is_not_a_number_is_an_error_and_left_off(engine, spelling):
    p = plan(engine, (spelling, "four"))
    assert (f"{engine}_argument_conflicts_plan", "error") in ids(p, engine)
    assert "four" not in command_for(p)


@pytest.mark.parametrize(("engine", "args", "tp", "exit_code"), [
    ("sglang", ("--tp-size", "4"), 4, 0), ("sglang", ("--tensor-parallel-size=2",), 2, 0), ("vllm", ("-tp", "4"), 4, 0),
    # two values after --: the last is the engine's and the plan's, the other contradicts it
    ("vllm", ("--tensor-parallel-size", "2", "-tp=4"), 4, 1),
])  # fmt: skip
def test_without_tp_the_plan_adopts_the_engine_tp_and_says_so(engine, args, tp, exit_code):
    """`advisor check -- --tp-size 4` (no --tp): the plan is made for tp 4, not for the number of GPUs."""
    from tests.cli_json import invoke

    result = invoke("check", "--json", "--profile", "h100-sxm-8", "--engine", engine, "--model", MODEL, "--", *args)
    data = json.loads(result.stdout)
    found = {(p["id"], p["severity"]) for p in data["problems"] if p["id"].startswith(f"{engine}_argument_")}
    assert (f"{engine}_argument_in_plan", "info") in found
    assert data["intent"]["tp"] == tp and values(data["argv"], TP_SPELLINGS[engine]) == [str(tp)]
    assert result.exit_code == exit_code


DP_SPELLINGS = {"sglang": ("--data-parallel-size", "--dp-size"), "vllm": ("--data-parallel-size", "-dp")}


@pytest.mark.parametrize(("engine", "args", "dp"), [
    ("sglang", ("--dp-size", "2"), 2), ("sglang", ("--data-parallel-size=4",), 4), ("vllm", ("-dp", "2"), 2),
])  # fmt: skip
def test_without_dp_size_the_plan_adopts_the_engine_dp_size_and_says_so(engine, args, dp):
    """`advisor check -- --dp-size 2` (no --dp-size): the engine's own value is the plan's, not a contradiction of a
    default the user never gave; `--dp-size 4 -- --dp-size 2` still is one."""
    from tests.cli_json import invoke

    base = ("check", "--json", "--profile", "h100-sxm-8", "--engine", engine, "--model", MODEL, "--tp", "8")
    result = invoke(*base, "--", *args)
    data = json.loads(result.stdout)
    assert result.exit_code == 0, data["problems"]
    assert (f"{engine}_argument_in_plan", "info") in {(p["id"], p["severity"]) for p in data["problems"]}
    assert data["intent"]["dp_size"] == dp and values(data["argv"], DP_SPELLINGS[engine]) == [str(dp)]
    other = json.loads(invoke(*base, "--dp-size", str(dp * 2), "--", *args).stdout)
    assert f"{engine}_argument_conflicts_plan" in {p["id"] for p in other["problems"]}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flag=st.sampled_from(["--attention-backend", "--mem-fraction-static", "--moe-runner-backend", "--chunked-prefill-size",
                          "--max-running-requests"]),
    position=st.integers(3, 40), letter=st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
    edit=st.sampled_from(["drop", "add", "replace"]), attached=st.booleans(),
)
def test_a_flag_one_slip_from_a_known_one_is_reported(flag, position, letter, edit, attached):
    """A misspelt engine flag after -- used to pass silently; the release's own option list (cli_flags.json) refuses it
    as SGLang's argparse does (sglang_argument_rejected, naming the flag it looks like), unless argparse takes it as the
    abbreviation of exactly one option."""
    from advisor.rules.sglang.arguments import ERROR_ID
    from advisor.rules.sglang.flags import known_flags

    listed = known_flags("0.5.9")
    i = min(position, len(flag) - 1)
    slip = {"drop": flag[:i] + flag[i + 1:], "add": flag[:i] + letter + flag[i:],
            "replace": flag[:i] + letter + flag[i + 1:]}[edit]  # fmt: skip
    p = plan("sglang", (f"{slip}=1",) if attached else (slip, "1"), engine_version="0.5.9")
    found = [x for x in p.problems if x.id == ERROR_ID and f"does not know the argument {slip}:" in x.message]
    if slip in listed or sum(option.startswith(slip) for option in listed) == 1:
        assert found == []  # argparse takes it: the option itself, or an unambiguous abbreviation of one
    else:
        assert len(found) == 1 and found[0].severity == "error"
        assert flag in found[0].fix or "instead" in found[0].fix, found[0].fix


@pytest.mark.parametrize("overrides", [("--pp-size", "2"), ("--cuda-graph-bs", "8"), ("--page-size", "16"),
                                       ("--enable-dp-attention",), ("--mem-fraction-static", "0.8")])
def test_real_flags_are_not_misspellings(overrides):
    from advisor.rules.sglang.arguments import MISSPELT_ID

    assert not [x for x in plan("sglang", overrides).problems if x.id == MISSPELT_ID]
