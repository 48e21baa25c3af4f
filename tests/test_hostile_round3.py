"""Third hostile round (issues 26, 28, 30): the scheduler jobs of `advisor launch --on`, the start-up verdict of
`check` / `layouts` / `explain memory_defaults` and the files a command writes, fed what an attacker or a careless user
would give them. One test (hypothesis where inputs vary) per defect class the sweep found:

1. an engine argument holding a newline and the here-document's word ended the sbatch script's node step early, so the
   rest of the argument ran as the batch script's own lines;
2. a model name with a newline or a control character broke the job files' header comment (a shell line; a YAML file
   PyYAML cannot read);
3. nan / inf after -- (--mem-fraction-static, --gpu-memory-utilization, --max-model-len 1e999k) crashed the start-up
   arithmetic with a traceback; vLLM's numeric memory arguments were not checked at all ('abc' went through);
4. output paths: `-o ~nouser/x` was a traceback, `-o dir/` wrote a file named dir, `launch --on -o ""` printed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from dataclasses import replace
from functools import cache

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import MODEL, STUB_ENGINE, STUB_SCONTROL, STUB_SRUN, plan_for

from advisor.cli import main
from advisor.context import Options, make_plan
from advisor.models import quantized_weight_bits
from advisor.probe.profiles import load_profile
from advisor.rules.engine import finite_float
from advisor.rules.vllm.startup import parse_max_model_len
from advisor.schedulers import TARGETS, JobSettings
from advisor.schedulers.job import make_job, one_line
from advisor.schedulers.slurm import heredoc_end
from advisor.tui.screens.export import write_plan_json
from advisor.tui.screens.job import write_job_file
from launcher.files import FileRefused, output_target

NO_USER = "~tp-advisor-no-such-user-31"
# Text a person can put in a command line: anything but NUL, and the lines the node step's here-document could end at.
ARGUMENT_TEXT = st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=12),
                                   st.sampled_from(["STEP", "STEP_1", "'", '"', "$(id)", "`id`", "\\", "!", "EOF"])),
                         min_size=1, max_size=6).map("\n".join)  # fmt: skip


# -- 1. the sbatch node step is one here-document whatever the arguments hold ----------------------------------------


@given(body=ARGUMENT_TEXT)
def test_the_heredoc_word_is_no_line_of_the_body(body):
    end = heredoc_end(body)
    assert end not in body.split("\n") and end.startswith("STEP")


@pytest.fixture(scope="module")
def stub_cluster(tmp_path_factory):
    stubs = tmp_path_factory.mktemp("stubs")
    for name, text in {"python3": STUB_ENGINE, "scontrol": STUB_SCONTROL, "srun": STUB_SRUN}.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    return stubs


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=ARGUMENT_TEXT)
def test_an_engine_argument_with_newlines_reaches_every_node_intact(name, stub_cluster, tmp_path_factory):
    work = tmp_path_factory.mktemp("run")
    plan = make_plan(Options(profile="h100-sxm-8", model=MODEL, engine="sglang", tp=16, nnodes=2,
                             overrides=("--served-model-name", name)))  # fmt: skip
    script = work / "job.sbatch"
    script.write_text(TARGETS["slurm"].render(make_job(plan, JobSettings())))
    env = {"PATH": f"{stub_cluster}:/usr/bin:/bin", "RECORD": str(work), "STUB_NODES": "2", "HOME": str(work),
           "SLURM_JOB_NODELIST": "node[01-02]", "TP_ADVISOR_PREFLIGHT": "0"}  # fmt: skip
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for node in (0, 1):
        argv = (work / f"node-{node}.argv").read_bytes().decode("utf-8", "surrogateescape").split("\n")
        # the recorder writes one argument a line: the name's own lines follow the flag
        start = argv.index("--served-model-name") + 1
        assert "\n".join(argv[start : start + name.count("\n") + 1]) == name
    assert sorted(p.name for p in work.iterdir()) == ["job.sbatch", "node-0.argv", "node-1.argv"]


# -- 2. the header comment stays a comment ----------------------------------------------------------------------------

MODEL_NAMES = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@pytest.fixture(scope="module")
def jobs():
    return {engine: make_job(plan_for(engine), JobSettings(image="example/image:1")) for engine in ("sglang", "vllm")}


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=MODEL_NAMES, engine=st.sampled_from(["sglang", "vllm"]))
def test_any_model_name_leaves_the_header_a_comment(model, engine, jobs):
    job = replace(jobs[engine], model=model)
    sbatch = TARGETS["slurm"].render(job).split("\n")
    assert sbatch[1].startswith("# Written by") and sbatch[2].startswith("# Every node")
    assert "\r" not in sbatch[1]
    for target in ("kubernetes", "skypilot"):
        text = TARGETS[target].render(job)
        plain = TARGETS[target].render(replace(job, model="m"))
        body = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
        assert "".join(body) == "".join(line for line in plain.splitlines(keepends=True) if not line.startswith("#"))
        assert list(yaml.safe_load_all(text)) == list(yaml.safe_load_all(plain))


@given(text=MODEL_NAMES)
def test_one_line_has_no_line_break_of_any_kind(text):
    assert len(one_line(text).splitlines()) <= 1


# -- 3. non-finite numbers after -- -------------------------------------------------------------------------------------

NOT_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999"])


@settings(max_examples=20, deadline=None)
@given(value=NOT_FINITE)
def test_a_non_finite_memory_fraction_is_refused_in_one_problem_not_a_traceback(value):
    for engine, flag, problem in (("sglang", "--mem-fraction-static", "sglang_argument_rejected"),
                                  ("vllm", "--gpu-memory-utilization", "vllm_argument_rejected")):  # fmt: skip
        plan = make_plan(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine=engine, tp=2,
                                 overrides=(flag, value)))  # fmt: skip
        errors = [p for p in plan.problems if p.severity == "error" and p.id == problem]
        assert len(errors) == 1 and repr(value) in errors[0].message


@given(number=st.floats(allow_nan=True, allow_infinity=True), suffix=st.sampled_from(["", "k", "m", "g", "K", "M"]))
def test_max_model_len_never_raises(number, suffix):
    parsed = parse_max_model_len(f"{number}{suffix}")
    assert parsed is None or isinstance(parsed, int)
    if not math.isfinite(number):
        assert parsed is None


@pytest.mark.parametrize("value", ["abc", "nan", "", "1e999k"])
def test_vllms_numeric_memory_arguments_are_checked(value):
    for flag in ("--gpu-memory-utilization", "--max-model-len", "--max-num-seqs", "--block-size"):
        if flag != "--max-model-len" and value == "1e999k":
            continue
        plan = make_plan(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="vllm", tp=2,
                                 overrides=(flag, value)))  # fmt: skip
        assert [p.id for p in plan.problems if p.severity == "error"] == ["vllm_argument_rejected"], flag


def test_finite_float_reads_what_argparse_reads_but_only_finite_numbers():
    assert finite_float(" 0.5 ") == 0.5 and finite_float("1e-300") == 1e-300
    for bad in ("nan", "inf", "-Infinity", "1e400", "x", ""):
        with pytest.raises(ValueError):
            finite_float(bad)


@pytest.mark.parametrize("command", [["check", "--json"], ["explain", "memory_defaults"]])  # layouts takes no --
def test_the_cli_faces_report_non_finite_numbers_in_one_line(command):
    for engine, flag in (("sglang", "--mem-fraction-static"), ("vllm", "--gpu-memory-utilization")):
        result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-8B", "--engine", engine,
                                           *command, "--", flag, "nan"])  # fmt: skip
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert result.exit_code == (1 if command[0] == "check" else 0), result.output
        assert "Traceback" not in result.output


# -- 4. output paths ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [f"{NO_USER}/job.sbatch", "newdir/", "sub/dir/"])
def test_a_path_it_cannot_use_is_refused_in_one_line_and_nothing_is_written(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileRefused) as refused:
        output_target(path)
    assert "\n" not in str(refused.value)
    result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--model", MODEL, "--tp", "16", "--nnodes", "2",
                                       "launch", "--on", "slurm", "-o", path])  # fmt: skip
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1, result.output
    probe = CliRunner().invoke(main, ["probe", "--profile", "h100-sxm-8", "-o", path])
    assert probe.exit_code == 1 and "error:" in probe.output
    assert list(tmp_path.iterdir()) == []


def test_an_empty_output_is_a_usage_error_as_for_probe():
    result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--model", MODEL, "--tp", "16", "--nnodes", "2",
                                       "launch", "--on", "slurm", "-o", ""])  # fmt: skip
    assert result.exit_code == 2 and "-o/--output needs a file name" in result.output


def test_the_apps_writers_refuse_an_unknown_home_as_an_oserror():
    """The app's dialogs catch OSError; pathlib's RuntimeError for an unknown ~user ended the worker with a traceback."""
    with pytest.raises(OSError, match="names no user"):
        write_plan_json(plan_for("sglang"), f"{NO_USER}/plan.json")
    with pytest.raises(OSError, match="names no user"):
        write_job_file(plan_for("sglang"), "slurm", f"{NO_USER}/job.sbatch")


# -- 5. searches that started from a hostile number -----------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(fraction=st.sampled_from(["-1e12", "-1e300", "1e300", "-5", "0", "1e-300"]))
def test_the_fraction_search_of_the_fixes_is_bounded_whatever_fraction_was_given(fraction):
    """`--mem-fraction-static=-1e12` made the fixes count up from -1e14 one hundredth at a time (a hang)."""
    started = time.monotonic()
    plan = make_plan(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="sglang", tp=2,
                             overrides=(f"--mem-fraction-static={fraction}",)))  # fmt: skip
    assert time.monotonic() - started < 20
    assert plan.startup is not None and plan.startup.starts is False and plan.startup.error.fixes


def test_layouts_over_a_billion_nodes_ends_with_a_verdict():
    started = time.monotonic()
    result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", MODEL, "--nnodes",
                                       str(10**9), "layouts"])  # fmt: skip
    assert result.exit_code == 0 and "no recommendation" in result.output, result.output
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("argument", ["--gpu-memory-utilization=1.5", "--gpu-memory-utilization=0",
                                      "--gpu-memory-utilization=-1", "--gpu-memory-utilization=1e305",
                                      "--block-size=0", "--block-size=-16"])  # fmt: skip
def test_a_memory_value_vllm_refuses_is_one_error_and_never_reaches_the_verdict(argument):
    """CacheConfig's Field(gt=0, le=1) and a block size above 0: one vllm_argument_rejected, and the verdict computed
    without the value (1e305 overflowed it, block size 0 divided by zero)."""
    plan = make_plan(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="vllm", tp=2, overrides=(argument,)))
    assert [p.id for p in plan.problems if p.severity == "error"] == ["vllm_argument_rejected"]


# -- 6. quantization_config of every odd shape ------------------------------------------------------------------------

ANY_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                        max_leaves=8)  # fmt: skip
WEIGHTS = st.fixed_dictionaries({"num_bits": st.integers(-2**70, 2**70) | ANY_JSON},
                                optional={"group_size": st.integers(-2**70, 2**70) | ANY_JSON,
                                          "type": st.sampled_from(["int", "float"]) | ANY_JSON})  # fmt: skip
QUANTIZATION = st.one_of(
    ANY_JSON,
    st.fixed_dictionaries({"quant_method": st.just("compressed-tensors"),
                           "config_groups": st.dictionaries(st.text(max_size=4), st.fixed_dictionaries(
                               {"weights": WEIGHTS | ANY_JSON}), max_size=3) | ANY_JSON}),
    st.fixed_dictionaries({"quant_method": st.just("fp8"),
                           "weight_block_size": st.lists(st.integers(-2**40, 2**40), max_size=3) | ANY_JSON}),
)  # fmt: skip


@settings(max_examples=300)
@given(qc=QUANTIZATION)
def test_quantized_weight_bits_is_unknown_or_positive(qc):
    """A negative num_bits (or group_size, or fp8 block) made the weights negative and the plan 'start' with more KV."""
    bits = quantized_weight_bits(qc)
    assert bits is None or (bits > 0 and math.isfinite(bits))


# -- 7. a GPU smaller than the engine's own reserve -------------------------------------------------------------------


@cache
def h100_facts() -> str:
    return load_profile("h100-sxm-8").to_json()


@settings(max_examples=25, deadline=None)
@given(mib=st.integers(1, 200 * 1024), engine=st.sampled_from(["sglang", "vllm"]),
       model=st.sampled_from(["deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"]))  # fmt: skip
def test_a_plan_that_starts_has_weights_that_fit_in_the_gpu(mib, engine, model):
    """A 1 MiB GPU made SGLang's fraction negative (-4623), its reserve term positive and DeepSeek-V3 'start' with 69M
    KV tokens."""
    facts = json.loads(h100_facts())
    for gpu in facts["gpus"]:
        gpu["memory_total_mib"] = gpu["memory_free_mib"] = mib
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(facts, handle)
    try:
        plan = make_plan(Options(facts_file=handle.name, engine=engine, model=model, tp=8))
    finally:
        os.unlink(handle.name)
    startup = plan.startup
    if startup is not None and startup.starts:
        assert startup.weights_bytes < mib * 2**20 and startup.kv_tokens > 0
        assert startup.kv_tokens * 1 <= mib * 2**20  # a KV token takes at least a byte
