"""JSON text read without importing the json package when the text is well formed.

json's decoder module imports re, and re imports enum, functools' friends and its compiler: loading them was about a
fifth of `advisor check` (tests/benchmarks/bench_check.py), which reads a simulated machine and a catalog entry and
needs no regular expression. loads() runs the scanner json.loads itself runs (CPython's C accelerator,
_json.make_scanner, set up as json.JSONDecoder sets it up) and skips JSON whitespace around it as json.loads does.
Text the scanner does not read as exactly one document goes to json.loads, so every error (its type, message, line and
column) is json's own; an interpreter without the accelerator uses json.loads for everything.
tests/test_jsontext.py holds loads to json.loads over generated documents and malformed text.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which costs `advisor check` (bench_check.py)
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE: [ \t\n\r]*
CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}  # json.decoder._CONSTANTS


class _Decoder:
    """The attributes _json.make_scanner reads from a json.JSONDecoder: those of json.loads' default decoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    def __init__(self, parse_constant: Any) -> None:
        self.parse_constant = parse_constant or CONSTANTS.__getitem__
        self.memo: dict = {}


def loads(text: str, *, parse_constant: Any = None) -> Any:
    """``json.loads(text, parse_constant=parse_constant)``: the same value, and the same exception when it raises."""
    try:
        from _json import make_scanner
    except ImportError:
        make_scanner = None
    if make_scanner is not None and isinstance(text, str):
        scan = make_scanner(_Decoder(parse_constant))
        start = _skip_whitespace(text, 0)
        try:
            value, end = scan(text, start)
        except (StopIteration, SystemError):  # json.loads says what is wrong, in its words
            # StopIteration: no value where one must start. SystemError: the scanner reports malformed text with
            # json.decoder's JSONDecodeError, which it expects loaded (it is, whenever json made the scanner).
            end = -1
        if end != -1 and _skip_whitespace(text, end) == len(text):
            return value
    import json

    return json.loads(text, parse_constant=parse_constant)


def why_unreadable(exc: BaseException) -> tuple[bool, str]:
    """(malformed, why) for what loads raised: (True, "line L, column C: message") for text that is not JSON; (False,
    the reason) for JSON no caller can use (a constant parse_constant refused, an integer of thousands of digits,
    nesting deeper than the interpreter's recursion limit)."""
    from json import JSONDecodeError  # only on this error path (see the module's docstring)

    if isinstance(exc, JSONDecodeError):
        return True, f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    return False, "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _skip_whitespace(text: str, index: int) -> int:
    while index < len(text) and text[index] in WHITESPACE:
        index += 1
    return index
