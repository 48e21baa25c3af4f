"""Will it start? One verdict across check, layouts and launch (issue 26), as tested properties.

Over every simulated machine (`advisor profiles`), every catalog model, every engine that has a start-up model
(``Engine.startup``) and every candidate layout: `check` reports the start-up error exactly when `layouts` says the
layout does not fit, and `launch --dry-run` refuses exactly what `check` errors on.
"""

from __future__ import annotations

import json

import pytest
from cli_json import command_json, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.context import Options, plan_for, resolve
from advisor.launch_prep import PLAN_ERRORS, prepare_launch
from advisor.layouts import build_layouts
from advisor.models import catalog_ids
from advisor.probe.profiles import list_profiles
from advisor.rules import registry

ENGINES = [name for name in registry.names() if registry.get(name).startup is not None]
PROFILES = list_profiles()
MODELS = catalog_ids()


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


def memory_error(plan) -> bool:
    """The plan carries its start-up error as an error problem."""
    error = plan.startup.error if plan.startup is not None else None
    return error is not None and any(p.severity == "error" and p.id == error.id for p in plan.problems)


def layout_options(profile: str, model: str, engine: str, lay) -> Options:
    """The options a person types to `check` this layout."""
    return Options(profile=profile, model=model, engine=engine, tp=lay.tp, nnodes=lay.nnodes,
                   dp_attention=lay.dp_attention, dp_size=lay.dp_size if lay.dp_attention else None)  # fmt: skip


def layout_args(lay: dict) -> list[str]:
    args = ["--tp", str(lay["tp"]), "--nnodes", str(lay["nnodes"])]
    return args + (["--dp-attention", "--dp-size", str(lay["dp_size"])] if lay["dp_attention"] else [])


def test_there_is_an_engine_to_hold_to_it():
    assert {"sglang", "bundled"} <= set(ENGINES)


@pytest.mark.parametrize("engine", ENGINES)
def test_check_layouts_and_launch_agree_on_every_machine_model_and_layout(engine):
    """Exhaustive: each layout's row and the plan `check` builds for it give the same verdict, and a launch refuses
    exactly the plans with errors (a start-up error among them)."""
    seen = {True: 0, False: 0, None: 0}
    for profile in PROFILES:
        for model in MODELS:
            facts, spec, base = resolve(Options(profile=profile, model=model, engine=engine))
            for lay in build_layouts(facts, spec, base).layouts:
                plan = plan_for(*resolve(layout_options(profile, model, engine, lay)))
                where = (profile, model, engine, lay.label)
                assert plan.startup == lay.plan.startup, where
                assert memory_error(plan) == (lay.fits is False), where
                _, refusals = prepare_launch(plan)
                refused = any(r.kind == PLAN_ERRORS for r in refusals)
                assert refused == any(p.severity == "error" for p in plan.problems), where
                assert refused or not memory_error(plan), where
                seen[lay.fits] += 1
    assert seen[True] and seen[False], seen  # the grid exercises both verdicts


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=st.sampled_from([p for p in PROFILES if p != "cpu-only"]), model=st.sampled_from(MODELS),
       engine=st.sampled_from(ENGINES), pick=st.integers(min_value=0, max_value=15))  # fmt: skip
def test_the_commands_agree(profile, model, engine, pick):
    """Through the command line: `layouts --json`, `check --json` and `launch --dry-run` for one of the layouts."""
    common = ["--profile", profile, "--model", model, "--engine", engine]
    layouts = command_json("layouts", "layouts.schema.json", *common)
    lay = layouts["layouts"][pick % len(layouts["layouts"])]
    check = invoke("check", "--json", *common, *layout_args(lay))
    data = json.loads(check.stdout)
    errors = [p for p in data["problems"] if p["severity"] == "error"]
    assert check.exit_code == (1 if errors else 0), check.output
    startup_error = (data["startup"] or {}).get("error")
    assert (startup_error is not None and any(p["id"] == startup_error["id"] for p in errors)) == (lay["fits"] is False)
    if data["startup"] is not None:
        assert data["startup"]["kv_tokens"] == lay["kv_cache_tokens"]
        assert data["startup"]["sequences"] == lay["max_concurrency"]
    dry = invoke("launch", "--dry-run", *common, *layout_args(lay))
    # it refuses exactly what check errors on (exit 1, or 2 when the error is that no command can be built)
    assert (dry.exit_code != 0) == (check.exit_code != 0), dry.output
    assert dry.exit_code in ((0,) if check.exit_code == 0 else (1, 2)), dry.output


