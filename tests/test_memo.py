"""advisor.memo: memo as functools.cache, once as functools.cached_property, without importing functools."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.memo import memo, once


def test_memo_computes_each_distinct_call_once_and_can_forget():
    calls = []

    @memo
    def square(x, y=None):
        """Doc."""
        calls.append((x, y))
        return x * x

    assert [square(3), square(3), square(4), square(3, "y"), square(3, "y")] == [9, 9, 16, 9, 9]
    assert calls == [(3, None), (4, None), (3, "y")]
    assert (square.__name__, square.__doc__, square.__wrapped__(5)) == ("square", "Doc.", 25)
    square.cache_clear()
    square(3)
    assert calls[-1] == (3, None) and len(calls) == 5


def test_memo_does_not_keep_an_exception():
    attempts = []

    @memo
    def flaky(x):
        attempts.append(x)
        if len(attempts) == 1:
            raise ValueError("first time")
        return x

    with pytest.raises(ValueError):
        flaky(1)
    assert flaky(1) == 1 and flaky(1) == 1 and attempts == [1, 1]


def test_once_is_computed_on_first_access_and_then_kept():
    class Thing:
        def __init__(self):
            self.computed = 0

        @once
        def value(self):
            """The value."""
            self.computed += 1
            return [self.computed]

    thing, other = Thing(), Thing()
    first = thing.value
    assert thing.value is first and thing.computed == 1 and other.value == [1]
    assert Thing.value.__doc__ == "The value." and isinstance(Thing.__dict__["value"], once)
    del thing.value  # forgetting it computes it again, as with cached_property
    assert thing.value == [2]


def test_importing_it_imports_no_functools():
    code = ("import sys; before = set(sys.modules); import advisor.memo;"
            "print(sorted({'functools', 'collections', 'typing'} & (set(sys.modules) - before)))")  # fmt: skip
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                            env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[1])})  # fmt: skip
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
