"""The common options are declared once (advisor.options): click's options, the fast path's tables, Options and the
Intent it resolves to agree with that table."""

from __future__ import annotations

from dataclasses import fields

import click

from advisor import cli, fastpath, options
from advisor.context import Options
from advisor.intent import COUNT_OPTIONS, Intent


def test_options_has_one_field_per_declared_option():
    declared = [spec.field for spec in options.COMMON]
    assert len(declared) == len(set(declared))
    assert [f.name for f in fields(Options)] == [*declared, "overrides", "mode"]  # the two not set by an option


def test_the_intent_takes_its_fields_from_options():
    """advisor.context.resolve fills the Intent from the Options fields of the same names."""
    assert {f.name for f in fields(Intent)} <= {f.name for f in fields(Options)}


def test_every_command_with_the_common_options_has_click_options_built_from_the_table():
    from advisor.cli_compare import diff, layouts
    from advisor.launch import launch

    for command in (cli.main, cli.check, cli.explain, launch, layouts, diff):
        params = {p.name: p for p in command.params if isinstance(p, click.Option)}
        for spec in options.COMMON:
            param = params[spec.field]
            assert param.opts + param.secondary_opts == list(spec.flags), (command.name, spec.flag)
            assert param.help == spec.help and param.metavar == spec.metavar, (command.name, spec.flag)
            assert param.default == getattr(Options(), spec.field), (command.name, spec.flag)
            assert param.multiple == (spec.kind == options.REPEATED)
            assert param.is_flag == (spec.kind in (options.FLAG, options.SWITCH))


def test_the_fast_path_and_the_count_checks_read_the_table():
    assert fastpath.NUMBER_OPTIONS == {"--tp": "tp", "--nnodes": "nnodes", "--dp-size": "dp_size"}
    assert COUNT_OPTIONS == {"tp": "--tp", "nnodes": "--nnodes", "dp_size": "--dp-size"}
    assert fastpath.FLAGS["--no-dp-attention"] == ("dp_attention", False)
    assert set(fastpath.TEXT_OPTIONS) | set(fastpath.NUMBER_OPTIONS) | set(fastpath.REPEATED_OPTIONS) | set(
        fastpath.FLAGS) == {flag for spec in options.COMMON for flag in spec.flags} | {"--json"}  # fmt: skip
