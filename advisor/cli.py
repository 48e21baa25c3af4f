"""The `advisor` command line: one click group, its commands, and how every failure is reported.

Exit codes (docs/architecture.md, "Contracts"): 0 no errors, 1 errors found (or warnings with --strict) or an input that could
not be read, 2 usage error. Every error is one line on stderr, `error: ...`, never a traceback.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from dataclasses import replace

import click
from click.core import ParameterSource
from click.shell_completion import CompletionItem

from advisor import __version__, interactive
from advisor import options as kinds
from advisor.context import AdvisorError, Options, exit_code_for, load_facts, make_plan
from advisor.models import catalog_ids
from advisor.options import BY_FLAG, COMMON
from advisor.probe.profiles import list_profiles, profile_summary
from advisor.report import (
    decision_dict,
    dumps,
    facts_to_dict,
    plan_to_dict,
    problem_dict,
    problems_named_by,
    release_dict,
    startup_dict,
)
from advisor.rules import registry
from advisor.sanitize import clean
from launcher.files import FileRefused, output_target

# The human-readable reports are drawn with rich, which a --json run does without: the commands import the renderers
# (advisor.report.render) only when they draw.

# -- shell completion of option values (a completion must never print a traceback into the user's shell) ---------------


def _complete_profiles(ctx, param, incomplete):
    try:
        return [name for name in list_profiles() if name.startswith(incomplete)]
    except Exception:
        return []


def _complete_models(ctx, param, incomplete):
    try:
        ids = catalog_ids()
    except Exception:
        ids = ()
    return [CompletionItem(incomplete, type="dir"), *(CompletionItem(m) for m in ids if m.startswith(incomplete))]


def _complete_engine_versions(ctx, param, incomplete):
    """The modelled releases of the chosen engine (SGLang's when none is chosen yet)."""
    try:
        engine = ctx.params.get("engine") or "sglang"
        return [r for r in reversed(registry.modelled_releases(engine)) if r.startswith(incomplete)]
    except Exception:
        return []


def _complete_rules(ctx, param, incomplete):
    """The decision ids of the chosen engine, else of every registered engine; `advisor explain` also accepts any other
    id the plan has."""
    try:
        chosen = ctx.params.get("engine")
        engines = [registry.get(chosen)] if chosen in registry.names() else registry.engines()
        ids = dict.fromkeys(i for engine in engines for i in engine.decision_ids)
        return [r for r in ids if r.startswith(incomplete)]
    except Exception:
        return []


class EngineChoice(click.Choice):
    """`--engine`: one of the registered engines (advisor.rules.registry is the one list), read when the option is
    used."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self):
        return registry.names()

    @choices.setter
    def choices(self, _value) -> None:
        pass  # click.Choice.__init__ sets it; the registry is the one list


class PositiveInt(click.ParamType):
    """A whole number >= 1, with a message that says so (click's IntRange talks about "integer ranges")."""

    name = "N"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a whole number; pass a number >= 1", param, ctx)
        if number < 1:
            self.fail(f"{number} is not allowed; pass a number >= 1", param, ctx)
        return number


POSITIVE = PositiveInt()

_COMPLETIONS = {"models": _complete_models, "profiles": _complete_profiles, "engine_versions": _complete_engine_versions}


def click_option(spec, help_text: str | None = None):
    """The click option of one common option (advisor.options), its default the one advisor.context.Options gives."""
    settings: dict = {"help": help_text or spec.help, "default": getattr(Options(), spec.field)}
    if spec.metavar:
        settings["metavar"] = spec.metavar
    if spec.complete:
        settings["shell_complete"] = _COMPLETIONS[spec.complete]
    if spec.show_default:
        settings["show_default"] = True
    settings.update({
        kinds.NUMBER: {"type": POSITIVE},
        kinds.PATH: {"type": click.Path(dir_okay=False)},
        kinds.ENGINE: {"type": EngineChoice()},
        kinds.REPEATED: {"multiple": True},
        kinds.FLAG: {"is_flag": True},
    }.get(spec.kind, {}))  # fmt: skip
    return click.option("/".join(spec.flags), spec.field, **settings)


# The machine options `probe` shares with the others (each command words its own help).
def profile_option(help_text: str):
    return click_option(BY_FLAG["--profile"], help_text)


def python_option(help_text: str):
    return click_option(BY_FLAG["--python"], help_text)


def with_package_option(help_text: str):
    return click_option(BY_FLAG["--with-package"], help_text)


# Options shared by the TUI (bare `advisor`), `check`, `explain`, `launch`, `layouts` and `diff`, as advisor.options
# declares them.
COMMON_OPTIONS = [click_option(spec) for spec in COMMON]


def common_options(func):
    for option in reversed(COMMON_OPTIONS):
        func = option(func)
    return func


def options_from_context(ctx: click.Context):
    """The context's common options as an :class:`advisor.context.Options`; options given before the subcommand
    (`advisor --profile b300-8 check`) apply unless the subcommand sets them itself."""
    params: dict = {}
    chain = []
    node: click.Context | None = ctx
    while node is not None:
        chain.append(node)
        node = node.parent
    for node in reversed(chain):  # outermost first, so inner explicit values win
        for name, value in node.params.items():
            if name not in params or node.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
                params[name] = value
    return Options.from_params(params)


def with_engine_args(options, engine_args: tuple[str, ...]):
    """The options with the engine arguments given after `--` added to the overrides the plan evaluates."""
    return replace(options, overrides=tuple(options.overrides) + tuple(engine_args)) if engine_args else options


# -- the group ---------------------------------------------------------------------------------------------------------

# Subcommands defined in other modules, loaded when named: those modules build on this one (the common options, the
# group that completions are generated from), so this one cannot import them.
LAZY_COMMANDS = {
    "launch": ("advisor.launch", "launch"),
    "layouts": ("advisor.cli_compare", "layouts"),
    "diff": ("advisor.cli_compare", "diff"),
    "completions": ("advisor.completions", "completions"),
    "verify": ("advisor.verify.command", "verify_command"),
}


class AdvisorGroup(click.Group):
    """A group that loads some subcommands lazily and reports every error as one line (no usage block, no traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name in LAZY_COMMANDS if self._lazy(name) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, name) or self._lazy(name)

    def _lazy(self, name: str) -> click.Command | None:
        if name not in LAZY_COMMANDS:
            return None
        module_name, attr = LAZY_COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None  # a build without that module: the command is absent
            raise
        return getattr(module, attr, None)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            sys.stdout.flush()  # a full device or a closed pipe must fail here, not in the interpreter's final flush
        except AdvisorError as exc:
            _fail(exc.message, exc.exit_code)
        except click.UsageError as exc:
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            _fail(_one_line(exc.format_message()) + hint, exc.exit_code)
        except click.ClickException as exc:
            _fail(_one_line(exc.format_message()), exc.exit_code)
        except click.Abort:
            _fail("aborted", 130)
        except OSError as exc:
            _output_failed(exc)
        sys.exit(rv if isinstance(rv, int) else 0)


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _fail(message: str, code: int) -> None:
    """``error: MESSAGE`` on stderr (one line, control characters escaped: file names and texts may hold them); exit."""
    sys.stderr.write(f"error: {clean(_one_line(message), newlines=False)}\n")
    sys.stderr.flush()
    sys.exit(code)


def _output_failed(exc: OSError) -> None:
    """An OSError that reached the top. From writing stdout (`advisor check | head`: the reader left; `> /dev/full`:
    no space): say nothing for a closed pipe, one line otherwise, and point stdout at /dev/null so that Python's final
    flush stays quiet. Anything else: one line naming it."""
    writing = exc.filename is None and exc.errno in (errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
    if not writing:
        _fail(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), 1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if exc.errno == errno.EPIPE:
        sys.exit(1)
    _fail(f"cannot write the output ({exc.strerror or exc}); free some space or write it elsewhere", 1)


@click.group(
    cls=AdvisorGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)
@click.version_option(__version__, "--version", prog_name="advisor", message="%(prog)s %(version)s")
@common_options
@click.pass_context
def main(ctx: click.Context, **_params) -> None:
    """Explain what a tensor-parallel LLM engine will auto-enable on this machine, and launch it.

    Without a command, opens the interactive app with these options; when stdout is not a terminal (a pipe, a file)
    it prints the `advisor check` report instead. Options given here also apply to the command that follows
    (`advisor --profile b300-8 check`).

    Exit codes: 0 no errors, 1 errors found (or warnings with --strict) or an input that could not be read, 2 usage error.
    """
    if ctx.invoked_subcommand is not None:
        return
    options = options_from_context(ctx)
    if not interactive.interactive_terminal():
        # The app would write escape codes into a pipe, or wait for keys that cannot come (stdin redirected): print
        # what `advisor check` prints instead.
        ctx.exit(_check_report(options, as_json=False))
    interactive.open_app(options)


# -- check -------------------------------------------------------------------------------------------------------------


@main.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object (advisor/schema/plan.schema.json).")
@click.argument("engine_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ENGINE ARGS...]")
@click.pass_context
def check(ctx: click.Context, as_json: bool, engine_args: tuple[str, ...], **_params) -> None:
    """Explain what the engine will auto-enable here, condition by condition, and what will break.

    Arguments after `--` are the engine's own (as `advisor launch` passes them), e.g. `-- -O0` or
    `-- --disable-custom-all-reduce`: the plan evaluates them, as forced-on / forced-off or the value given.

    Exit codes: 0 no errors, 1 errors found (or warnings with --strict) or an input that could not be read, 2 usage error.
    """
    ctx.exit(_check_report(with_engine_args(options_from_context(ctx), engine_args), as_json))


def _check_report(options, as_json: bool) -> int:
    """Print `advisor check`'s report (or its JSON object); the exit code."""
    plan = make_plan(options)
    if as_json:
        click.echo(dumps(plan_to_dict(plan)))
    else:
        from advisor.report import make_console, print_plan

        print_plan(plan, make_console(), strict=options.strict)
    return exit_code_for(plan, options.strict)


# -- explain -----------------------------------------------------------------------------------------------------------


@main.command()
@click.argument("rule", metavar="RULE", shell_complete=_complete_rules)
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print the decision (and its release matrix) as JSON.")
@click.argument("engine_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ENGINE ARGS...]")
@click.pass_context
def explain(ctx: click.Context, rule: str, as_json: bool, engine_args: tuple[str, ...], **_params) -> None:
    """Explain one decision in full: every condition with why it exists and how to change it, and for the FlashInfer
    fusion the outcome under every modelled release.

    RULE is a decision id, e.g. flashinfer_allreduce_fusion, custom_allreduce, attention_backend, moe_runner_backend,
    memory_defaults; the vLLM ones are listed in the README. Arguments after `--` are the engine's own, as for check."""
    options = with_engine_args(options_from_context(ctx), engine_args)
    plan = make_plan(options)
    decision = plan.decision(rule)
    if decision is None:
        valid = ", ".join(d.id for d in plan.decisions) or "none"
        raise AdvisorError(
            f"no rule {rule!r} for engine {plan.intent.engine}; valid ids: {valid}", exit_code=2
        )
    matrix = plan.release_matrix if rule == "flashinfer_allreduce_fusion" else ()
    named = problems_named_by(decision, plan.problems)  # so a note's "see problem X" is answered here too
    memory = registry.get(plan.intent.engine).memory
    # The decision that sizes memory also answers "will it start?": the start-up verdict and its arithmetic.
    sizes_memory = memory is not None and isinstance(decision.value, dict) and memory.fraction in decision.value
    if sizes_memory and plan.startup is not None and plan.startup.error is not None:
        named = [*named, *(p for p in plan.problems if p.id == plan.startup.error.id and p not in named)]
    if as_json:
        data = {"engine": dict(plan.engine), "decision": decision_dict(decision)}
        data["release_matrix"] = [release_dict(r) for r in matrix]
        data["problems"] = [problem_dict(p) for p in named]
        if sizes_memory:
            data["startup"] = startup_dict(plan.startup)
        click.echo(dumps(data))
        return
    from advisor.report import (
        decision_renderable,
        emit,
        make_console,
        problems_renderable,
        scenario_renderable,
        startup_renderable,
    )

    console = make_console()
    emit(console, scenario_renderable(plan, console, machine=True))
    console.print()
    emit(console, decision_renderable(decision, console, full=True, matrix=matrix))
    if sizes_memory:
        console.print()
        emit(console, startup_renderable(plan, console))
    if named:
        console.print()
        emit(console, problems_renderable(tuple(named), console))


# -- probe -------------------------------------------------------------------------------------------------------------


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON.")
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    type=click.Path(dir_okay=False, writable=True),
    help="Save the facts to FILE (atomically; - for stdout), to replay elsewhere with `--facts FILE`.",
)
@python_option("Probe another interpreter's packages.")
@profile_option("Export a simulated machine instead.")
@with_package_option("Override a package version.")
@click.pass_context
def probe(ctx: click.Context, as_json: bool, output: str | None, **_params) -> None:
    """Probe this machine (GPUs, topology, driver, packages, environment) and show or save the facts."""
    given = options_from_context(ctx)  # also takes --python/--profile/--with-package given before `probe`
    if output == "":
        raise AdvisorError("-o/--output needs a file name (or - for stdout)", exit_code=2)
    if output == "-":  # the facts file's text on stdout, as `--facts -` reads it
        facts = load_facts(Options(python=given.python, profile=given.profile, with_package=given.with_package))
        click.echo(facts.to_json())
        return
    if output:
        try:
            output_target(output, "facts file")  # refuse a FIFO, a device or a directory before the (slow) probe
        except FileRefused as exc:
            raise AdvisorError(str(exc)) from None
    facts = load_facts(Options(python=given.python, profile=given.profile, with_package=given.with_package))
    if output:
        try:
            facts.save(output)
        except FileRefused as exc:
            raise AdvisorError(str(exc)) from None
        except OSError as exc:
            raise AdvisorError(f"cannot write {output}: {exc.strerror or exc}; choose a writable path") from None
    if as_json:
        click.echo(dumps(facts_to_dict(facts)))
        return
    if output:
        click.echo(f"saved facts to {output}; use them with `advisor check --facts {output}`")
        return
    from advisor.report import make_console, print_facts

    print_facts(facts, make_console())


# -- profiles ----------------------------------------------------------------------------------------------------------


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print {name: summary} as JSON.")
def profiles(as_json: bool) -> None:
    """List the simulated machines usable with `--profile NAME`."""
    rows = {name: profile_summary(name) for name in list_profiles()}
    if as_json:
        click.echo(dumps(rows))
        return
    import textwrap

    from advisor.report.render import output_width

    width = max((len(n) for n in rows), default=0)
    columns = output_width(sys.stdout)  # COLUMNS, else the terminal: long summaries wrap under their own column
    for name, text in rows.items():
        lines = textwrap.wrap(text, max(20, columns - width - 2), break_on_hyphens=False) or [""]
        click.echo(f"{name:<{width}}  {lines[0]}")
        for line in lines[1:]:
            click.echo(f"{'':<{width}}  {line}")
