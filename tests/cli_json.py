"""Run an `advisor` command with --json in-process and validate its object against the schema shipped for it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from advisor.cli import main

SCHEMAS = Path(__file__).resolve().parent.parent / "advisor" / "schema"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def command_json(command: str, schema: str, *args: str) -> dict:
    """`advisor COMMAND --json ARGS`, which must exit 0 and match advisor/schema/SCHEMA."""
    result = invoke(command, "--json", *args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / schema).read_text()))
    errors = sorted(validator.iter_errors(data), key=str)
    assert not errors, errors[0]
    return data
