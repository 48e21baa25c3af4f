"""`advisor verify`: cleaning real-world log lines, runs, errors, and the command's contract (exit codes, JSON schema,
stdin, bad input). The lines come from the rendered fixtures (tests/fixtures/logs) or quote the wheels' format strings."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.rules import registry
from advisor.verify.compare import LogText, observe, same
from advisor.verify.parse import clean_line, fields_of, read_lines, read_run, split_top_level

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "logs"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "advisor/schema/verify.schema.json").read_text())
SGLANG = FIXTURES / "sglang-0.5.9-llama-3.1-8b-tp8.log"
VLLM = FIXTURES / "vllm-0.33.0-llama-3.1-8b-tp8.log"


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


@pytest.mark.parametrize(
    ("raw", "process", "message"),
    [
        ("[2026-11-02 09:00:08 TP3] Load weight end.", "TP3", "Load weight end."),
        ("[2026-11-02 09:00:08,123 DP1 TP3] x=1", "DP1 TP3", "x=1"),
        ("(VllmWorker rank=0 pid=12) INFO 11-02 09:00:20 [gpu_model_runner.py:3550] Model loading took 1 GiB",
         "VllmWorker rank=0 pid=12", "Model loading took 1 GiB"),
        ("(EngineCore_DP0 pid=3) WARNING 11-02 09:00:20 [core.py:9] careful", "EngineCore_DP0 pid=3", "careful"),
        ("\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO 11-02 09:00:00 [api_server.py:1] hi\r", "APIServer pid=1", "hi"),
        ("2026-11-02T09:00:00.123456Z [rank0]: RuntimeError: boom", "rank0", "RuntimeError: boom"),
        ("node-1 | [TP0] KV Cache is allocated.", "TP0", "KV Cache is allocated."),
        ("INFO 11-02 09:00:00 core.py:94] old vLLM header", "", "old vLLM header"),
    ],
)  # fmt: skip
def test_lines_are_cleaned_down_to_the_message(raw, process, message):
    line = clean_line(raw)
    assert (line.process, line.message) == (process, message)


def test_values_are_read_as_data_and_truncated_tails_are_dropped():
    assert fields_of("ServerArgs(a=1, b='x, y', c=[1, 2], d=Obj(e=2), f=None)") == {
        "a": 1, "b": "x, y", "c": [1, 2], "d": "Obj(e=2)", "f": None,
    }  # fmt: skip
    assert fields_of("{'a': 1, 'b': <Enum.X: 3>, 'c': 'cut") == {"a": 1, "b": "<Enum.X: 3>"} | {"c": "'cut"}
    assert fields_of("ServerArgs(a=1, b=2, c='trunc") == {"a": 1, "b": 2, "c": "'trunc"}
    assert split_top_level("a=(1, 2), b=[3, 4") == ["a=(1, 2)", "b=[3, 4"]


def test_same_reads_numbers_text_and_flags_as_the_engine_prints_them():
    assert same(0.818, 0.8180000001) and not same(0.818, 0.83)
    assert same(100, 108, 0.10) and not same(100, 120, 0.10)
    assert same("FLASH_ATTN", "flash_attn") and not same(True, 1)


def test_crlf_ansi_and_other_ranks_read_the_same_values():
    plain = observe([LogText("a", SGLANG.read_text())]).observed
    messy = "".join(f"\x1b[32m{line}\x1b[0m\r\n" for line in SGLANG.read_text().splitlines())
    assert observe([LogText("b", messy)]).observed == plain


def test_a_truncated_server_args_line_keeps_what_came_before_the_cut_and_says_so():
    lines = SGLANG.read_text().splitlines()
    cut = lines[0][: lines[0].index("mem_fraction_static") + 40]
    observation = observe([LogText("cut.log", "\n".join([cut, *lines[1:]]))])
    assert observation.observed["model_path"] == "tests/conformance/configs/llama-3.1-8b"
    assert observation.observed["mem_fraction_static"] == 0.818
    assert "tp_size" not in observation.observed or lines[0].index("tp_size") < len(cut)
    assert any("cut short" in note for note in observation.notes)


def test_several_runs_use_the_last_complete_one():
    first = SGLANG.read_text().replace("tp_size=8", "tp_size=4")
    second = SGLANG.read_text()
    third = second.splitlines()[0] + "\n"  # a start-up still going
    observation = observe([LogText("runs.log", first + second + third)])
    assert observation.observed["tp_size"] == 8
    assert any("3 start-ups; reading run 2" in note for note in observation.notes)


def test_a_startup_error_is_the_first_line_of_the_failure():
    lines = VLLM.read_text().splitlines()[:4]
    failure = [
        "(EngineCore_DP0 pid=4114) ERROR 11-02 09:00:21 [core.py:708] EngineCore failed to start.",
        "(EngineCore_DP0 pid=4114) ERROR 11-02 09:00:21 [core.py:708] Traceback (most recent call last):",
        "(EngineCore_DP0 pid=4114) ERROR 11-02 09:00:21 [core.py:708] ValueError: To serve at least one request",
    ]
    observation = observe([LogText("fail.log", "\n".join(lines + failure))])
    assert observation.observed["startup_error"] == "EngineCore failed to start."


def test_a_custom_allreduce_message_is_read_with_its_reason():
    # vllm/distributed/device_communicators/custom_all_reduce.py (v0.12.0-v0.33.0), SGLang's custom_all_reduce_utils.py
    reason = "Custom allreduce is disabled because this process group spans across nodes."
    for path in (VLLM, SGLANG):
        text = path.read_text().replace("\n", f"\n[2026-11-02 09:00:12 TP0] {reason}\n", 1)
        observed = observe([LogText(path.name, text)]).observed
        assert observed["custom_allreduce_disabled"] is True
        assert observed["custom_allreduce_reason"] == "because this process group spans across nodes."


def test_vllm_s_cross_node_custom_collectives_message_is_read_as_off():
    # v0.27.1+ CustomAllreduce.__init__ for a group spanning nodes without MNNVL (custom_all_reduce.py)
    reason = "because this multi-node group does not support MNNVL multicast."
    line = (
        f"(Worker_TP0 pid=7) WARNING 11-02 09:00:12 [custom_all_reduce.py:253] Custom collectives are disabled {reason}"
    )
    observed = observe([LogText("v.log", VLLM.read_text().replace("\n", f"\n{line}\n", 1))]).observed
    assert observed["custom_allreduce_disabled"] is True and observed["custom_allreduce_reason"] == reason


def test_a_log_of_no_engine_is_one_clear_error(tmp_path):
    log = tmp_path / "other.log"
    log.write_text("hello\nworld\n")
    result = invoke("verify", str(log), "--profile", "h100-sxm-8")
    assert result.exit_code == 2
    assert "no start-up line of sglang or vllm" in result.output


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=20))
def test_any_text_is_read_without_an_exception(lines):
    text = "\n".join(lines)
    read_lines(text)
    try:
        observe([LogText("x", text)])
    except Exception as exc:  # only the one-line AdvisorError for "no engine found"
        assert type(exc).__name__ == "AdvisorError", exc


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=4000))
def test_a_log_cut_anywhere_never_raises(cut):
    text = VLLM.read_text()[: cut * 2]
    try:
        observe([LogText("cut", text)])
    except Exception as exc:
        assert type(exc).__name__ == "AdvisorError", exc


# -- the command -------------------------------------------------------------------------------------------------------


def test_json_follows_the_schema_and_exits_0_when_every_argument_agrees():
    result = invoke("verify", str(SGLANG), "--profile", "h100-sxm-8", "--engine-version", "0.5.9", "--json")
    data = json.loads(result.output)
    jsonschema.validate(data, SCHEMA)
    assert data["engine"] == "sglang" and data["observed"]["kv_cache_tokens"] > 0
    differing = [r for r in data["rows"] if r["verdict"] == "differ"]
    assert result.exit_code == (1 if differing else 0)
    assert {r["field"]: r["verdict"] for r in data["rows"]}["mem_fraction_static"] == "agree"


def test_a_difference_exits_1_and_names_the_rule():
    text = SGLANG.read_text().replace("mem_fraction_static=0.818", "mem_fraction_static=0.7")
    result = invoke("verify", "-", "--profile", "h100-sxm-8", "--engine-version", "0.5.9", "--json", stdin=text)
    assert result.exit_code == 1
    row = next(r for r in json.loads(result.output)["rows"] if r["field"] == "mem_fraction_static")
    assert row["verdict"] == "differ" and row["observed"] == 0.7 and "sglang v0.5.9" in row["source"]


def test_an_unmodelled_release_is_read_with_a_warning():
    text = VLLM.read_text().replace("0.33.0", "0.99.0")
    result = invoke("verify", "-", "--profile", "h100-sxm-8", "--json", stdin=text)
    data = json.loads(result.output)
    assert data["release"] == "0.99.0"
    assert any("not a modelled release" in n for n in data["notes"])


def test_text_report_shows_the_table_and_what_was_measured():
    result = invoke("verify", str(VLLM), "--profile", "h100-sxm-8")
    assert "max_model_len" in result.output and "kv_cache_tokens = 4553744" in result.output
    assert "agree" in result.output


@pytest.mark.parametrize(
    ("args", "code"),
    [((), 2), (("/nonexistent/log",), 1), (("-", "-"), 2), ((".",), 2)],
)
def test_usage_and_input_errors_are_one_line(args, code):
    result = invoke("verify", *args, stdin="")
    assert result.exit_code == code
    assert "Traceback" not in result.output


def test_the_schema_lists_the_engines_that_read_logs():
    engines = [e.name for e in registry.engines() if e.logs is not None]
    assert SCHEMA["properties"]["engine"]["enum"] == engines


def test_vllm_names_its_release_in_each_version_line_form():
    from advisor.rules.vllm.logs import LOGS

    for line, release in (
        ("vLLM API server version 0.12.0", "0.12.0"),  # v0.12-v0.15 (entrypoints/openai/api_server.py)
        ("vLLM server version 0.20.2, serving model m", "0.20.2"),  # v0.20+ (log_version_and_model, plain)
        (
            " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version 0.33.0",
            "0.33.0",
        ),  # its logo
    ):
        assert read_run(LOGS, [clean_line(line, 1)]).observed["release"] == release
        assert LOGS.starts(clean_line(line).message) == "version"
