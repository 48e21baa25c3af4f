"""An engine run's output, read: its log lines split by rank, and why it failed (the first failing rank and its error).

`launcher.spawn` owns the processes and hands this module what they printed; nothing here starts or stops anything.

    parse_line(text, stream) -> LogLine            "[rank1]: ..." -> LogLine(1, "...")
    starts_teardown(text) -> bool                  torchrun's agent began stopping the ranks after one failed
    diagnose(code, ...) -> Failure                 torchrun's failure summary, the rank's error file or stderr log,
                                                   else the last line that reads like an error

Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# "[rank1]:" (our template) or "[default1]:" (torchrun's); not the bare "[0]:" headers of torchrun's failure summary.
_PREFIX = re.compile(r"^\[(?:rank|[A-Za-z_]+?)(\d+)\]:\s?(.*)$")
# torchrun's agent starts tearing down: it logs "Sending process N closing signal SIGTERM" to the survivors of a failed
# rank (then waits up to its shutdown timeout), and "failed (exitcode: ...)" once it has collected them.
_TORCHRUN_TEARDOWN = re.compile(r"Sending process \d+ closing signal|failed \(exitcode: -?\d+\) local_rank: \d+")
_ERROR_LINE = re.compile(
    r"^\s*(?:\[rank \d+\] )?(?:[\w.]+(?:Error|Exception|Interrupt)\b|error: ).*"  # "ValueError: ...", "[rank 1] error: ..."
)
_RUNTIME_RANK = re.compile(r"^\s*\[rank \d+\] ")
# Routine log records: "INFO ...", "[rank 0] WARNING ...", "2026-01-01 12:00:00,123 INFO ...", glog's "I1130 12:00:00.1 ..."
_ROUTINE_LOG_LINE = re.compile(
    r"^\s*(?:\[rank \d+\] )?(?:[\d:,.\- T]+\s)?(?:\[?(?:DEBUG|INFO|WARNING|WARN|NOTICE)\b|\[?[IW]\d{4} \d)"
)


@dataclass(frozen=True)
class LogLine:
    rank: int | None  # None: the launcher (torchrun agent, SGLang's main process) rather than a worker rank
    text: str
    stream: str = "stdout"  # "stdout" | "stderr" (torchrun tees a rank's stderr to its own stderr)

    def __str__(self) -> str:
        return f"[{self.rank}] {self.text}" if self.rank is not None else self.text


@dataclass(frozen=True)
class Failure:
    rank: int | None  # the first failing rank (None when the engine did not say)
    exitcode: int | None
    summary: str  # one line: the error of that rank
    traceback: str | None = None  # the rank's traceback when its error file had one
    process: str = "the engine"  # who failed when no rank did, e.g. "the torchrun agent (pid 4242)"

    def __str__(self) -> str:
        where = f"rank {self.rank} failed" if self.rank is not None else f"{self.process} failed"
        code = ""
        if self.exitcode is not None:
            code = f" (exit {self.exitcode}" + (f", {_signal_name(-self.exitcode)}" if self.exitcode < 0 else "") + ")"
        return f"{where}{code}: {self.summary}"


def parse_line(text: str, stream: str = "stdout") -> LogLine:
    """One output line as a LogLine: the rank from torchrun's prefix (None for the launcher's own lines), the text
    without it."""
    match = _PREFIX.match(text)
    line = LogLine(int(match.group(1)), match.group(2), stream) if match else LogLine(None, text, stream)
    if line.rank is not None and line.text.startswith(f"[rank{line.rank}]:"):
        # torch prefixes uncaught-exception tracebacks with the rank too; once is enough.
        line = LogLine(line.rank, line.text[len(f"[rank{line.rank}]:") :].lstrip(), stream)
    return line


def starts_teardown(text: str) -> bool:
    """True for the torchrun agent's line that begins stopping the surviving ranks of a failed run."""
    return bool(_TORCHRUN_TEARDOWN.search(text))


