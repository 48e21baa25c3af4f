"""A small YAML writer for the job files (mappings, lists, strings, numbers, booleans), so writing a job needs no YAML
library. Strings are written double-quoted in JSON's escaping, which YAML reads the same; a multi-line string is
written as a literal block (``|``) so a script stays readable.
"""

from __future__ import annotations

import json
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
    return json.dumps(str(value), ensure_ascii=False)


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


def _key(key: str) -> str:
    plain = key.replace("-", "").replace("_", "").replace(".", "").replace("/", "").isalnum()
    return key if plain and not key[0].isdigit() else json.dumps(key)


def _block_safe(text: str) -> bool:
    """A literal block keeps ``text`` exactly: no trailing spaces, no leading space or tab on the first line."""
    lines = text.splitlines()
    return not text[0].isspace() and all(line == line.rstrip() and "\t" not in line for line in lines)
