"""The common options are declared once (advisor.options): click's options, Options and the Intent it resolves to agree
with that table."""

from __future__ import annotations

from dataclasses import fields

import click

from advisor import cli, options
from advisor.context import Options
from advisor.intent import COUNT_OPTIONS, Intent
from advisor.rules import registry


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


def test_each_kind_of_option_takes_its_values_as_declared():
    """How `check` reads each option: whole numbers >= 1, files that are not directories, a registered engine."""
    params = {p.name: p for p in cli.check.params if isinstance(p, click.Option)}
    for spec in options.COMMON:
        param = params[spec.field]
        assert isinstance(param.type, cli.PositiveInt) == (spec.kind == options.NUMBER), spec.flag
        assert isinstance(param.type, click.Path) == (spec.kind == options.PATH), spec.flag
        if spec.kind == options.ENGINE:
            assert tuple(param.type.choices) == registry.names()
    assert {n for p in params.values() for n in p.opts + p.secondary_opts} - {"-h", "--help"} == {
        flag for spec in options.COMMON for flag in spec.flags} | {"--json"}  # fmt: skip


def test_the_count_checks_read_the_table():
    assert COUNT_OPTIONS == {"tp": "--tp", "nnodes": "--nnodes", "dp_size": "--dp-size"}
