"""The engine arguments a person passes after `--`, checked as the release's own parser would check them.

SGLang parses its command line with argparse (ServerArgs.add_cli_args): a value outside an argument's choices, or one
that is not a number where a number is expected, stops `python -m sglang.launch_server` before anything starts, and
an argument the release does not declare does too. cli_args.json holds, per modelled release, the arguments the
advisor reads as that release's parser declares them (written from the release itself by `python -m conformance
sglang-args`), so the advisor reports such a command line as an error instead of explaining a plan SGLang would refuse.
"""

from __future__ import annotations

import json
import os
from functools import cache

from advisor.rules.engine import Problem, Scenario, flag_values
from advisor.rules.sglang.common import SERVER_ARGS

# A str, not a pathlib.Path: importing pathlib would cost `advisor check` more than reading the file.
ARGUMENTS_FILE = os.path.join(os.path.dirname(__file__), "cli_args.json")
ERROR_ID = "sglang_argument_rejected"


@cache
def _releases() -> dict[str, dict[str, list[str] | str | dict]]:
    """cli_args.json's releases, read once."""
    with open(ARGUMENTS_FILE) as file:  # the locale encoding, as Path.read_text() read it
        return json.loads(file.read())["releases"]


def declared(release: str) -> dict[str, list[str] | str | dict]:
    """The arguments of ``release`` the advisor reads: choices (a list), the value's type ("int", "float", "str"), or
    {"resolved_names": [...]} for a name the parser takes as text and resolution checks (in any case)."""
    return _releases().get(release, {})


def _is_number(value: str, kind: str) -> bool:
    try:
        (int if kind == "int" else float)(value)
    except ValueError:
        return False
    return True


def argument_problems(s: Scenario, release: str) -> list[Problem]:
    """sglang_argument_rejected: an engine argument this release's parser refuses (one problem per argument)."""
    arguments = declared(release)
    if not arguments or not s.overrides:
        return []
    problems = []
    for flag, spec in arguments.items():
        for value in flag_values(s.overrides, flag, next_flag="--"):  # argparse: "--x" is the next flag, "-1" a value
            if value is None:
                reason, fix = f"{flag} needs a value", f"pass {flag} VALUE"
            elif isinstance(spec, list) and value not in spec:
                reason, fix = f"{flag} {value!r} is not one of its choices", f"choose one of {', '.join(spec)}"
            elif isinstance(spec, dict) and value.upper() not in spec["resolved_names"]:  # refused when resolved
                names = spec["resolved_names"]
                reason, fix = f"{flag} {value!r} is not a name it knows", f"choose one of {', '.join(names)}"
            elif spec in ("int", "float") and not _is_number(value, spec):
                kind = "a whole number" if spec == "int" else "a number"
                reason, fix = f"{flag} {value!r} is not {kind}", f"pass {flag} with {kind}"
            else:
                continue
            problems.append(Problem(
                ERROR_ID, "error", f"sglang v{release} refuses the engine arguments at start-up: {reason}", fix,
                f"sglang v{release}, {SERVER_ARGS} (ServerArgs.add_cli_args)",
            ))  # fmt: skip
            break
    for flag in _unknown_flags(s.overrides, release):
        # argparse takes an unknown flag that starts more than one declared name as ambiguous, and refuses it too
        longer = [name for name in arguments if name.startswith(flag)]
        fix = f"pass {' or '.join(longer)} instead" if longer else f"drop {flag}, or pass --engine-version of a release that has it"
        problems.append(Problem(
            ERROR_ID, "error", f"sglang v{release} does not know the argument {flag}: it refuses the command line at start-up",
            fix, f"sglang v{release}, {SERVER_ARGS} (ServerArgs.add_cli_args)",
        ))  # fmt: skip
    return problems


def cuda_graph_max_bs_flags(release: str) -> tuple[str, ...]:
    """The flags that set the decode CUDA-graph batch in ``release``: --cuda-graph-max-bs, joined by
    --cuda-graph-max-bs-decode in v0.5.14 and replaced by it in v0.5.20 (where the old name is ambiguous)."""
    own = declared(release)
    return tuple(flag for flag in ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode") if flag in own) or (
        "--cuda-graph-max-bs",)


def _unknown_flags(overrides: tuple[str, ...], release: str) -> list[str]:
    """The arguments of some modelled release that ``release`` does not declare (e.g. a flag added later)."""
    own = declared(release)
    known_elsewhere = {flag for arguments in _releases().values() for flag in arguments}
    given = {token.split("=", 1)[0] for token in overrides if token.startswith("--")}
    return sorted(flag for flag in given if flag in known_elsewhere and flag not in own)
