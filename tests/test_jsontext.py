"""advisor.jsontext.loads is json.loads: the same values for every document, the same errors for everything else."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.jsontext import loads

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
SPACE = st.text(alphabet=" \t\n\r", max_size=3)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, SPACE, SPACE, st.booleans(), st.sampled_from([None, 2]))
def test_the_same_values_as_json_loads(value, before, after, ascii_only, indent):
    text = before + json.dumps(value, ensure_ascii=ascii_only, indent=indent) + after
    assert loads(text) == json.loads(text)


def outcome(read, text, **kwargs):
    try:
        return ("value", repr(read(text, **kwargs)))
    except Exception as exc:  # noqa: BLE001  (the comparison is the point)
        return (type(exc).__name__, str(exc), getattr(exc, "pos", None), getattr(exc, "lineno", None))


MALFORMED = ["", " ", "{", "[1,]", '{"a" 1}', "[1] [2]", "1 x", "\ufeff{}", "nul", '"\\x"', '"a\nb"', "01", "1.", "-",
             "[" * 5 + "]" * 4, "{} extra", '{"a": 1,}', "tru", "NaN", "[Infinity, -Infinity]", "\u00a0{}", "{}\u00a0",
             "1" * 5000, "[" * 100_000, '{"a": ' * 100_000, '"\ud800"', "1e999", "-0", "\x00"]  # fmt: skip


@pytest.mark.parametrize("text", MALFORMED)
def test_the_same_outcome_as_json_loads_for_malformed_text(text):
    assert outcome(loads, text) == outcome(json.loads, text)


@given(st.text(max_size=30))
def test_the_same_outcome_as_json_loads_for_any_text(text):
    assert outcome(loads, text) == outcome(json.loads, text)


def test_constants_and_parse_constant_as_json_loads():
    assert math.isnan(loads("NaN")) and loads("[Infinity, -Infinity]") == [math.inf, -math.inf]

    def refuse(name):
        raise ValueError(f"{name} refused")

    assert outcome(loads, "[1, NaN]", parse_constant=refuse) == outcome(json.loads, "[1, NaN]", parse_constant=refuse)
    assert outcome(loads, "[[[[" * 50_000, parse_constant=refuse)[0] == "RecursionError"


def test_well_formed_text_is_read_without_importing_json():
    code = ("import sys; before = set(sys.modules); from advisor.jsontext import loads;"
            "value = loads(' {\"a\": [1, 2.5, null]} ');"
            "print(value, sorted({'json', 'json.decoder', 're'} & (set(sys.modules) - before)))")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "{'a': [1, 2.5, None]} []", result.stdout + result.stderr


@pytest.mark.parametrize("text", ["{", "[1,]", '{"a" 1}', '"\\x"', "[1] [2]", ""])
def test_malformed_text_raises_jsons_error_in_a_process_that_never_imported_json(text):
    # The C scanner raises JSONDecodeError through json.decoder, taken from sys.modules: before json is imported, it
    # fails with a SystemError instead; loads must still raise json's own error.
    code = (
        "import sys\n"
        "from advisor.jsontext import loads\n"
        f"try:\n    loads({text!r})\n"
        "except Exception as exc:\n    print(type(exc).__module__, type(exc).__name__, exc)\n"
    )
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                            env={"PYTHONPATH": root})  # fmt: skip
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        expected = f"json.decoder JSONDecodeError {exc}"
    assert result.stdout.strip() == expected, result.stdout + result.stderr
