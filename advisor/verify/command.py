"""`advisor verify LOG...`: the engine's start-up log against the advisor's prediction (advisor.cli loads it when named).

Exit codes: 0 every logged field agrees, 1 a field differs (or the log or the launch could not be used), 2 usage error.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import click

from advisor.cli import common_options, options_from_context
from advisor.context import EXIT_ERRORS, EXIT_OK, AdvisorError, usage_error
from advisor.report import dumps, jsonable
from advisor.verify.compare import LogText, Verification, verify

SCHEMA_VERSION = 1
MAX_LOG_BYTES = 256 * 2**20  # a start-up log is megabytes; refuse what cannot be one rather than fill memory
MEASURED = ("kv_cache_tokens", "max_total_num_tokens", "context_len", "weights_gib", "kv_cache_gib", "max_concurrency",
            "cuda_graph_bs", "custom_allreduce_disabled", "custom_allreduce_reason", "startup_error")  # fmt: skip


def read_logs(paths: tuple[str, ...]) -> list[LogText]:
    """Each LOG as text (``-``: stdin, once); bytes that are not UTF-8 are replaced, never an error."""
    logs = []
    stdin_read = False
    for path in paths:
        if path == "-":
            if stdin_read:
                raise usage_error("- (stdin) is named twice; pass it once")
            stdin_read = True
            data = sys.stdin.buffer.read(MAX_LOG_BYTES + 1)
        else:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_LOG_BYTES + 1)
            except IsADirectoryError:
                raise usage_error(f"{path} is a directory; pass the log file(s) in it") from None
            except OSError as exc:
                raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}; pass a readable log file") from None
        if len(data) > MAX_LOG_BYTES:
            raise AdvisorError(f"{path} is over {MAX_LOG_BYTES // 2**20} MiB; pass the start-up part of the log")
        logs.append(LogText(path, data.decode("utf-8", errors="replace")))
    return logs


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
        shown = "-" if r.observed is None else _short(r.observed, 30)
        row = f"{r.field:<{width}}  {_short(r.predicted, 30):<30}  {shown:<30}  {r.verdict}"
        lines.append(row + (f"  ({r.source})" if r.verdict == "differ" else ""))
    measured = [(name, v.observed[name]) for name in MEASURED if v.observed.get(name) is not None]
    if measured:
        lines += ["", "measured by the engine:", *(f"  {name} = {_short(value)}" for name, value in measured)]
    lines += [f"known bug: {b.title} ({b.link}); workaround: {b.workaround}" for b in v.known_bugs]
    lines += [f"note: {note}" for note in v.notes]
    return lines


def print_verification(v: Verification) -> None:
    from rich.table import Table

    from advisor.report import emit, make_console
    from advisor.report.render import _box

    console = make_console()
    title = f"{v.engine} {('v' + v.release) if v.release else '(release not logged)'}"
    title += f", predicted with v{v.rules}'s rules" if v.rules else ", no prediction"
    console.print(title)
    table = Table(box=_box(console), show_edge=False, pad_edge=False)
    for column in ("field", "predicted", "observed", "verdict", "rule (where they differ)"):
        table.add_column(column, overflow="fold")
    for r in v.rows:
        shown = "-" if r.observed is None else _short(r.observed)
        table.add_row(r.field, _short(r.predicted), shown, r.verdict, r.source if r.verdict == "differ" else "")
    emit(console, table)
    measured = [(name, v.observed[name]) for name in MEASURED if v.observed.get(name) is not None]
    if measured:
        console.print()
        console.print("measured by the engine:")
        for name, value in measured:
            console.print(f"  {name} = {_short(value)}")
    for bug in v.known_bugs:
        console.print(f"known bug: {bug.title} ({bug.link}); workaround: {bug.workaround}")
    for note in v.notes:
        console.print(f"note: {note}")
    counts = {verdict: sum(r.verdict == verdict for r in v.rows) for verdict in ("agree", "differ", "not logged")}
    console.print(f"{counts['agree']} agree, {counts['differ']} differ, {counts['not logged']} not logged")


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@common_options
@click.option("--engine-arg", "engine_args", multiple=True, metavar="ARG",
              help="An engine argument given at launch that the log does not show (repeatable), e.g. "
              "--engine-arg=--mem-fraction-static=0.8: SGLang logs resolved values only.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (advisor/schema/verify.schema.json).")
@click.pass_context
def verify_command(ctx: click.Context, logs: tuple[str, ...], engine_args: tuple[str, ...], as_json: bool,
                   **_params) -> None:  # fmt: skip
    """Compare an engine's start-up log (SGLang or vLLM; files, or - for stdin; one per rank or node) with what
    `check` predicts for the same launch: the model, sizes and arguments come from the log, the machine from this
    one's probe, --profile or --facts. Prints each field predicted / observed / agree, differ or not logged, with the
    rule behind each difference, what the engine measured, and a known bug matching a logged error.

    Exit codes: 0 every logged field agrees, 1 a field differs or the log could not be used, 2 usage error."""
    options = options_from_context(ctx)
    options = replace(options, overrides=tuple(options.overrides) + engine_args)
    texts = read_logs(logs)
    try:
        result = verify(texts, options, options.engine)
    except AdvisorError as exc:
        observation = getattr(exc, "observation", None)
        if observation is None:
            raise
        # The log was read but the launch could not be planned: show what was read, then the error.
        result = Verification(observation.engine, observation.observed.get("release"), None, observation.observed,
                              notes=observation.notes)  # fmt: skip
        if as_json:
            click.echo(dumps({**verification_dict(result), "error": exc.message}))
        else:
            print_verification(result)
        raise
    if as_json:
        click.echo(dumps(verification_dict(result)))
    else:
        print_verification(result)
    ctx.exit(EXIT_ERRORS if result.differs else EXIT_OK)
