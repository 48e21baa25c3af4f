"""What went wrong reading a JSON input (a facts file, a model's config.json), in one line for the error message."""

from __future__ import annotations

import json


def why_unreadable(exc: ValueError | RecursionError) -> tuple[bool, str]:
    """(malformed, why) for what json.loads raised: (True, "line L, column C: message") for text that is not JSON;
    (False, the reason) for JSON no caller can use (a constant parse_constant refused, an integer of thousands of
    digits, nesting deeper than the interpreter's recursion limit)."""
    if isinstance(exc, json.JSONDecodeError):
        return True, f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    return False, "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
