"""advisor.entry (the console script and `python -m advisor`) ends `advisor check` with os._exit: the same stdout,
stderr and exit code as the ordinary exit of advisor.fastpath.main, for results, plan errors, usage errors and an
output that cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import entry

ROOT = Path(__file__).resolve().parents[1]
SGLANG_H100 = ["--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
ORDINARY = "import sys; from advisor.fastpath import main; sys.argv[0] = 'advisor'; main()"
EARLY = "import sys; from advisor.entry import main; sys.argv[0] = 'advisor'; main()"


def run(code: str, argv: list[str], tmp_path: Path, stdout=subprocess.PIPE) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(tmp_path / "hf"), "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", code, *argv], stdout=stdout, stderr=subprocess.PIPE, env=env,
                          timeout=120)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"],
        ["check", *SGLANG_H100],
        ["check", "--json", *SGLANG_H100, "--tp", "3"],  # plan errors: exit 1
        ["check", "--json", "--profile", "nope"],  # an input that cannot be read: exit 1
        ["check", "--json", *SGLANG_H100, "--moe-a2a-backend", "bogus"],  # a usage error the fast path reports: 2
        ["check", "--tp", "0"],  # click's usage error: the ordinary exit
        ["profiles", "--json"],  # not `check`: the ordinary exit
    ],
)
def test_the_early_exit_prints_and_exits_as_the_ordinary_one(argv, tmp_path):
    early = run(EARLY, argv, tmp_path)
    assert early == run(ORDINARY, argv, tmp_path)
    assert early[1] or early[2]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_output_that_cannot_be_written_fails_the_same_way(tmp_path):
    argv = ["check", "--json", *SGLANG_H100]
    with open("/dev/full", "wb") as full:
        early = run(EARLY, argv, tmp_path, stdout=full)
    with open("/dev/full", "wb") as full:
        ordinary = run(ORDINARY, argv, tmp_path, stdout=full)
    assert early == ordinary and early[0] != 0 and early[2]


def test_codes_os_exit_cannot_take_are_left_to_the_interpreter():
    assert entry.end_now("a message") is None and entry.end_now(256) is None and entry.end_now(-1) is None
