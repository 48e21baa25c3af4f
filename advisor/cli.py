"""The `advisor` command line. Imports stay lazy: `advisor check --json` must not pay for rich, torch or textual."""

from __future__ import annotations

import click

from advisor import __version__

# Options shared by the TUI (bare `advisor`), `check`, `explain` and `launch` (ARCHITECTURE.md, "Contracts").
COMMON_OPTIONS = [
    click.option("--model", "model", metavar="ID|DIR", help="Model id (HF cache or bundled catalog) or a local directory."),
    click.option("--tp", "tp", type=int, default=None, help="Tensor-parallel size."),
    click.option("--nnodes", type=int, default=1, show_default=True, help="Number of nodes."),
    click.option("--dp-attention/--no-dp-attention", default=False, help="SGLang DP attention."),
    click.option("--dp-size", type=int, default=1, show_default=True, help="Data-parallel size."),
    click.option("--moe-a2a-backend", default="none", show_default=True, metavar="NAME", help="MoE all-to-all backend."),
    click.option("--engine", type=click.Choice(["bundled", "sglang", "vllm"]), default=None, help="Serving engine."),
    click.option("--engine-version", metavar="X.Y.Z", help="Engine release whose rules apply (default: the installed one)."),
    click.option("--dtype", default=None, help="Model dtype (bfloat16, float16, float32)."),
    click.option("--profile", metavar="NAME", help="Use a simulated machine (see `advisor profiles`)."),
    click.option("--facts", "facts_file", metavar="FILE", help="Use facts saved with `advisor probe -o FILE`."),
    click.option("--python", "python", metavar="PATH", help="Probe the packages of another Python interpreter."),
    click.option("--with-package", "with_package", multiple=True, metavar="NAME==VERSION", help="Pretend a package is installed at VERSION (repeatable)."),
    click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 1)."),
]


def common_options(func):
    for option in reversed(COMMON_OPTIONS):
        func = option(func)
    return func


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="advisor")
@common_options
@click.pass_context
def main(ctx: click.Context, **options) -> None:
    """Explain what a tensor-parallel LLM engine will auto-enable on this machine, and launch it.

    Without a command, opens the interactive app."""
    if ctx.invoked_subcommand is None:
        raise click.UsageError("the TUI is not written yet")  # filled in by issue 5
