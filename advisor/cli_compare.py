"""`advisor layouts` and `advisor diff`: the candidate layouts of a model on this machine, and what a release changes.

advisor.cli loads them when named (LAZY_COMMANDS); the logic lives in advisor.layouts and advisor.diff.
Exit codes: 0 (an answer was printed, whatever it says), 1 an input could not be read, 2 usage error.
"""

from __future__ import annotations

import click

from advisor.cli import POSITIVE, _complete_engine_versions, common_options, options_from_context
from advisor.diff import diff_dict, diff_for, diff_lines
from advisor.layouts import layouts_for, print_layouts, report_dict
from advisor.report import dumps


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@common_options
@click.option(
    "--context-len",
    "context_len",
    type=POSITIVE,
    default=None,
    metavar="N",
    help="Tokens per sequence for max_concurrency. Default: the model's context, capped at 32768.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (advisor/schema/layouts.schema.json).")
@click.pass_context
def layouts(ctx: click.Context, context_len: int | None, as_json: bool, **_params) -> None:
    """Every way to split the model over this machine's GPUs: whether it fits, the KV cache it leaves, how many
    sequences it holds, what the engine auto-enables, and the recommended layout.

    Candidates: tp = nnodes x 1, 2, 4, ... up to the GPUs of each node; for SGLang and MoE models also DP attention
    (dp size = tp). --tp, --dp-attention and --dp-size are what varies, so they are not used.

    Exit codes: 0 the table was printed, 1 an input could not be read, 2 usage error."""
    report = layouts_for(options_from_context(ctx), context_len)
    if as_json:
        click.echo(dumps(report_dict(report)))
        return
    from advisor.report import make_console  # rich: only for the table

    print_layouts(report, make_console())


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@common_options
@click.option(
    "--from",
    "release_from",
    metavar="X.Y.Z",
    shell_complete=_complete_engine_versions,
    help="The release you are on. Default: --engine-version, else the installed one, else the modelled release before"
    " --to.",
)
@click.option(
    "--to",
    "release_to",
    metavar="X.Y.Z",
    shell_complete=_complete_engine_versions,
    help="The release to compare with. Default: the newest modelled release.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (advisor/schema/diff.schema.json).")
@click.pass_context
def diff(ctx: click.Context, release_from: str | None, release_to: str | None, as_json: bool, **_params) -> None:
    """What changes for this scenario between two releases of one engine (sglang or vllm): every decision whose
    state, value or flags differ, with the release and upstream source of the change, problems added and removed,
    and both command lines.

    Exit codes: 0 the comparison was printed, 1 an input could not be read, 2 usage error (unknown release, bundled
    engine)."""
    result = diff_for(options_from_context(ctx), release_from, release_to)
    if as_json:
        click.echo(dumps(diff_dict(result)))
        return
    from advisor.report import make_console, marks  # rich: only for the text

    console = make_console()
    for line in diff_lines(result, marks(console)):
        console.print(line)
