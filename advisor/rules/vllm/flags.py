"""Every option string each modelled vLLM release's `vllm serve` accepts (cli_flags.json), and the flags after -- it
refuses: vllm_argument_rejected.

cli_flags.json is written by `python -m conformance vllm-flags`, which builds each release's own parser
(make_arg_parser(FlexibleArgumentParser()), vllm/entrypoints/openai/cli_args.py). No release sets allow_abbrev, so
argparse takes an unambiguous prefix of a long option; FlexibleArgumentParser.parse_args (vllm/utils/argparse_utils.py)
first turns underscores into dashes in a flag's name up to its first "." and reads ``--option.key=value`` as a field of
the JSON option ``--option``. Single-dash flags (-O3, -tp) are not checked.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

from advisor.rules.engine import (
    Problem,
    Release,
    Scenario,
    flag_values,
    long_option,
    spell_out_abbreviations,
)
from advisor.rules.vllm.memory import block_size, utilization

FLAGS_FILE = Path(__file__).with_name("cli_flags.json")
ERROR_ID = "vllm_argument_rejected"
SOURCE = "vllm/entrypoints/openai/cli_args.py (make_arg_parser), vllm/utils/argparse_utils.py (FlexibleArgumentParser)"


@cache
def _releases() -> dict[str, dict]:
    return json.loads(FLAGS_FILE.read_text(encoding="utf-8"))["releases"]


@cache
def known_flags(release: str) -> frozenset[str] | None:
    """The option strings ``release``'s serve parser declares; None for a release with no list."""
    entry = _releases().get(release)
    return None if entry is None else frozenset(entry["options"])


def _dashed(token: str) -> str:
    """FlexibleArgumentParser's renaming: underscores to dashes in the name, up to the first "." (and "=")."""
    if not token.startswith("--"):
        return token
    name, eq, value = token.partition("=")
    head, dot, tail = name[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail + eq + value


def spell_out(tokens: tuple[str, ...], release: Release) -> tuple[str, ...]:
    """The arguments after -- as ``release``'s serve parser reads them: --under_scores as --dashes, an abbreviation as
    its option (a release newer than the modelled ones: only the renaming, its own list may differ)."""
    dashed = tuple(_dashed(t) for t in tokens)
    options = None if release.newer else known_flags(release.rules)
    out = []
    for token in spell_out_abbreviations(dashed, options):
        name, dot, rest = token.partition(".")
        if dot and options and token.startswith("--") and "=" not in name:
            token = (long_option(name, options) or name) + dot + rest
        out.append(token)
    return tuple(out)


def rejected(s: Scenario, release: Release) -> list[Problem]:
    """vllm_argument_rejected: a flag after -- the release's serve parser does not declare (nor abbreviates alone)."""
    options = None if release.newer else known_flags(release.rules)
    if not options:
        return []
    problems = []
    for token in s.overrides:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        flag = _dashed(token).split("=", 1)[0].split(".", 1)[0]
        if long_option(flag, options) is not None:
            continue
        longer = sorted(o for o in options if o.startswith(flag))
        close = difflib.get_close_matches(flag, sorted(options), n=1, cutoff=0.8)
        fix = (f"pass {' or '.join(longer)} instead" if longer else f"pass {close[0]} (the flag it looks like misspelt)"
               if close else f"drop {flag}, or pass --engine-version of a release that has it")  # fmt: skip
        problems.append(Problem(
            ERROR_ID, "error", f"vllm v{release.rules} does not know the argument {flag}: `vllm serve` refuses the"
            " command line at start-up", fix, f"vllm v{release.rules}, {SOURCE}",
        ))  # fmt: skip
    return problems + rejected_values(s, release)


def _max_model_len(raw: str) -> int:
    from advisor.rules.vllm.startup import parse_max_model_len  # the one reading of it, beside the arithmetic

    if parse_max_model_len(raw) is None:
        raise ValueError(raw)
    return 0


# The numbers the start-up model reads from after --, each as the release reads it: argparse's type (int; float, then
# CacheConfig's range for the utilization) and --max-model-len's human-readable form.
NUMBERS: tuple[tuple[str, Callable[[str], object], str], ...] = (
    ("--gpu-memory-utilization", utilization, "a number above 0 and at most 1, e.g. 0.9"),
    ("--max-model-len", _max_model_len, "a whole number of tokens, e.g. 32768 or 32k, or auto"),
    ("--max-num-seqs", int, "a whole number"),
    ("--max-num-batched-tokens", int, "a whole number"),
    ("--block-size", block_size, "a whole number above 0, e.g. 16"),
)


def rejected_values(s: Scenario, release: Release) -> list[Problem]:
    """vllm_argument_rejected: a value of one of NUMBERS `vllm serve` refuses (one problem per flag)."""
    problems = []
    for flag, parse, wanted in NUMBERS:
        for value in flag_values(s.overrides, flag, next_flag="--"):
            try:
                if value is not None:
                    parse(value)
                    continue
                reason = f"{flag} needs a value"
            except (ValueError, OverflowError):
                reason = f"{flag} {value!r} is not {wanted.split(',')[0]}"
            problems.append(Problem(ERROR_ID, "error", f"vllm v{release.rules} refuses the engine arguments at start-up:"
                                    f" {reason}", f"pass {flag} with {wanted}", f"vllm v{release.rules}, {SOURCE}"))  # fmt: skip
            break
    return problems
