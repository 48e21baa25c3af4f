"""Every option string each modelled SGLang release's `python -m sglang.launch_server` accepts (cli_flags.json).

argparse exits with "unrecognized arguments" on any other option. cli_flags.json is written from the releases' own
wheels by `python -m conformance sglang-flags` (sglang/srt/server_args.py: ServerArgs.add_cli_args). argparse also
takes an unambiguous prefix of a long option (allow_abbrev), so a flag outside the list is refused only when it is not
the prefix of exactly one listed option.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import Release, spell_out_abbreviations

FLAGS_FILE = Path(__file__).with_name("cli_flags.json")


@cache
def _releases() -> dict[str, list[str]]:
    return json.loads(FLAGS_FILE.read_text(encoding="utf-8"))["releases"]


@cache
def known_flags(release: str) -> frozenset[str] | None:
    """The option strings ``release``'s launch_server parser declares (with -h/--help); None for a release with no
    list."""
    flags = _releases().get(release)
    return None if flags is None else frozenset(flags)


def spell_out(tokens: tuple[str, ...], release: Release) -> tuple[str, ...]:
    """The arguments after -- as ``release``'s launch_server parser reads them: an abbreviation (``--mem-frac 0.8``)
    as the option it stands for. A release newer than the modelled ones is read as given: its own list may differ."""
    return tokens if release.newer else spell_out_abbreviations(tokens, known_flags(release.rules))
