"""The `advisor` entry point. `advisor check` with plain options, and bare `advisor` with plain options on a terminal
(the app), run here without importing click; every other command line (other commands, `--help`, a value click would
reject, shell completion, ...) goes to the click CLI in advisor.cli.

Why: importing click costs about as much as starting Python twice over, and `advisor check --json` is meant to be cheap
enough to call from scripts (tests/benchmarks/bench_check.py). The fast path accepts only command lines it can parse
exactly as click does and hands anything else to click, so the output, the messages and the exit codes are the same
(tests/test_fastpath.py runs both over many command lines and compares the bytes). Both paths report errors
through advisor.errors, one way.
"""

from __future__ import annotations

import os
import sys

from advisor import interactive
from advisor.options import COMMON, ENGINE, FLAG, NUMBER, PATH, REPEATED, SWITCH, TEXT

# `advisor check` options -> Options fields, by how they take values: the common options as advisor.options declares
# them (advisor.cli builds click's from the same table), plus check's own --json.
TEXT_OPTIONS = {o.flag: o.field for o in COMMON if o.kind in (TEXT, PATH, ENGINE)}
NUMBER_OPTIONS = {o.flag: o.field for o in COMMON if o.kind == NUMBER}  # whole numbers >= 1
PATH_OPTIONS = {o.field for o in COMMON if o.kind == PATH}  # click.Path(dir_okay=False): click rejects a directory or an unreadable file
ENGINE_OPTIONS = {o.field for o in COMMON if o.kind == ENGINE}  # a registered engine; click reports any other name
REPEATED_OPTIONS = {o.flag: o.field for o in COMMON if o.kind == REPEATED}
FLAGS = {
    "--json": ("as_json", True),
    **{o.flag: (o.field, True) for o in COMMON if o.kind in (FLAG, SWITCH)},
    **{o.off: (o.field, False) for o in COMMON if o.off},
}


def main() -> None:
    argv = sys.argv[1:]
    if not (_completing() or _ascii_streams()):
        params = parse_check(argv)
        if params is not None:
            run_check(params)
            return
        params = parse_app(argv) if interactive.interactive_terminal() else None
        if params is not None:
            run_app(params)
            return
    from advisor.cli import main as click_main

    click_main()


def parse_check(argv: list[str]) -> dict | None:
    """The parameters of an `advisor check ...` command line (as click would give them, less the defaults), or None
    when the command line is anything else or something click would have to judge or reject."""
    if not argv or argv[0] != "check":
        return None
    return _parse_options(argv[1:], checking=True)


def parse_app(argv: list[str]) -> dict | None:
    """The parameters of a bare `advisor [common options]` command line, or None for anything else (a command,
    `--version`, ...) or something click would have to judge or reject."""
    return _parse_options(argv, checking=False)


def _parse_options(args: list[str], *, checking: bool) -> dict | None:
    """`check` takes --json and engine arguments after `--`; bare `advisor` takes neither (click reads what follows
    `--` as a command)."""
    params: dict = {"with_package": [], "overrides": ()}
    if checking:
        params["as_json"] = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            if not checking:
                return None
            params["overrides"] = tuple(args[i:])
            break
        name, has_value, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "--json" and not checking:
            return None
        if name in FLAGS:
            if has_value:
                return None
            field, flag_value = FLAGS[name]
            params[field] = flag_value
            continue
        if name not in TEXT_OPTIONS and name not in NUMBER_OPTIONS and name not in REPEATED_OPTIONS:
            return None  # --help, an unknown option, a positional argument, a short option: click's to judge
        if not has_value:
            if i >= len(args) or args[i].startswith("-"):
                return None  # click would take "-x" as the value or report the missing value
            value = args[i]
            i += 1
        if name in REPEATED_OPTIONS:
            params[REPEATED_OPTIONS[name]].append(value)
        elif name in NUMBER_OPTIONS:
            number = _whole_number(value)
            if number is None:
                return None
            params[NUMBER_OPTIONS[name]] = number
        else:
            field = TEXT_OPTIONS[name]
            if (field in ENGINE_OPTIONS and value not in _engines()) or (field in PATH_OPTIONS and not _plain_path(value)):
                return None
            params[field] = value
    params["with_package"] = tuple(params["with_package"])
    return params


def run_check(params: dict) -> None:
    """What `advisor check` does under click (advisor.cli.check and AdvisorGroup.main), without click."""
    from advisor.context import AdvisorError, Options, exit_code_for, make_plan

    options = Options.from_params(params)
    try:
        plan = make_plan(options)
        if params["as_json"]:
            from advisor.report import dumps, plan_to_dict

            sys.stdout.write(dumps(plan_to_dict(plan)) + "\n")
        else:
            from advisor.report import make_console, print_plan

            print_plan(plan, make_console(), strict=options.strict)
        code = exit_code_for(plan, options.strict)
        sys.stdout.flush()  # a full device or a closed pipe must fail here, not in the interpreter's final flush
    except AdvisorError as exc:
        from advisor.errors import fail  # here, not above: a run without errors does without the module

        fail(exc.message, exc.exit_code)
    except OSError as exc:
        from advisor.errors import output_failed

        output_failed(exc)
    sys.exit(code)


def run_app(params: dict) -> None:
    """What bare `advisor` does on a terminal under click (advisor.cli.main and AdvisorGroup.main), without click."""
    from advisor.context import AdvisorError, Options

    try:
        interactive.open_app(Options.from_params(params))
        sys.stdout.flush()
    except AdvisorError as exc:
        from advisor.errors import fail

        fail(exc.message, exc.exit_code)
    except (EOFError, KeyboardInterrupt):  # click turns these into Abort: a new line, then AdvisorGroup's message
        sys.stderr.write("\n")
        from advisor.errors import fail

        fail("aborted", 130)
    except OSError as exc:
        from advisor.errors import output_failed

        output_failed(exc)
    sys.exit(0)


def _whole_number(value: str) -> int | None:
    """advisor.cli.PositiveInt's reading of a value: a whole number >= 1, else None."""
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if number >= 1 else None


def _engines() -> tuple[str, ...]:
    from advisor.rules.registry import names

    return names()


def _plain_path(value: str) -> bool:
    """True where click.Path(dir_okay=False) takes the value as it is: a path that does not exist, or a readable
    non-directory."""
    import stat

    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True
    return not stat.S_ISDIR(mode) and os.access(value, os.R_OK)


def _completing() -> bool:
    """Shell completion (click reads `_ADVISOR_COMPLETE`, named after the program) is click's."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def _ascii_streams() -> bool:
    """click writes UTF-8 to an ASCII-configured stream (PYTHONIOENCODING=ascii); leave that case to click."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            if codecs.lookup(encoding).name == "ascii":
                return True
        except LookupError:
            return True
    return False
