"""Output that fits: `check` and the `launch` summary in 80 columns and in pipes (COLUMNS, else the user's terminal),
command lines kept whole for copying; and the next steps `check` ends with on a machine without GPUs."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.context import Options, make_plan
from advisor.launch import summary_lines
from advisor.probe.profiles import list_profiles, load_profile
from advisor.report import FALLBACK_WIDTH, make_console, next_steps, output_width, print_plan

pytestmark = pytest.mark.usefixtures("empty_hf_cache")
GPU_PROFILES = [name for name in list_profiles() if load_profile(name).gpus]
MODEL = "Qwen/Qwen3-30B-A3B"


def _check(*args: str, columns: int = 80) -> str:
    result = CliRunner().invoke(main, ["check", *args], env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _command_line(out: str) -> str:
    lines = out.splitlines()
    return lines[lines.index(next(line for line in lines if line.startswith("Command "))) + 1]


@pytest.mark.parametrize("profile", GPU_PROFILES)
@pytest.mark.parametrize("engine", ["sglang", "vllm", "bundled"])
def test_check_fits_80_columns_and_cuts_nothing(profile: str, engine: str):
    out = _check("--profile", profile, "--engine", engine, "--model", MODEL)
    command = _command_line(out)
    # the command: one unbroken line, however long (for a simulated machine what a person types there: `vllm serve`,
    # `python3 -m ...`)
    assert command.startswith("vllm serve ") if engine == "vllm" else command.startswith("python3 -m ")
    too_wide = [line for line in out.splitlines() if len(line) > 80 and line != command]
    assert too_wide == []
    assert "…" not in out  # rich cuts a cell with "…"; nothing may be cut
    facts = load_profile(profile)
    table = [line for line in out.splitlines() if line.startswith("GPU") and "|" in line]
    assert len(table) == 1 + len(facts.gpus)  # header + one line per GPU: no name wrapped onto more lines
    for gpu, row in zip(facts.gpus, table[1:], strict=True):
        assert row.startswith(f"GPU{gpu.index} ") and row.rstrip().endswith(gpu.pci_bus_id)


def test_the_gpu_name_stays_in_the_table_when_it_fits():
    out = _check("--profile", "h100-sxm-8", "--engine", "sglang", "--model", MODEL, columns=120)
    assert "| NVIDIA H100 80GB HBM3 |" in out
    narrow = _check("--profile", "h100-sxm-8", "--engine", "sglang", "--model", MODEL)
    assert "GPUs         8 x NVIDIA H100 80GB HBM3" in narrow  # named once, above the table


def test_piped_output_follows_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert output_width(io.StringIO()) == 100
    assert make_console(file=io.StringIO()).width == 100
    monkeypatch.delenv("COLUMNS")
    assert output_width(io.StringIO()) == FALLBACK_WIDTH  # no terminal anywhere (pytest's streams are not ttys)
    wide = _check("--profile", "b300-8", "--engine", "sglang", "--model", MODEL, columns=150)
    assert max(len(line) for line in wide.splitlines() if line != _command_line(wide)) > 80


@pytest.mark.parametrize("profile", ["cpu-only", "h100-sxm-8", "l40s-4"])
@pytest.mark.parametrize("engine", ["sglang", "bundled"])
def test_launch_summary_wraps_to_80_columns_and_keeps_the_command_whole(profile: str, engine: str):
    model = [] if engine == "bundled" else ["--model", MODEL]
    result = CliRunner().invoke(main, ["launch", "--dry-run", "--profile", profile, "--engine", engine, *model],
                                env={"COLUMNS": "80"})  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    assert [line for line in result.stderr.splitlines() if len(line) > 80] == []
    assert len(result.stdout.splitlines()) == 1  # the command: one line, unwrapped
    assert len(result.stdout) > 80 or engine == "sglang"  # (`python3 -m sglang.launch_server ...` may be shorter)
    plan = make_plan(Options(profile=profile, engine=engine, model=model[-1] if model else None))
    wide = summary_lines(plan, width=1000)
    assert len(summary_lines(plan, width=80)) >= len(wide) == 1 + len(plan.decisions) + len(plan.problems)
    words = " ".join(" ".join(wide).split())
    assert " ".join(" ".join(summary_lines(plan, width=80)).split()) == words  # the same words, only rewrapped


def _live_cpu_plan(**options) -> object:
    plan = make_plan(Options(profile="cpu-only", **options))
    return replace(plan, facts=replace(plan.facts, source="live"))


def test_check_on_a_machine_without_gpus_ends_with_next_steps():
    stream = io.StringIO()
    print_plan(_live_cpu_plan(), make_console(file=stream))
    tail = stream.getvalue().split("Next steps (no GPU here)", 1)[1].splitlines()
    commands = [line.strip() for line in tail if line.startswith("  ")]
    assert "advisor profiles" in commands
    assert f"advisor check --profile h100-sxm-8 --engine sglang --model {MODEL}" in commands
    assert "advisor probe -o gpu-node.json" in commands
    assert f"advisor check --facts gpu-node.json --engine sglang --model {MODEL}" in commands
    assert commands[-1] == "advisor launch --mode generate"  # torch is installed here: no install step first


def test_next_steps_follow_the_asked_engine_and_model_and_only_without_gpus():
    steps = next_steps(_live_cpu_plan(engine="vllm", model="Qwen/Qwen3-8B"))
    assert "advisor check --profile h100-sxm-8 --engine vllm --model Qwen/Qwen3-8B" in steps[0][1]
    assert next_steps(make_plan(Options(profile="cpu-only"))) == []  # simulated: not this machine
    gpu = make_plan(Options(profile="h100-sxm-8", engine="bundled"))
    assert next_steps(replace(gpu, facts=replace(gpu.facts, source="live"))) == []


@pytest.mark.parametrize(("columns", "width"), [("99999", 1000), ("10", 40), (" 90 ", 90), ("abc", 120), ("-5", 120)])
def test_columns_out_of_range_or_malformed_are_bounded(monkeypatch, columns, width):
    """A COLUMNS of 99999 would draw 99999-character rules; one of 10 folds every table cell to nothing."""
    monkeypatch.setenv("COLUMNS", columns)
    assert output_width(io.StringIO()) == width


def _run(*args: str, columns: int = 80) -> str:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-235B-A22B"),
        ("--profile", "b200-8", "--nnodes", "2", "--engine", "sglang", "--model", "deepseek-ai/DeepSeek-V3"),
        ("--profile", "h100-sxm-8", "--engine", "vllm", "--model", MODEL),
    ],
)
def test_layouts_at_80_columns_break_no_name(args):
    """Every id (decisions, problems) and every number stays whole on one line; nothing is wider than 80 columns."""
    out = _run(*args, "layouts")
    wide = _run(*args, "layouts", columns=400)
    assert [line for line in out.splitlines() if len(line) > 80] == [] and "…" not in out
    for word in {w.strip(",;|") for w in wide.split()} - {""}:
        if "_" in word or any(ch.isdigit() for ch in word):  # the ids and the numbers
            assert word in out, word


def test_profiles_follow_columns():
    out = _run("profiles", columns=60)
    assert [line for line in out.splitlines() if len(line) > 60] == []
    assert len(out.splitlines()) > len(list_profiles())  # the long summaries wrapped, under their own column
    assert len(_run("profiles", columns=300).splitlines()) == len(list_profiles())
