"""`advisor verify` on what is not a start-up log: one line naming the fix and exit 2, never a traceback, never a hang
(the bounded safe reader of launcher/files.py reads regular files only, up to a cap)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main

REPO = Path(__file__).resolve().parents[1]
VLLM = REPO / "tests" / "fixtures" / "logs" / "vllm-0.33.0-llama-3.1-8b-tp8.log"


def invoke(*args: str, stdin: bytes | str | None = None):
    return CliRunner().invoke(main, ["verify", *args, "--profile", "h100-sxm-8"], input=stdin, catch_exceptions=False)


def one_line_usage_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0], lines[0]


def test_a_binary_file(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 64)
    one_line_usage_error(invoke(str(path)), "binary")


def test_a_directory(tmp_path):
    one_line_usage_error(invoke(str(tmp_path)), "directory")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "advisor", "verify", str(fifo), "--profile", "h100-sxm-8"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)  # fmt: skip
    assert done.returncode == 2 and "FIFO" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_a_2_gb_sparse_file_is_refused_by_its_size(tmp_path):
    path = tmp_path / "huge.log"
    with open(path, "wb") as handle:
        handle.truncate(2 * 2**30)
    one_line_usage_error(invoke(str(path)), "limit")


def test_undecodable_bytes_in_a_log_are_replaced_and_the_log_still_reads(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\xff\xfe\xc3(garbage)\n" + VLLM.read_bytes() + b"\x80\x81 trailing\n")
    result = invoke(str(path), "--json")
    assert result.exit_code == 0, result.output
    assert '"engine": "vllm"' in result.output


def test_undecodable_bytes_alone_are_not_a_log(tmp_path):
    path = tmp_path / "junk.log"
    path.write_bytes(b"\xff\xfe\xc3\x28" * 1000 + b"\n")
    one_line_usage_error(invoke(str(path)), "no start-up line")


def test_lines_of_10_mb_read_in_bounded_time(tmp_path):
    path = tmp_path / "long.log"
    line = b"server_args=ServerArgs(" + b"x=1, " * (2 * 2**20) + b"\n"  # 10 MiB, an argument list with no end
    path.write_bytes(line + b"A" * (10 * 2**20) + b"\n")
    result = invoke(str(path))
    assert result.exit_code in (1, 2) and "Traceback" not in result.output


def test_a_10_mb_line_next_to_a_real_log_does_not_stop_it(tmp_path):
    path = tmp_path / "noisy.log"
    path.write_bytes(b"#" * (10 * 2**20) + b"\n" + VLLM.read_bytes())
    assert invoke(str(path)).exit_code == 0


@pytest.mark.parametrize("content", [b"", b"\n\n  \r\n"])
def test_an_empty_file(tmp_path, content):
    path = tmp_path / "empty.log"
    path.write_bytes(content)
    one_line_usage_error(invoke(str(path)), "empty")


def test_stdin_empty():
    one_line_usage_error(invoke("-", stdin=b""), "empty")


def test_stdin_closed():
    done = subprocess.run([sys.executable, "-m", "advisor", "verify", "-", "--profile", "h100-sxm-8"],
                          capture_output=True, text=True, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.close(0))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "stdin" in done.stderr + done.stdout and "Traceback" not in done.stderr
