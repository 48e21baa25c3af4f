"""A small YAML writer for the job files (mappings, lists, strings, numbers, booleans), so writing a job needs no YAML
library. Strings are written double-quoted in JSON's escaping, which YAML reads the same; a multi-line string is
written as a literal block (``|``) so a script stays readable.
"""

from __future__ import annotations

import json
import re
from typing import Any

INDENT = "  "


def dump(documents: list[dict[str, Any]], *, header: str = "") -> str:
    """The YAML text of ``documents`` (separated by ``---``), after ``header`` comment lines."""
    parts = [_lines(doc, 0) for doc in documents]
    body = "\n---\n".join("\n".join(lines) for lines in parts)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + body + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if value is None:
        return "null"
    return quote(str(value))


def _lines(value: Any, depth: int) -> list[str]:
    pad = INDENT * depth
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            out += _entry(f"{pad}{_key(key)}:", item, depth)
        return out or [pad + "{}"]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict) and item:
                inner = _lines(item, depth + 1)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out += inner[1:]
            else:
                out += _entry(f"{pad}-", item, depth)
        return out or [pad + "[]"]
    return [pad + _scalar(value)]


def _entry(prefix: str, item: Any, depth: int) -> list[str]:
    if isinstance(item, dict) and item or isinstance(item, list) and item:
        return [prefix, *_lines(item, depth + 1)]
    if isinstance(item, dict | list):
        return [f"{prefix} {'{}' if isinstance(item, dict) else '[]'}"]
    if isinstance(item, str) and "\n" in item and _block_safe(item):
        block = INDENT * (depth + 1)
        chomp = "" if item.endswith("\n") and not item.endswith("\n\n") else "-" if not item.endswith("\n") else "+"
        return [f"{prefix} |{chomp}", *(block + line if line else "" for line in item.splitlines())]
    return [f"{prefix} {_scalar(item)}"]


# A key written plain: ASCII words such as `apiVersion` or `leaderworkerset.sigs.k8s.io/name`, never one YAML 1.1
# reads as a boolean or null.
PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
SPECIAL_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _key(key: str) -> str:
    plain = PLAIN_KEY.fullmatch(key) and key.lower() not in SPECIAL_WORDS
    return key if plain else quote(key)


def quote(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: printable characters as they are, the rest escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable() and code <= 0xFFFF and char not in "\ufeff":
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _block_safe(text: str) -> bool:
    """A literal block keeps ``text`` exactly: no trailing spaces, no leading space or tab on the first line."""
    lines = text.splitlines()
    return not text[0].isspace() and all(line == line.rstrip() and _ordinary(line) for line in lines)


def _ordinary(line: str) -> bool:
    """Printable ASCII only: what a script holds, and what a literal block keeps byte for byte."""
    return all(" " <= char <= "~" for char in line)
