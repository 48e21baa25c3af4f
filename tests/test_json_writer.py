"""advisor.report.data.indented_json writes exactly what json.dumps(indent=2, ensure_ascii=False) writes (it replaces
it for speed: bench_check.py): over real plans of every profile and engine, and over arbitrary JSON-like values."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.context import Options, make_plan
from advisor.probe.profiles import list_profiles
from advisor.report import plan_to_dict
from advisor.report.data import indented_json
from advisor.rules.registry import names as engine_names


def reference(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("engine", engine_names())
@pytest.mark.parametrize("profile", list_profiles())
def test_real_plans_are_written_byte_for_byte_as_json_dumps(profile, engine, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    model = None if engine == "bundled" else "Qwen/Qwen3-30B-A3B"
    data = plan_to_dict(make_plan(Options(profile=profile, engine=engine, model=model)))
    assert indented_json(data) == reference(data)


scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # every code point: controls, quotes, backslashes, non-ASCII, lone surrogates
)  # fmt: skip
keys = st.text() | st.integers() | st.floats(allow_nan=True) | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(values)
def test_any_json_value_is_written_as_json_dumps_writes_it(value):
    assert indented_json(value) == reference(value)


def test_subclasses_and_special_floats_as_json_dumps():
    class Text(str):
        pass

    class Number(int):
        def __repr__(self) -> str:
            return "not used by json"

    value = {Text("k"): [Number(3), Text("v"), math.inf, -math.inf, math.nan, -0.0, 1e300, True, False], 2.5: {}, 7: []}
    assert indented_json(value) == reference(value)


def test_what_json_cannot_write_raises_as_json_dumps():
    cyclic: list = []
    cyclic.append(cyclic)
    for value, error in (({"a": {1, 2}}, TypeError), ({(1, 2): "x"}, TypeError), (cyclic, ValueError)):
        with pytest.raises(error) as ours:
            indented_json(value)
        with pytest.raises(error) as theirs:
            reference(value)
        assert str(ours.value) == str(theirs.value)


def test_dict_subclasses_nested_tuples_and_odd_characters():
    class Mapping(dict):  # json writes a dict subclass as a dict
        pass

    value = {"m": Mapping(a=1), "t": (1, (2, ())), "s": "\u2028\x00\ud800"}
    assert indented_json(value) == reference(value)
