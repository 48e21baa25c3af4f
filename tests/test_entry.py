"""The `advisor` command line as a user meets it: the console script and `python -m advisor` run the click CLI
(advisor.cli); every command line gives its output or one `error:` line, and the exit code the contract names; bare
`advisor` on a terminal opens the app with the options given, and a failure there is one line too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from advisor_command import advisor_argv, offline_env

from advisor import cli, interactive
from advisor.context import AdvisorError

ROOT = Path(__file__).resolve().parents[1]
CLICK_MAIN = "import sys; sys.argv[0] = 'advisor'; from advisor.cli import main; main()"
SGLANG_H100 = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
VLLM_H100 = ["--profile", "h100-sxm-8", "--engine", "vllm", "--model", "Qwen/Qwen3-30B-A3B"]

# (command line, exit code, a word of the one-line error or None for no error)
COMMAND_LINES = [
    (["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"], 0, None),
    (["check", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"], 0, None),
    (["check", "--json", "--profile=h100-sxm-8", "--engine=sglang", "--model=Qwen/Qwen3-30B-A3B"], 0, None),
    (["check", *SGLANG_H100], 0, None),
    (["check", "--json", *VLLM_H100, "--tp", "4", "--strict"], 0, None),
    (["check", *VLLM_H100, "--strict", "--", "-O0"], 0, None),
    (["check", "--json", *SGLANG_H100, "--dp-attention", "--dp-size", "2", "--moe-a2a-backend", "deepep"], 0, None),
    (["check", "--json", *SGLANG_H100, "--dp-attention", "--no-dp-attention"], 0, None),
    (["check", "--json", *SGLANG_H100, "--tp", "2", "--tp", " 8 ", "--nnodes", "01"], 0, None),
    (["check", "--json", *SGLANG_H100, "--with-package", "flashinfer-python==0.6.12",
      "--with-package", "flashinfer-jit-cache==0.6.11+cu128"], 1, None),  # fmt: skip
    (["check", "--json", *SGLANG_H100, "--", "--disable-custom-all-reduce", "--json"], 0, None),
    (["check", "--json", "--profile", "cpu-only", "--engine", "bundled"], 0, None),
    (["check", "--json", "--profile", "b300-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "3"], 1,
     None),  # fmt: skip
    (["check", "extra"], 1, None),  # an engine argument, which the bundled runtime's own parser refuses: a plan error
    # what the plan cannot use: unknown profile, release, package spec, model, dtype; files that are not there
    (["check", "--json", "--profile", "nope"], 2, "unknown profile"),
    (["check", "--json", *SGLANG_H100, "--engine-version", "0.5.4"], 2, "oldest modelled release"),
    (["check", "--json", *SGLANG_H100, "--with-package", "flashinfer-python"], 2, "NAME==VERSION"),
    (["check", "--json", "--profile", "h100-sxm-8", "--engine", "sglang", "--model", "no/such-model"], 1, "offline"),
    (["check", "--json", *SGLANG_H100, "--dtype", "int3"], 2, "--dtype"),
    (["check", "--json", "--facts", "/nonexistent/facts.json"], 1, "advisor probe -o"),
    (["check", "--json", "--python", "/nonexistent/python"], 1, "--python"),  # an input not there, as a facts file
    (["check", "--json", "--model", ""], 1, "empty model reference"),
    (["check", "--json", "--model="], 1, "empty model reference"),
    (["check", "--model", "--json"], 1, "'--json'"),
    (["--profile", "b300-8", "check", "--json"], 2, "--model"),
    # what click rejects: usage errors, exit 2, with a pointer to the command's help where it has one
    (["check", "--tp", "0"], 2, "(see `advisor check --help`)"),
    (["check", "--tp", "x"], 2, "whole number"),
    (["check", "--tp", "-1"], 2, ">= 1"),
    (["check", "--tp"], 2, "requires an argument"),
    (["check", "--engine", "nope"], 2, "'bundled', 'sglang', 'vllm'"),
    (["check", "--bogus"], 2, "No such option"),
    (["check", "--json=1"], 2, "does not take a value"),
    (["check", "--facts", "."], 2, "is a directory"),
    (["check", "--help"], 0, None),
    (["check", "-h"], 0, None),
    (["--version"], 0, None),
    (["profiles", "--json"], 0, None),
]


@pytest.fixture(autouse=True)
def offline(empty_hf_cache, monkeypatch):
    monkeypatch.delenv("FLASHINFER_DISABLE_VERSION_CHECK", raising=False)
    monkeypatch.setenv("COLUMNS", "100")


def run(argv: list[str], capsys, monkeypatch, *, terminal: bool) -> tuple[int, str, str]:
    monkeypatch.setattr(interactive, "interactive_terminal", lambda: terminal)
    with pytest.raises(SystemExit) as exited:
        cli.main(argv, prog_name="advisor")
    out, err = capsys.readouterr()
    code = exited.value.code
    return (0 if code is None else code), out, err


@pytest.mark.parametrize(("argv", "code", "word"), COMMAND_LINES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_every_command_line_prints_its_output_or_one_error_line(argv, code, word, capsys, monkeypatch):
    got, out, err = run(argv, capsys, monkeypatch, terminal=False)
    assert got == code, err
    if word is None:
        assert out and err == ""
    else:
        assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and word in err, err


def test_bare_advisor_without_a_terminal_prints_the_report(capsys, monkeypatch):
    assert run([], capsys, monkeypatch, terminal=False)[0] == 0


# Bare `advisor` on a terminal: the command lines that open the app (values the app reports itself included).
APP = [
    [],
    ["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8", "--engine", "sglang"],
    ["--profile=h100-sxm-8", "--engine=vllm", "--model=Qwen/Qwen3-30B-A3B", "--strict"],
    ["--tp", "2", "--tp", " 8 ", "--nnodes", "01", "--dp-attention", "--no-dp-attention", "--dp-size", "2"],
    ["--with-package", "flashinfer-python==0.6.12", "--with-package", "sglang==0.5.14", "--engine-version", "0.5.4"],
    ["--facts", "/nonexistent/facts.json", "--python", "/nonexistent/python", "--model", ""],
    ["--profile", "nope", "--dtype", "int3"],
    ["--model", "--strict"],  # the model is "--strict"
]
# ... and those that do not: (command line, exit code, a word of the error or None)
NO_APP = [
    (["--version"], 0, None), (["--help"], 0, None), (["-h"], 0, None), (["profiles"], 0, None),
    (["--json"], 2, "No such option"), (["--", "-O0"], 2, "No such option"), (["--tp", "0"], 2, "(see `advisor --help`)"),
    (["--tp"], 2, "requires an argument"), (["--engine", "nope"], 2, "is not one of"), (["--bogus"], 2, "No such option"),
    (["--facts", "."], 2, "is a directory"), (["--strict=1"], 2, "does not take a value"),
    (["check", "--tp", "0"], 2, ">= 1"), (["--profile", "b300-8", "check"], 2, "--model"),
]  # fmt: skip


def open_app_records(monkeypatch, effect=None) -> list:
    """Patch the one place the CLI starts the app: it records the options (and raises ``effect``, if any)."""
    opened = []

    def fake_open_app(options):
        opened.append(options)
        if effect is not None:
            raise effect

    monkeypatch.setattr(interactive, "open_app", fake_open_app)
    return opened


@pytest.mark.parametrize("argv", APP, ids=lambda argv: " ".join(argv) or "(none)")
def test_bare_advisor_on_a_terminal_opens_the_app_with_the_options(argv, capsys, monkeypatch):
    opened = open_app_records(monkeypatch)
    assert run(argv, capsys, monkeypatch, terminal=True) == (0, "", "")
    (options,) = opened
    if argv[:1] == ["--profile=h100-sxm-8"]:
        assert (options.profile, options.engine, options.model, options.strict) == (
            "h100-sxm-8", "vllm", "Qwen/Qwen3-30B-A3B", True)  # fmt: skip
    if argv[:1] == ["--tp"]:
        assert (options.tp, options.nnodes, options.dp_attention, options.dp_size) == (8, 1, False, 2)
    if argv[:1] == ["--with-package"]:
        assert options.with_package == ("flashinfer-python==0.6.12", "sglang==0.5.14")
    if argv[:1] == ["--model"]:
        assert options.model == "--strict" and not options.strict


@pytest.mark.parametrize(("argv", "code", "word"), NO_APP, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_other_command_lines_on_a_terminal_do_not_open_it(argv, code, word, capsys, monkeypatch):
    opened = open_app_records(monkeypatch)
    got, out, err = run(argv, capsys, monkeypatch, terminal=True)
    assert (got, opened) == (code, [])
    if word is None:
        assert out and err == ""
    else:
        assert err.startswith("error: ") and err.count("\n") == 1 and word in err, err


@pytest.mark.parametrize(
    ("effect", "code", "message"),
    [
        (AdvisorError("the interactive app needs textual: pip install textual"), 1,
         "error: the interactive app needs textual: pip install textual\n"),
        (KeyboardInterrupt(), 130, "\nerror: aborted\n"),
        (EOFError(), 130, "\nerror: aborted\n"),
        (OSError(2, "No such file or directory", "/nonexistent"), 1, "error: No such file or directory: /nonexistent\n"),
    ],
    ids=["no textual", "ctrl+c", "eof", "oserror"],
)  # fmt: skip
def test_an_app_that_fails_is_one_line_and_an_exit_code(effect, code, message, capsys, monkeypatch):
    open_app_records(monkeypatch, effect)
    assert run(["--profile", "b300-8"], capsys, monkeypatch, terminal=True) == (code, "", message)


def test_bare_advisor_takes_the_options_of_check():
    """Bare `advisor` takes the same options as `check` (less --json)."""

    def names(command):
        return {n for p in command.params if isinstance(p, click.Option) for n in p.opts + p.secondary_opts}

    assert names(cli.main) - {"--version", "-h", "--help"} == names(cli.check) - {"--json", "-h", "--help"}


# -- the real entry points, in fresh interpreters ----------------------------------------------------------------------


def run_process(argv: list[str], tmp_path: Path, **env: str) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(argv, capture_output=True, env={**offline_env(tmp_path), "PYTHONPATH": str(ROOT), **env},
                          timeout=120)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "args",
    [["check", "--json", *SGLANG_H100], ["check", "--json", *SGLANG_H100, "--tp", "3"], ["check", "--tp", "0"]],
    ids=["result", "plan errors", "usage error"],
)
def test_the_console_script_and_python_m_run_the_click_cli(args, tmp_path):
    script = advisor_argv()
    # The interpreter the console script runs under: the plan names it in the engine's command line.
    python = Path(script[0]).read_text().splitlines()[0].removeprefix("#!") if len(script) == 1 else sys.executable
    by_click = run_process([python, "-c", CLICK_MAIN, *args], tmp_path)
    assert run_process([*script, *args], tmp_path) == by_click
    code, out, err = run_process([python, "-m", "advisor", *args], tmp_path)
    assert (code, out) == by_click[:2]
    assert err == by_click[2].replace(b"`advisor check", b"`python -m advisor check")  # click names the program so


def test_ascii_streams_are_written_without_a_traceback(tmp_path):
    """PYTHONIOENCODING=ascii: the report still comes out (its marks are ASCII off a terminal), and errors are one line."""
    code, out, err = run_process([*advisor_argv(), "check", *SGLANG_H100], tmp_path, PYTHONIOENCODING="ascii")
    assert code == 0 and b"Decisions" in out and err == b""
    code, out, err = run_process([*advisor_argv(), "check", "--profile", "nope"], tmp_path, PYTHONIOENCODING="ascii")
    assert code == 2 and err.startswith(b"error: unknown profile") and err.count(b"\n") == 1
