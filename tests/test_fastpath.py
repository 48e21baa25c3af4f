"""The `advisor` entry point's click-free `check` (advisor/fastpath.py) against the click CLI: the same stdout, stderr
and exit code for every command line, taken by the fast path only where it should be, and without importing click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from advisor import cli, fastpath

ROOT = Path(__file__).resolve().parents[1]
SGLANG_H100 = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
VLLM_H100 = ["--profile", "h100-sxm-8", "--engine", "vllm", "--model", "Qwen/Qwen3-30B-A3B"]

# Command lines the fast path runs itself: plain options, results and errors of every kind.
FAST = [
    ["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"],
    ["check", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"],
    ["check", "--json"],  # this machine, probed
    ["check"],
    ["check", "--json", "--profile=h100-sxm-8", "--engine=sglang", "--model=Qwen/Qwen3-30B-A3B"],
    ["check", *SGLANG_H100],
    ["check", "--json", *VLLM_H100, "--tp", "4", "--strict"],
    ["check", *VLLM_H100, "--strict", "--", "-O0"],
    ["check", "--json", *SGLANG_H100, "--dp-attention", "--dp-size", "2", "--moe-a2a-backend", "deepep"],
    ["check", "--json", *SGLANG_H100, "--dp-attention", "--no-dp-attention"],
    ["check", "--json", *SGLANG_H100, "--tp", "2", "--tp", " 8 ", "--nnodes", "01"],
    ["check", "--json", *SGLANG_H100, "--with-package", "flashinfer-python==0.6.12",
     "--with-package", "flashinfer-jit-cache==0.6.11+cu128"],  # fmt: skip
    ["check", "--json", *SGLANG_H100, "--engine-version", "0.5.4", "--dtype", "float16"],
    ["check", "--json", *SGLANG_H100, "--", "--disable-custom-all-reduce", "--json"],
    ["check", "--json", "--profile", "cpu-only", "--engine", "bundled"],
    # errors the plan reports: unknown profile, release, package spec, model, dtype; files that are not there
    ["check", "--json", "--profile", "nope"],
    ["check", *SGLANG_H100, "--engine-version", "9.9.9"],
    ["check", "--json", *SGLANG_H100, "--with-package", "flashinfer-python"],
    ["check", "--json", "--profile", "h100-sxm-8", "--engine", "sglang", "--model", "no/such-model"],
    ["check", "--json", *SGLANG_H100, "--dtype", "int3"],
    ["check", "--json", "--facts", "/nonexistent/facts.json"],
    ["check", "--json", "--python", "/nonexistent/python"],
    ["check", "--json", "--model", ""],
    ["check", "--json", "--model="],
    ["check", "--json", "--profile", "b300-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "3"],
]

# Command lines the fast path leaves to click: help, usage errors, values click judges, other commands.
CLICK = [
    ["check", "--help"],
    ["check", "-h"],
    ["check", "--tp", "0"],
    ["check", "--tp", "x"],
    ["check", "--tp", "-1"],
    ["check", "--tp"],
    ["check", "--engine", "nope"],
    ["check", "--bogus"],
    ["check", "extra"],
    ["check", "--json=1"],
    ["check", "--model", "--json"],
    ["check", "--facts", "."],  # a directory
    ["--profile", "b300-8", "check", "--json"],
    ["--version"],
    ["profiles", "--json"],
    [],
]


@pytest.fixture(autouse=True)
def offline(empty_hf_cache, monkeypatch):
    monkeypatch.delenv("FLASHINFER_DISABLE_VERSION_CHECK", raising=False)
    monkeypatch.setenv("COLUMNS", "100")


def run(entry, argv: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["advisor", *argv])
    monkeypatch.setattr(cli, "_interactive_terminal", lambda: False)  # bare `advisor`: the report, not the app
    with pytest.raises(SystemExit) as exited:
        entry()
    out, err = capsys.readouterr()
    code = exited.value.code
    return (0 if code is None else code), out, err


@pytest.mark.parametrize("argv", FAST + CLICK, ids=lambda argv: " ".join(argv) or "(none)")
def test_fast_path_prints_and_exits_as_click_does(argv, capsys, monkeypatch):
    taken = fastpath.parse_check(argv) is not None
    assert taken == (argv in FAST)
    fast = run(fastpath.main, argv, capsys, monkeypatch)
    slow = run(cli.main, argv, capsys, monkeypatch)
    assert fast == slow
    assert fast[1] or fast[2]  # it said something


def test_a_file_click_rejects_goes_to_click(tmp_path):
    unreadable = tmp_path / "facts.json"
    unreadable.write_text("{}")
    unreadable.chmod(0)
    if os.access(unreadable, os.R_OK):
        pytest.skip("running as root: every file is readable")
    assert fastpath.parse_check(["check", "--facts", str(unreadable)]) is None
    assert fastpath.parse_check(["check", "--facts", str(tmp_path / "missing.json")]) is not None


def test_the_option_table_agrees_with_clicks():
    """Every option of `advisor check` is known to the fast path with the same kind, and the engines it accepts are
    click's choices: a value the fast path takes is one click takes."""
    known = {**fastpath.TEXT_OPTIONS, **fastpath.NUMBER_OPTIONS, **fastpath.REPEATED_OPTIONS}
    seen = set()
    for param in cli.check.params:
        if not isinstance(param, click.Option):
            continue
        for name in param.opts + param.secondary_opts:
            seen.add(name)
            if param.is_flag:
                assert fastpath.FLAGS[name][0] == param.name, name
            else:
                assert known[name] == param.name, name
                assert (name in fastpath.REPEATED_OPTIONS) == param.multiple, name
                assert (name in fastpath.NUMBER_OPTIONS) == isinstance(param.type, cli.PositiveInt), name
                assert (param.name in fastpath.PATH_OPTIONS) == isinstance(param.type, click.Path), name
                if isinstance(param.type, click.Choice):
                    assert tuple(param.type.choices) == fastpath._engines(), name
    assert seen - {"-h", "--help"} == set(known) | set(fastpath.FLAGS)


def test_the_entry_point_does_not_import_click_for_check():
    """What the benchmark times: the console script's `check --json` path, in a fresh interpreter."""
    code = (
        "import sys\n"
        "sys.argv = ['advisor', 'check', '--json', '--profile', 'b300-8', '--model', 'Qwen/Qwen3-30B-A3B']\n"
        "from advisor.fastpath import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(' '.join(m for m in ('click', 'rich', 'textual', 'torch') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.startswith("{") and proc.stderr == ""


def test_the_console_script_and_python_m_run_the_same_bytes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(tmp_path / "hf")}
    argv = ["check", "--json", *SGLANG_H100]
    by_module = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True, env=env, timeout=120)
    by_click = subprocess.run([sys.executable, "-c", "from advisor.cli import main; main()", *argv],
                              capture_output=True, env=env, timeout=120)  # fmt: skip
    assert (by_module.returncode, by_module.stdout, by_module.stderr) == (
        by_click.returncode, by_click.stdout, by_click.stderr)  # fmt: skip
    assert by_module.stdout.startswith(b"{")
