"""The option strings each SGLang release's launch_server accepts (cli_flags.json, written from the releases' wheels by
`python -m conformance sglang-flags`): the static reader of server_args.py, and the stored lists."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from advisor.rules.sglang import arguments, flags
from advisor.rules.sglang import releases as sglang_releases
from conformance.sglang.flags import extract

SERVER_ARGS = textwrap.dedent("""
    import argparse

    PREFIX = "--lora"

    class ServerArgs:
        @staticmethod
        def add_cli_args(parser: argparse.ArgumentParser):
            parser.add_argument("--model-path", "--model", type=str)
            parser.add_argument("--enable-x", action=argparse.BooleanOptionalAction)
            group = parser.add_argument_group("parallel")
            group.add_argument("--tp-size", "--tensor-parallel-size", type=int)
            parser.add_argument(f"{PREFIX}-paths", nargs="*")
            add_cli_args_from_dataclass(parser, ServerArgs)

        def helper(self, parser):
            parser.add_argument("--not-in-scope")

    def prepare_server_args(argv):
        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)
        parser.add_argument("--config")
        return parser.parse_args(argv)

    def elsewhere(parser):
        parser.add_argument("--elsewhere")
""")


def test_extract_reads_literal_option_strings_in_the_parser_functions():
    read = extract(SERVER_ARGS)
    assert read.flags == {
        "-h",
        "--help",
        "--model-path",
        "--model",
        "--tp-size",
        "--tensor-parallel-size",
        "--config",
        "--enable-x",
        "--no-enable-x",
    }


def test_extract_reports_what_it_cannot_read():
    unresolved = extract(SERVER_ARGS).unresolved
    assert len(unresolved) == 2
    assert 'f"{PREFIX}-paths"' in unresolved[0]
    assert "add_cli_args_from_dataclass(parser, ServerArgs)" in unresolved[1]


def test_extract_without_add_cli_args_is_unresolved():
    assert extract("def f(parser):\n    parser.add_argument('--x')\n").unresolved == ["no ServerArgs.add_cli_args"]


STORED = json.loads(Path(flags.FLAGS_FILE).read_text())["releases"]


def test_every_modelled_release_has_its_flags():
    assert set(STORED) == set(sglang_releases.RELEASES)
    assert list(STORED) == sorted(STORED, key=lambda r: tuple(map(int, r.split("."))))


@pytest.mark.parametrize("release", sorted(STORED))
def test_stored_flags_are_sane(release):
    known = flags.known_flags(release)
    assert known is not None and sorted(known) == STORED[release]
    assert {"--tp-size", "--model-path", "--help"} <= known
    assert all(flag.startswith("-") for flag in known)
    # the arguments the advisor reads are declared by the same parser
    assert set(arguments.declared(release)) <= known


def test_unknown_release_has_no_list():
    assert flags.known_flags("0.0.1") is None