def diagnose(
    code: int,
    *,
    log_text: str,
    lines: Sequence[LogLine],
    torchrun: bool,
    log_dir: Path,
    killed_by_us: bool,
    pid: int | None,
) -> Failure:
    """Why a run that exited with ``code`` failed. ``log_text``: everything the child printed (RUN/launcher.log);
    ``lines``: the parsed lines kept in memory; ``log_dir``: torchrun's per-rank logs; ``killed_by_us``: a stop was
    asked, so a signal exit is not the agent's own death."""
    if torchrun:
        failure = _parse_torchrun_summary(log_text, log_dir)
        if failure is not None:
            return failure
        if code < 0 and not killed_by_us:
            # The agent itself was killed (no rank failed first, or it would have printed its summary): say so,
            # rather than blame whichever rank printed last.
            return Failure(
                rank=None,
                exitcode=code,
                summary=f"the agent was killed by signal {-code} ({_signal_name(-code)}); its ranks were stopped",
                process=f"the torchrun agent (pid {pid})",
            )
    ranks_lines = [ln for ln in lines if ln.text.strip()]
    summary = _last_error_line([ln.text for ln in ranks_lines])
    if summary is None:
        killed = f"killed by signal {-code} ({_signal_name(-code)})" if code < 0 else None
        summary = killed or f"exited with code {code}"
    rank = next((ln.rank for ln in reversed(ranks_lines) if ln.text.strip() == summary.strip()), None)
    return Failure(rank=rank, exitcode=code, summary=summary)


def _parse_torchrun_summary(text: str, log_dir: Path) -> Failure | None:
    """Read the 'Root Cause (first observed failure)' block torchrun prints when a rank fails."""
    at = text.rfind("Root Cause (first observed failure):")
    if at < 0:
        return None
    block = []
    for line in text[at:].splitlines()[1:]:
        if line.startswith("====="):
            break
        block.append(_PREFIX.sub(r"\2", line) if _PREFIX.match(line) else line)
    fields: dict[str, str] = {}
    key = None
    for line in block:
        m = re.match(r"^\s{2}(\w+)\s*: ?(.*)$", line)
        if m:
            key = m.group(1)
            fields[key] = m.group(2)
        elif key == "traceback":
            fields[key] += "\n" + line
    rank = _int(re.match(r"-?\d+", fields.get("rank", "")))
    local = _int(re.search(r"local_rank: (\d+)", fields.get("rank", "")))
    exitcode = _int(re.match(r"-?\d+", fields.get("exitcode", "")))
    summary, tb = None, None
    error_file = fields.get("error_file", "").strip()
    if error_file and os.path.isfile(error_file):
        summary, tb = _read_error_file(error_file)
    if summary is None:
        stderr = _rank_stderr(log_dir, local if local is not None else rank)
        summary = _last_error_line(stderr.splitlines()) if stderr else None
    if summary is None:
        raw = fields.get("traceback", "").strip()
        if raw and not raw.startswith("To enable traceback"):
            summary = raw.splitlines()[-1].strip()
    return Failure(rank=rank, exitcode=exitcode, summary=summary or f"exited with code {exitcode}", traceback=tb)


def _read_error_file(path: str) -> tuple[str | None, str | None]:
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        data = json.loads(Path(path).read_text())
        message = data.get("message")
        if isinstance(message, dict):
            return message.get("message"), message.get("extraInfo", {}).get("py_callstack")
        if isinstance(message, str):
            return message, None
    return None, None


def _rank_stderr(log_dir: Path, local_rank: int | None) -> str:
    if local_rank is None:
        return ""
    files = sorted(log_dir.glob(f"*/attempt_*/{local_rank}/stderr.log"), key=lambda p: p.stat().st_mtime)
    if not files:
        return ""
    with contextlib.suppress(OSError):
        return files[-1].read_text(errors="replace")
    return ""


def _last_error_line(lines: Sequence[str]) -> str | None:
    """The last line that reads like an error (the runtime's own "[rank N] " prefix dropped), else the last line that
    is not a routine log record (an INFO line is never the error)."""
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            text = _RUNTIME_RANK.sub("", line).strip()
            return text[len("error: ") :] if text.startswith("error: ") else text
    for line in reversed(lines):
        if line.strip() and not _ROUTINE_LOG_LINE.match(line):
            return line.strip()
    return None


def _int(match: re.Match | None) -> int | None:
    return int(match.group(1) if match and match.groups() else match.group(0)) if match else None


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
