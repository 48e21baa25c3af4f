"""The shipped completion scripts are exactly what the click app generates, and they call back into `advisor`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.completions import FILES, script, write_all

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("shell", sorted(FILES))
def test_committed_file_matches_generated(shell, tmp_path):
    write_all(tmp_path)
    generated = (tmp_path / FILES[shell]).read_text(encoding="utf-8")
    committed = (ROOT / "completions" / FILES[shell]).read_text(encoding="utf-8")
    assert committed == generated, f"completions/{FILES[shell]} is stale: run `python -m advisor.completions`"


@pytest.mark.parametrize("shell", sorted(FILES))
def test_cli_prints_the_same_script(shell):
    result = CliRunner().invoke(main, ["completions", shell])
    assert result.exit_code == 0, result.output
    assert result.output == script(shell)
    assert "_ADVISOR_COMPLETE" in result.output  # the script asks `advisor` itself for candidates


def test_zsh_script_starts_with_compdef():
    assert script("zsh").splitlines()[0] == "#compdef advisor"


def test_unknown_shell_is_a_usage_error():
    result = CliRunner().invoke(main, ["completions", "tcsh"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def _complete(args: str, incomplete: str) -> list[str]:
    """Ask the app for candidates the way the bash script does."""
    env = {"_ADVISOR_COMPLETE": "bash_complete", "COMP_WORDS": f"advisor {args} {incomplete}".strip(), "COMP_CWORD": str(len(args.split()) + 1)}
    result = CliRunner().invoke(main, [], env=env, prog_name="advisor")
    return [line.split(",", 1)[1] for line in result.output.splitlines() if line.startswith("plain,")]


def test_completes_commands_options_and_values():
    assert {"check", "explain", "probe", "profiles", "completions"} <= set(_complete("", ""))
    assert "--engine-version" in _complete("check", "--engine-")
    assert "b300-8" in _complete("check --profile", "b3")
    assert "flashinfer_allreduce_fusion" in _complete("explain", "flash")
    assert "Qwen/Qwen3-VL-235B-A22B-Instruct" in _complete("check --model", "Qwen/Qwen3-VL")
    assert {"0.5.14", "0.5.13"} <= set(_complete("check --engine sglang --engine-version", "0.5.1"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_script_completes_through_the_installed_advisor():
    """Source the shipped script in a real bash and ask it for candidates, as the shell does on TAB."""
    bindir = Path(sys.executable).parent
    if not (bindir / "advisor").exists():
        pytest.skip("the advisor console script is not installed (pip install -e .)")
    script = (ROOT / "completions" / "advisor.bash").as_posix()
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    words = "advisor check --profile b3"
    cmd = f'source {script}; COMP_WORDS=({words}); COMP_CWORD=3; _advisor_completion advisor; printf "%s\\n" "${{COMPREPLY[@]}}"'
    out = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["b300-8"]


def test_completes_layouts_and_diff():
    assert {"layouts", "diff"} <= set(_complete("", ""))
    assert "--context-len" in _complete("layouts", "--context")
    assert {"--from", "--to"} <= set(_complete("diff", "--"))
    assert {"0.5.13", "0.5.14"} <= set(_complete("diff --engine sglang --from", "0.5.1"))
    assert "0.5.18" in _complete("diff --engine sglang --to", "0.5.1")