# -- the cases ---------------------------------------------------------------------------------------------


QWEN_DP = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-235B-A22B", "--tp", "8",
           "--dp-attention", "--dp-size", "8"]  # fmt: skip


def test_qwen3_235b_with_dp_attention_does_not_start_in_sglangs_words():
    """The attention (replicated over 8 DP ranks) and the reserve leave no KV pool: SGLang's own error, every face."""
    check = invoke("check", "--json", *QWEN_DP)
    assert check.exit_code == 1
    data = json.loads(check.stdout)
    problem = next(p for p in data["problems"] if p["id"] == "startup_out_of_memory")
    assert problem["severity"] == "error"
    assert "Not enough memory. Please try to increase --mem-fraction-static" in problem["message"]  # v0.5.9's words
    assert problem["fix"].startswith("(1) drop --dp-attention")  # the most direct fix, with its numbers
    assert data["startup"]["starts"] is False and data["startup"]["kv_pools"] == 8
    newer = json.loads(invoke("check", "--json", *QWEN_DP, "--engine-version", "0.5.23").stdout)
    message = next(p["message"] for p in newer["problems"] if p["id"] == "startup_out_of_memory")
    assert "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=" in message
    assert invoke("launch", "--dry-run", *QWEN_DP).exit_code == 1
    # the FP8 fix, taken: SGLang's online --quantization fp8 halves the weights and the pool is positive
    fp8 = json.loads(invoke("check", "--json", *QWEN_DP, "--", "--quantization", "fp8").stdout)
    assert fp8["startup"]["starts"] is True and fp8["startup"]["kv_tokens"] > 0
    assert fp8["startup"]["weights_bytes"] == pytest.approx(data["startup"]["weights_bytes"] / 2, rel=0.01)
    layouts = command_json("layouts", "layouts.schema.json", *QWEN_DP[:6])
    row = next(r for r in layouts["layouts"] if r["tp"] == 8 and r["dp_attention"])
    assert row["fits"] is False and "startup_out_of_memory" in row["problems"]


@pytest.mark.parametrize("engine", ENGINES)
def test_deepseek_v3_at_tp8_on_h100_does_not_start(engine):
    """About 78 GiB of FP8 weights per GPU leave nothing for the engine's reserve and KV cache on an 80 GB H100."""
    args = ["--profile", "h100-sxm-8", "--engine", engine, "--model", "deepseek-ai/DeepSeek-V3", "--tp", "8"]
    check = invoke("check", "--json", *args)
    data = json.loads(check.stdout)
    assert check.exit_code == 1 and data["startup"]["error"] is not None
    assert any(p["id"] == data["startup"]["error"]["id"] and p["severity"] == "error" for p in data["problems"])
    assert data["startup"]["weights_bytes"] / 1024**3 == pytest.approx(78.1, abs=0.1)


def test_layouts_context_len_is_the_engines_flag_in_plan_and_command():
    """--context-len goes to the engine as --context-length: the plan sizes it and the command carries it."""
    report = build_layouts(*resolve(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="sglang")), 8192)
    assert report.context_len == 8192
    for lay in report.layouts:
        assert lay.plan.startup.context_len == 8192 and lay.plan.startup.context_source == "--context-length"
        assert "--context-length" in lay.plan.argv and "8192" in lay.plan.argv
    default = build_layouts(*resolve(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="sglang")))
    assert default.context_len == 40960  # SGLang's own: the model's context, no cap of the advisor's
