"""The engine arguments a person passes after `--`, checked as the release's own parser would check them.

SGLang parses its command line with argparse (ServerArgs.add_cli_args): a value outside an argument's choices, or one
that is not a number where a number is expected, stops `python -m sglang.launch_server` before anything starts, and
an argument the release does not declare does too. cli_args.json holds, per modelled release, the arguments the
advisor reads as that release's parser declares them (written from the release itself by `python -m conformance
sglang-args`), so the advisor reports such a command line as an error instead of explaining a plan SGLang would refuse.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario, finite_float, flag_values
from advisor.rules.plan_arguments import PlanArgument, plan_argument_problems
from advisor.rules.sglang import common
from advisor.rules.sglang.common import SERVER_ARGS
from advisor.rules.sglang.flags import known_flags

ARGUMENTS_FILE = Path(__file__).with_name("cli_args.json")
ERROR_ID = "sglang_argument_rejected"
MISSPELT_ID = "sglang_argument_misspelt"
# A flag this close to one the advisor knows (difflib's ratio) reads as a misspelling of it: one letter dropped, added or
# swapped in a name of 10 or more characters ("--atention-backend", "--mem-fraction-statc").
MISSPELT_CUTOFF = 0.9


@cache
def _releases() -> dict[str, dict[str, list[str] | str | dict]]:
    """cli_args.json's releases, read once."""
    return json.loads(ARGUMENTS_FILE.read_text(encoding="utf-8"))["releases"]


def declared(release: str) -> dict[str, list[str] | str | dict]:
    """The arguments of ``release`` the advisor reads: choices (a list), the value's type ("int", "float", "str"), or
    {"resolved_names": [...]} for a name the parser takes as text and resolution checks (in any case)."""
    return _releases().get(release, {})


def _is_number(value: str, kind: str) -> bool:
    """Whether ``value`` reads as ``kind``: "int", "float" (a finite one: nan and inf break SGLang's sizing) or "any"
    (what float() reads, nan and inf too)."""
    try:
        (int if kind == "int" else finite_float if kind == "float" else float)(value)
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
                kind = "a whole number" if spec == "int" else "a finite number" if _is_number(value, "any") else "a number"
                reason, fix = f"{flag} {value!r} is not {kind}", f"pass {flag} with {kind}"
            else:
                continue
            problems.append(Problem(
                ERROR_ID, "error", f"sglang v{release} refuses the engine arguments at start-up: {reason}", fix,
                f"sglang v{release}, {SERVER_ARGS} (ServerArgs.add_cli_args)",
            ))  # fmt: skip
            break
    for flag in _unknown_flags(s.overrides, release):
        problems.append(Problem(
            ERROR_ID, "error", f"sglang v{release} does not know the argument {flag}: it refuses the command line at start-up",
            _unknown_fix(flag, release), f"sglang v{release}, {SERVER_ARGS} (ServerArgs.add_cli_args)",
        ))  # fmt: skip
    if known_flags(release) is None:  # without the release's whole list, an unknown flag may be real: a warning
        problems += _misspelt(s.overrides, release)
    return problems


def _unknown_fix(flag: str, release: str) -> str:
    """How to mend an argument ``release`` refuses: the options it abbreviates ambiguously, the one it misspells, or
    dropping it."""
    listed = known_flags(release) or set(declared(release))
    longer = sorted(name for name in listed if name.startswith(flag))
    if longer:  # argparse refuses a prefix of several options as ambiguous
        return f"pass {' or '.join(longer)} instead"
    close = difflib.get_close_matches(flag, sorted(listed), n=1, cutoff=MISSPELT_CUTOFF)
    if close:
        return f"pass {close[0]} (the flag it looks like misspelt)"
    return f"drop {flag}, or pass --engine-version of a release that has it"


def _known_flags(release: str) -> set[str]:
    """Every flag the advisor knows SGLang to declare: the release's own in cli_args.json, those of any modelled release,
    the ones the command builder and the rules put on the line."""
    flags = {flag for arguments in _releases().values() for flag in arguments} | set(declared(release))
    flags |= {name for argument in PLAN_ARGUMENTS for name in argument.spellings}
    flags |= {value for name, value in vars(common).items() if name.isupper() and isinstance(value, str)
              and value.startswith("--")}
    return flags | {"--enable-dp-attention", "--nnodes", "--node-rank", "--dist-init-addr"}


