"""The JSON schemas' lists of engines and decision states are the registry's and the rules' own: adding an engine to
advisor.rules.registry (or a state to advisor.rules.engine) without adding it to the shipped schemas fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.rules import registry
from advisor.rules.engine import STATES

SCHEMAS = Path(__file__).resolve().parent.parent / "advisor" / "schema"


def enums(node, path=()):
    """(path of keys, enum list) for every "enum" in a schema."""
    if isinstance(node, dict):
        if "enum" in node:
            yield path, node["enum"]
        for key, value in node.items():
            yield from enums(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from enums(value, (*path, index))


@pytest.mark.parametrize("name", ["plan.schema.json", "layouts.schema.json"])
def test_every_engine_enum_is_the_registry(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    found = [(path, values) for path, values in enums(schema) if "engine" in path]
    assert found, f"{name} names no engine"
    for path, values in found:
        assert tuple(values) == registry.names(), f"{name} {'/'.join(map(str, path))}: {values}"


def test_the_diff_schema_lists_the_engines_with_releases():
    schema = json.loads((SCHEMAS / "diff.schema.json").read_text(encoding="utf-8"))
    found = [values for path, values in enums(schema) if "engine" in path]
    assert found and all(tuple(values) == registry.versioned() for values in found)


@pytest.mark.parametrize("name", ["plan.schema.json", "diff.schema.json"])
def test_every_state_enum_is_the_rules_states(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    found = [values for path, values in enums(schema) if path and path[-1] == "state"]
    assert found and all(tuple(values) == STATES for values in found)


def test_a_registered_engine_missing_from_the_schema_fails(monkeypatch):
    monkeypatch.setitem(registry.ENGINES, "tpfake", "tpfake.engine")  # registered, not in the schema
    with pytest.raises(AssertionError, match="tpfake|bundled"):
        test_every_engine_enum_is_the_registry("plan.schema.json")
