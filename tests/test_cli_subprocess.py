"""The real `advisor` entry point in subprocesses: bad input gives one line and an exit code, never a traceback;
`advisor check --json` imports neither torch, flashinfer, textual nor rich; the done-when scenario end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from advisor_command import advisor_argv, offline_env, run_advisor

B300 = ["--profile", "b300-8"]
VL = ["--model", "Qwen/Qwen3-VL-235B-A22B-Instruct"]


@pytest.fixture
def env(tmp_path):
    """An offline environment with an empty Hugging Face cache, so model lookups are deterministic."""
    return offline_env(tmp_path, "FLASHINFER_DISABLE_VERSION_CHECK")


def run(args: list[str], env: dict[str, str], *pre: str) -> subprocess.CompletedProcess:
    return run_advisor(args, env, pre=pre)


def _bad_inputs(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    """(name, args, exit code, a word the message must contain)."""
    malformed_facts = tmp / "broken.json"
    malformed_facts.write_text('{"schema_version": 1, "gpus": [', encoding="utf-8")
    wrong_facts = tmp / "wrong.json"
    wrong_facts.write_text('{"schema_version": 1, "gpus": "eight"}', encoding="utf-8")
    bad_model = tmp / "bad-model"
    bad_model.mkdir()
    (bad_model / "config.json").write_text("{not json", encoding="utf-8")
    no_arch = tmp / "no-arch"
    no_arch.mkdir()
    (no_arch / "config.json").write_text('{"hidden_size": 64}', encoding="utf-8")
    return [
        ("unknown profile", ["check", "--profile", "b999-8"], 2, "b300-8"),
        ("missing facts file", ["check", "--facts", str(tmp / "nope.json")], 1, "advisor probe -o"),
        ("malformed facts file", ["check", "--facts", str(malformed_facts)], 1, "advisor probe -o"),
        ("facts of the wrong shape", ["check", "--facts", str(wrong_facts)], 1, "advisor probe -o"),
        ("profile and facts", ["check", *B300, "--facts", str(malformed_facts)], 2, "only one"),
        ("unknown model id offline", ["check", *B300, "--model", "nobody/no-such-model"], 1, "hf download"),
        ("malformed config.json", ["check", *B300, "--model", str(bad_model)], 1, "config.json"),
        ("config.json without architectures", ["check", *B300, "--model", str(no_arch)], 1, "architectures"),
        ("missing model directory", ["check", *B300, "--model", str(tmp / "gone")], 1, "directory"),
        ("tp 0", ["check", *B300, "--tp", "0"], 2, ">= 1"),
        ("tp -1", ["check", *B300, "--tp", "-1"], 2, ">= 1"),
        ("tp abc", ["check", *B300, "--tp", "abc"], 2, ">= 1"),
        ("nnodes 0", ["check", *B300, "--nnodes", "0"], 2, ">= 1"),
        ("with-package without ==", ["check", *B300, "--with-package", "flashinfer-python"], 2, "NAME==VERSION"),
        ("with-package with one =", ["check", *B300, "--with-package", "torch=2.9.0"], 2, "NAME==VERSION"),
        ("engine version not a release", ["check", *B300, "--engine", "sglang", *VL, "--engine-version", "banana"], 2, "X.Y.Z"),
        ("engine version too old", ["check", *B300, "--engine", "sglang", *VL, "--engine-version", "0.1.0"], 2, "0.1.0"),
        ("unknown engine", ["check", *B300, "--engine", "trt"], 2, "bundled"),
        ("sglang without a model", ["check", *B300, "--engine", "sglang"], 2, "--model"),
        ("python that does not exist", ["check", *B300, "--python", str(tmp / "no-python")], 1, "--python"),
        ("python not on PATH", ["check", *B300, "--python", "no-such-python3.99"], 1, "--python"),
        ("python that is not python", ["check", *B300, "--python", "/bin/false"], 1, "false"),
        ("unknown rule", ["explain", "no_such_rule", *B300, *VL], 2, "flashinfer_allreduce_fusion"),
        ("unknown option", ["check", "--tpp", "8"], 2, "--tpp"),
        ("unknown command", ["chek"], 2, "chek"),
        ("probe to an unwritable path", ["probe", *B300, "-o", str(tmp / "no-dir" / "facts.json")], 1, "writable"),
        ("tp not splitting over nodes", ["check", *B300, *VL, "--engine", "sglang", "--tp", "8", "--nnodes", "3"], 2, "--nnodes"),
    ]


def test_bad_input_is_one_line_with_exit_code(tmp_path, env):
    failures = []
    for name, args, code, word in _bad_inputs(tmp_path):
        proc = run(args, env)
        lines = proc.stderr.strip().splitlines()
        ok = (
            proc.returncode == code
            and "Traceback" not in proc.stderr
            and len(lines) == 1
            and lines[0].startswith("error: ")
            and word.lower() in lines[0].lower()
            and proc.stdout == ""
        )
        if not ok:
            failures.append(f"{name}: rc={proc.returncode} (want {code}) stderr={proc.stderr!r} stdout={proc.stdout[:200]!r}")
    assert not failures, "\n".join(failures)


def test_tp_not_dividing_heads_is_reported_as_an_error_problem(env):
    """tp 3 for a model with 32 attention heads: the plan says why, exit 1, no traceback."""
    proc = run(["check", "--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "3", "--json"], env)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    found = [p for p in json.loads(proc.stdout)["problems"] if p["id"] == "tp_not_divisible"]
    heads = next(p for p in found if "32" in p["message"])  # 32 attention heads (and 4 KV heads, 128 experts)
    assert heads["severity"] == "error" and heads["fix"]
    human = run(["check", "--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "3"], env)
    assert human.returncode == 1 and "Traceback" not in human.stderr
    assert "tp_not_divisible" in human.stdout


def test_check_json_imports_nothing_heavy(env):
    """`advisor check --json` must not import torch, flashinfer, textual, rich or jsonschema (lazy imports)."""
    args = ["check", "--json", *B300, *VL, "--tp", "8", "--engine", "sglang"]
    proc = run(args, env, sys.executable, "-X", "importtime")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    json.loads(proc.stdout)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"torch", "flashinfer", "textual", "rich", "jsonschema", "numpy", "transformers"}
    assert imported, "no -X importtime output: the check is not measuring anything"
    assert not heavy & imported, f"check --json imported {sorted(heavy & imported)}"


def _plan(args: list[str], env: dict[str, str]) -> tuple[int, dict]:
    """Run `advisor check --json` and validate its output against the shipped schema."""
    import jsonschema

    proc = run(["check", "--json", *args], env)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    data = json.loads(proc.stdout)
    schema = json.loads((Path(__file__).resolve().parent.parent / "advisor/schema/plan.schema.json").read_text())
    jsonschema.validate(data, schema)
    return proc.returncode, data


def test_done_when_through_the_entry_point(env):
    scenario = [*B300, *VL, "--tp", "8", "--engine", "sglang"]
    code, data = _plan([*scenario, "--engine-version", "0.5.14"], env)
    fusion = next(d for d in data["decisions"] if d["id"] == "flashinfer_allreduce_fusion")
    assert code == 0 and fusion["state"] == "auto-enabled"
    assert fusion["flags"] == ["--flashinfer-allreduce-fusion-backend", "auto"]

    code, data = _plan([*scenario, "--engine-version", "0.5.13"], env)
    fusion = next(d for d in data["decisions"] if d["id"] == "flashinfer_allreduce_fusion")
    assert fusion["state"] == "not-enabled"
    assert [c["id"] for c in fusion["conditions"] if c["ok"] is False] == ["architecture"]

    mismatch = ["--with-package", "flashinfer-python==0.6.12", "--with-package", "flashinfer-jit-cache==0.6.11+cu128"]
    code, data = _plan([*scenario, *mismatch], env)
    assert code == 1
    assert {"id": "flashinfer_version_mismatch", "severity": "error"}.items() <= next(
        p for p in data["problems"] if p["id"] == "flashinfer_version_mismatch"
    ).items()


def test_piped_human_output_is_plain(env):
    """Not a terminal: no escape codes, ASCII marks, and the resolved command line."""
    env = {k: v for k, v in env.items() if k != "NO_COLOR"}
    proc = run(["check", *B300, *VL, "--tp", "8", "--engine", "sglang", "--engine-version", "0.5.14"], env)
    assert proc.returncode in (0, 1), proc.stderr
    assert "\x1b[" not in proc.stdout
    assert "[ok]" in proc.stdout
    assert " -m sglang.launch_server --model-path" in proc.stdout


def test_bare_advisor_into_a_pipe_prints_the_check_report(env):
    """stdout is a pipe: no app, no escape codes; the `advisor check` report, and the process ends by itself."""
    args = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
    env.pop("NO_COLOR")
    bare, check = run(args, env), run(["check", *args], env)
    assert bare.returncode == check.returncode == 0, bare.stderr
    assert bare.stdout == check.stdout
    assert "\x1b" not in bare.stdout
    assert "-m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B" in bare.stdout


@pytest.mark.parametrize("case", ["stdin redirected", "TERM=dumb"])
def test_bare_advisor_on_a_terminal_it_cannot_use_prints_the_report(env, case):
    """stdout a terminal (a pty) but stdin /dev/null, where no key can reach the app (it waited forever), or a terminal
    that says it understands no escape codes: the app must not start; the report is printed and the process ends."""
    import os
    import pty
    import select
    import time

    args = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
    leader, follower = pty.openpty()
    stdin = subprocess.DEVNULL if case == "stdin redirected" else follower
    env = {**env, "TERM": "dumb" if case == "TERM=dumb" else "xterm-256color"}
    proc = subprocess.Popen([*advisor_argv(), *args], env=env, stdin=stdin, stdout=follower,
                            stderr=subprocess.PIPE)  # fmt: skip
    os.close(follower)
    output, deadline = b"", time.monotonic() + 60
    try:
        while time.monotonic() < deadline:  # read while it runs: a full pty would block it
            if not select.select([leader], [], [], 1)[0]:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO once the process has closed its end
                break
            if not chunk:
                break
            output += chunk
        code = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    assert code == 0, proc.stderr.read()
    text = output.decode(errors="replace")
    assert "Decisions" in text and "\x1b[?1049h" not in text  # the report, not the app's alternate screen