def _misspelt(overrides: tuple[str, ...], release: str) -> list[Problem]:
    """sglang_argument_misspelt (a warning): a flag no modelled release declares that is one slip away from one the
    advisor knows. cli_args.json holds the arguments the advisor reads, not the release's whole list, so a flag it does
    not hold may still be real: this says which flag it looks like instead of refusing the line."""
    known = _known_flags(release)
    problems = []
    for flag in sorted({token.split("=", 1)[0] for token in overrides if token.startswith("--") and token != "--"}):
        if flag in known or len(flag) < 10:
            continue
        close = difflib.get_close_matches(flag, known, n=1, cutoff=MISSPELT_CUTOFF)
        if close:
            problems.append(Problem(
                MISSPELT_ID, "warning",
                f"{flag} is not an argument the advisor knows for sglang v{release}; it looks like {close[0]} misspelt"
                " (argparse refuses an unknown flag at start-up)",
                f"pass {close[0]}, or keep {flag} if this release declares it",
                f"sglang v{release}, {SERVER_ARGS} (ServerArgs.add_cli_args)",
            ))  # fmt: skip
    return problems


def cuda_graph_max_bs_flags(release: str) -> tuple[str, ...]:
    """The flags that set the decode CUDA-graph batch in ``release``: --cuda-graph-max-bs, joined by
    --cuda-graph-max-bs-decode in v0.5.14 and replaced by it in v0.5.20 (where the old name is ambiguous)."""
    own = declared(release)
    return tuple(flag for flag in ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode") if flag in own) or (
        "--cuda-graph-max-bs",)


def _unknown_flags(overrides: tuple[str, ...], release: str) -> list[str]:
    """The flags after -- that ``release``'s parser refuses: with its whole option list (cli_flags.json), every flag
    that is neither listed nor the prefix of exactly one listed option (argparse's allow_abbrev takes that one as the
    option); without it, the arguments of some modelled release that ``release`` does not declare."""
    given = {token.split("=", 1)[0] for token in overrides if token.startswith("--") and token != "--"}
    listed = known_flags(release)
    if listed is not None:
        return sorted(flag for flag in given if flag not in listed and sum(o.startswith(flag) for o in listed) != 1)
    own = declared(release)
    known_elsewhere = {flag for arguments in _releases().values() for flag in arguments}
    return sorted(flag for flag in given if flag in known_elsewhere and flag not in own)


# The settings the command builder (advisor/rules/sglang/command.py) puts on the line, as SGLang spells them: ServerArgs
# .add_cli_args in python/sglang/srt/server_args.py declares "--model-path", "--model"; "--tensor-parallel-size",
# "--tp-size"; "--data-parallel-size", "--dp-size" (one destination each, the last value wins).
TP_FLAGS = ("--tensor-parallel-size", "--tp-size")
DP_FLAGS = ("--data-parallel-size", "--dp-size")
PLAN_ARGUMENTS = (
    PlanArgument("model path", "--model", ("--model-path", "--model"), lambda intent: intent.model),
    PlanArgument("tensor-parallel size", "--tp", TP_FLAGS, lambda intent: intent.tp, int),
    PlanArgument("data-parallel size", "--dp-size", DP_FLAGS, lambda intent: intent.dp_size, int),
)  # fmt: skip
DP_ATTENTION_ID = "sglang_dp_attention_tp_indivisible"


def plan_problems(s: Scenario) -> list[Problem]:
    """The engine arguments after -- that set what the plan sets (advisor.rules.plan_arguments), and DP attention with a
    dp size that does not divide tp, which ServerArgs._handle_data_parallelism asserts (``assert self.tp_size %
    self.dp_size == 0``, no message: SGLang stops with a bare AssertionError)."""
    problems = plan_argument_problems(s.intent, PLAN_ARGUMENTS, "sglang", f"sglang, {SERVER_ARGS} (ServerArgs.add_cli_args)")
    dp = s.intent.dp_size
    if s.intent.dp_attention and dp > 1 and s.tp % dp:
        divisors = [d for d in range(2, s.tp + 1) if s.tp % d == 0]
        problems.append(Problem(
            DP_ATTENTION_ID, "error",
            f"DP attention with --dp-size {dp} and --tp {s.tp}: SGLang asserts tp_size % dp_size == 0 at start-up"
            " and stops with an AssertionError",
            f"pass a --dp-size that divides tp {s.tp} ({', '.join(map(str, divisors)) or 'none above 1: use --tp 2 or more'})",
            f"sglang, {SERVER_ARGS} (ServerArgs._handle_data_parallelism)",
        ))  # fmt: skip
    return problems
