"""advisor/launch_prep.prepare_launch (the one preparation of `advisor launch` and the TUI) and advisor/intent.py."""

from __future__ import annotations

import pytest

from advisor.context import Options, make_plan
from advisor.intent import Intent, count_error
from advisor.launch_prep import (
    BAD_DIRECTORY,
    NO_COMMAND,
    NOT_INSTALLED,
    OTHER_MACHINE,
    PLAN_ERRORS,
    commands_for_nodes,
    prepare_launch,
)
from advisor.plan import Intent as PlanIntent
from advisor.plan import Plan


def kinds(refusals) -> list[str]:
    return [r.kind for r in refusals]


def test_a_profiles_demo_plan_gives_its_command_and_only_the_other_machine_refusal(monkeypatch, tmp_path):
    monkeypatch.setenv("TP_ADVISOR_RUNS", str(tmp_path / "runs"))
    plan = make_plan(Options(profile="cpu-only", engine="bundled", tp=2))
    commands, refusals = prepare_launch(plan, mode="generate")
    assert commands == commands_for_nodes(plan, mode="generate")
    assert kinds(refusals) == [OTHER_MACHINE]
    assert refusals[0].exit_code == 2 and "--dry-run" in refusals[0].message


def test_a_file_where_the_runs_directory_goes_is_refused(monkeypatch, tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("")
    monkeypatch.setenv("TP_ADVISOR_RUNS", str(blocker))
    _, refusals = prepare_launch(make_plan(Options(profile="cpu-only", engine="bundled", tp=2)))
    refusal = next(r for r in refusals if r.kind == BAD_DIRECTORY)
    assert refusal.exit_code == 1 and "TP_ADVISOR_RUNS" in refusal.message


def test_an_engine_that_is_not_installed_and_plan_errors_are_refused_in_launch_order():
    plan = make_plan(Options(profile="cpu-only", engine="vllm", model="Qwen/Qwen3-8B"))  # warning no_gpus
    assert kinds(prepare_launch(plan)[1]) == [OTHER_MACHINE, NOT_INSTALLED]
    _, refusals = prepare_launch(plan, strict=True)
    assert kinds(refusals) == [PLAN_ERRORS, OTHER_MACHINE, NOT_INSTALLED]
    assert "warnings and --strict" in refusals[0].message and "pip install vllm" in refusals[-1].message


def test_a_plan_that_cannot_become_a_command_gives_no_command_and_says_why():
    from advisor.facts import Facts

    plan = Plan(intent=Intent(tp=3, nnodes=2), facts=Facts(), model=None, engine={"name": "bundled"})
    commands, refusals = prepare_launch(plan)
    assert commands == [] and refusals[0].kind == NO_COMMAND and "divisible by --nnodes" in refusals[0].message


@pytest.mark.parametrize(
    ("intent", "needle"),
    [(Intent(tp=0), "--tp must be"), (Intent(nnodes=True), "--nnodes must be"), (Intent(dp_size=-2), "--dp-size must"),
     (Intent(tp=6, nnodes=4), "does not split evenly"), (Intent(tp=8, nnodes=2), None)],
)  # fmt: skip
def test_intent_error_is_one_line_naming_the_fix(intent, needle):
    error = intent.error()
    assert (error is None) if needle is None else (needle in error and "\n" not in error)


def test_intent_keeps_its_old_import_and_splits_over_nodes():
    assert PlanIntent is Intent
    assert Intent(tp=8, nnodes=2).gpus_per_node == 4 and Intent(tp=0).gpus_per_node == 1
    assert count_error("tp", None) is not None and count_error("tp", 3) is None
