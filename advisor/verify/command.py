"""`advisor verify LOG...`: the engine's start-up log against the advisor's prediction (advisor.cli loads it when named).

Exit codes: 0 every logged field agrees, 1 a field differs (or the launch could not be planned), 2 usage error (a LOG
that is not a start-up log: a directory, FIFO, binary, empty or oversized file, closed stdin, no engine line).
"""

from __future__ import annotations

from dataclasses import replace

import click

from advisor.cli import common_options, options_from_context
from advisor.context import EXIT_ERRORS, EXIT_OK, AdvisorError
from advisor.report import dumps
from advisor.verify.compare import Verification, verify
from advisor.verify.report import MEASURED, read_logs, short, verification_dict


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
        shown = "-" if r.observed is None else short(r.observed)
        table.add_row(r.field, short(r.predicted), shown, r.verdict, r.source if r.verdict == "differ" else "")
    emit(console, table)
    measured = [(name, v.observed[name]) for name in MEASURED if v.observed.get(name) is not None]
    if measured:
        console.print()
        console.print("measured by the engine:")
        for name, value in measured:
            console.print(f"  {name} = {short(value)}")
    for bug in v.known_bugs:
        console.print(f"known bug: {bug.title} ({bug.link}); workaround: {bug.workaround}")
    for note in v.notes:
        console.print(f"note: {note}")
    counts = {verdict: sum(r.verdict == verdict for r in v.rows) for verdict in ("agree", "differ", "not logged")}
    console.print(f"{counts['agree']} agree, {counts['differ']} differ, {counts['not logged']} not logged")


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

    Exit codes: 0 every logged field agrees, 1 a field differs or the launch could not be planned, 2 usage error or
    a LOG that is not a start-up log."""
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
