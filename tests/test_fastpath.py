"""The `advisor` entry point's click-free `check` (advisor/fastpath.py) against the click CLI: the same stdout, stderr
and exit code for every command line, taken by the fast path only where it should be, and without importing click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from advisor import cli, fastpath, interactive
from advisor.context import AdvisorError

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
    monkeypatch.setattr(interactive, "interactive_terminal", lambda: False)  # bare `advisor`: the report, not the app
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


def run_fastpath_main(setup: str) -> subprocess.CompletedProcess:
    """advisor.fastpath.main in a fresh interpreter after the lines ``setup`` (sys.argv and any patches); its stderr
    names whichever of click, rich, textual and torch got imported."""
    code = (
        "import sys\n" + setup + "from advisor.fastpath import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(' '.join(m for m in ('click', 'rich', 'textual', 'torch') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_the_entry_point_does_not_import_click_for_check():
    """What the benchmark times: the console script's `check --json` path, in a fresh interpreter."""
    proc = run_fastpath_main("sys.argv = ['advisor', 'check', '--json', '--profile', 'b300-8', '--model', 'Qwen/Qwen3-30B-A3B']\n")
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


# Bare `advisor` on a terminal: command lines the fast path opens the app for, and those it leaves to click.
APP = [
    [],
    ["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8", "--engine", "sglang"],
    ["--profile=h100-sxm-8", "--engine=vllm", "--model=Qwen/Qwen3-30B-A3B", "--strict"],
    ["--tp", "2", "--tp", " 8 ", "--nnodes", "01", "--dp-attention", "--no-dp-attention", "--dp-size", "2"],
    ["--with-package", "flashinfer-python==0.6.12", "--with-package", "sglang==0.5.14", "--engine-version", "0.5.4"],
    ["--facts", "/nonexistent/facts.json", "--python", "/nonexistent/python", "--model", ""],
    ["--profile", "nope", "--dtype", "int3"],  # the app reports bad values itself, as under click
]
APP_CLICK = [
    ["--version"], ["--help"], ["-h"], ["--json"], ["--", "-O0"], ["--tp", "0"], ["--tp"], ["--engine", "nope"],
    ["--bogus"], ["--facts", "."], ["--model", "--strict"], ["--strict=1"], ["profiles"], ["check", "--tp", "0"],
    ["--profile", "b300-8", "check"],
]  # fmt: skip


def open_app_records(monkeypatch, effect=None) -> list:
    """Patch the one place both paths start the app: it records the options (and raises `effect`, if any)."""
    opened = []

    def fake_open_app(options):
        opened.append(options)
        if effect is not None:
            raise effect

    monkeypatch.setattr(interactive, "open_app", fake_open_app)
    return opened


def run_on_terminal(entry, argv, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["advisor", *argv])
    monkeypatch.setattr(interactive, "interactive_terminal", lambda: True)
    with pytest.raises(SystemExit) as exited:
        entry()
    out, err = capsys.readouterr()
    return (0 if exited.value.code is None else exited.value.code), out, err


@pytest.mark.parametrize("argv", APP + APP_CLICK, ids=lambda argv: " ".join(argv) or "(none)")
def test_bare_advisor_opens_the_app_with_the_options_click_gives(argv, capsys, monkeypatch):
    assert (fastpath.parse_app(argv) is not None) == (argv in APP)
    opened = open_app_records(monkeypatch)
    fast = run_on_terminal(fastpath.main, argv, capsys, monkeypatch)
    slow = run_on_terminal(cli.main, argv, capsys, monkeypatch)
    assert fast == slow
    if argv in APP:
        assert fast == (0, "", "") and len(opened) == 2 and opened[0] == opened[1]
    else:
        assert len(opened) in (0, 2) and opened[:1] == opened[1:]  # `--profile b300-8 check` is no app


@pytest.mark.parametrize(
    "effect",
    [AdvisorError("the interactive app needs textual: pip install textual"), KeyboardInterrupt(), EOFError(),
     OSError(2, "No such file or directory", "/nonexistent")],  # fmt: skip
    ids=["no textual", "ctrl+c", "eof", "oserror"],
)
def test_bare_advisor_fails_as_click_does(effect, capsys, monkeypatch):
    open_app_records(monkeypatch, effect)
    argv = ["--profile", "b300-8"]
    fast = run_on_terminal(fastpath.main, argv, capsys, monkeypatch)
    assert fast == run_on_terminal(cli.main, argv, capsys, monkeypatch)
    assert fast[0] != 0 and fast[2].startswith(("error:", "\nerror:"))


def test_the_group_options_are_checks():
    """Bare `advisor` takes the same options as `check` (less --json): what parse_app accepts, click accepts."""
    def names(command):
        return {n for p in command.params if isinstance(p, click.Option) for n in p.opts + p.secondary_opts}

    assert names(cli.main) - {"--version", "-h", "--help"} == names(cli.check) - {"--json", "-h", "--help"}


def test_the_entry_point_does_not_import_click_for_the_app():
    """Bare `advisor` on a terminal, in a fresh interpreter, up to the start of the app."""
    proc = run_fastpath_main(
        "sys.argv = ['advisor', '--profile', 'b300-8', '--tp', '8']\n"
        "from advisor import interactive\n"
        "interactive.interactive_terminal = lambda: True\n"
        "interactive.open_app = lambda options: print(options.profile, options.tp)\n"
    )
    assert proc.stdout == "b300-8 8\n" and proc.stderr == ""
