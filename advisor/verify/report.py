"""`advisor verify`'s outputs without the command line: the logs read from files or stdin, the JSON object
(advisor/schema/verify.schema.json) and the plain-text lines the app shows."""

from __future__ import annotations

import sys
from typing import Any

from advisor.context import AdvisorError, usage_error
from advisor.report import jsonable
from advisor.verify.compare import LogText, Verification
from launcher.files import FileRefused, read_bytes

SCHEMA_VERSION = 1
MAX_LOG_BYTES = 256 * 2**20  # a start-up log is megabytes; refuse what cannot be one rather than fill memory
MEASURED = ("kv_cache_tokens", "max_total_num_tokens", "context_len", "weights_gib", "kv_cache_gib", "max_concurrency",
            "cuda_graph_bs", "custom_allreduce_disabled", "custom_allreduce_reason", "startup_error")  # fmt: skip


def read_logs(paths: tuple[str, ...]) -> list[LogText]:
    """Each LOG as text (``-``: stdin, once), read by the bounded safe reader (regular files only, at most
    MAX_LOG_BYTES: a FIFO, a device or a huge file is refused without waiting or filling memory); bytes that are not
    UTF-8 are replaced. What cannot be a start-up log (a directory, binary data, nothing at all) is a usage error."""
    logs = []
    stdin_read = False
    for path in paths:
        if path == "-":
            if stdin_read:
                raise usage_error("- (stdin) is named twice; pass it once")
            stdin_read = True
            data = _read_stdin()
        else:
            try:
                data = read_bytes(path, "log", MAX_LOG_BYTES)
            except FileNotFoundError:
                raise AdvisorError(f"cannot read {path}: no such file; pass a readable log file") from None
            except FileRefused as exc:
                raise usage_error(f"{exc.message} (the engine's start-up log)") from None
        logs.append(LogText(path, _text_of(path, data)))
    return logs


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or sys.stdin.closed:
        raise usage_error("- names stdin, but stdin is closed; pipe the log in or pass its file")
    try:
        data = stream.read(MAX_LOG_BYTES + 1)
    except (OSError, ValueError) as exc:  # closed under us, or not readable
        raise usage_error(f"cannot read stdin ({exc}); pipe the log in or pass its file") from None
    if len(data) > MAX_LOG_BYTES:
        raise usage_error(f"stdin is over {MAX_LOG_BYTES // 2**20} MiB; pass the start-up part of the log")
    return data if isinstance(data, bytes) else str(data).encode("utf-8", "replace")


def _text_of(path: str, data: bytes) -> str:
    """The log's text; binary data (NUL bytes in its first MiB, as no log line holds) and an empty input are refused."""
    name = "stdin" if path == "-" else path
    if not data.strip():
        raise usage_error(f"{name} is empty; pass the engine's start-up log (its output from launch to ready)")
    if b"\x00" in data[: 2**20]:
        raise usage_error(f"{name} is binary data, not a log; pass the engine's start-up log (a text file)")
    return data.decode("utf-8", errors="replace")


def verification_dict(v: Verification) -> dict[str, Any]:
    """`advisor verify --json` (advisor/schema/verify.schema.json)."""
    counts = {verdict: sum(r.verdict == verdict for r in v.rows) for verdict in ("agree", "differ", "not logged")}
    return {
        "schema_version": SCHEMA_VERSION,
        "engine": v.engine,
        "release": v.release,
        "rules": v.rules,
        "observed": jsonable({k: val for k, val in v.observed.items() if k != "non_default_args"}),
        "rows": [
            {
                "field": r.field,
                "predicted": jsonable(r.predicted),
                "observed": jsonable(r.observed),
                "verdict": r.verdict,
                "source": r.source if r.verdict == "differ" else None,
                "line": r.line,
            }
            for r in v.rows
        ],  # fmt: skip
        "known_bugs": [
            {"id": b.id, "title": b.title, "link": b.link, "workaround": b.workaround} for b in v.known_bugs
        ],
        "notes": list(v.notes),
        "summary": {"agree": counts["agree"], "differ": counts["differ"], "not_logged": counts["not logged"]},
    }


def verification_lines(v: Verification) -> list[str]:
    """The report as plain lines (the app's verify screen shows them)."""
    head = f"{v.engine} {('v' + v.release) if v.release else '(release not logged)'}"
    lines = [head + (f", predicted with v{v.rules}'s rules" if v.rules else ", no prediction"), ""]
    width = max((len(r.field) for r in v.rows), default=5)
    for r in v.rows:
        shown = "-" if r.observed is None else short(r.observed, 30)
        row = f"{r.field:<{width}}  {short(r.predicted, 30):<30}  {shown:<30}  {r.verdict}"
        lines.append(row + (f"  ({r.source})" if r.verdict == "differ" else ""))
    measured = [(name, v.observed[name]) for name in MEASURED if v.observed.get(name) is not None]
    if measured:
        lines += ["", "measured by the engine:", *(f"  {name} = {short(value)}" for name, value in measured)]
    lines += [f"known bug: {b.title} ({b.link}); workaround: {b.workaround}" for b in v.known_bugs]
    lines += [f"note: {note}" for note in v.notes]
    return lines


def short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
