"""The job files' YAML, written by PyYAML: keys in the order the writers build them, and a multi-line string (a node
script) as a literal block so it stays readable."""

from __future__ import annotations

from typing import Any

import yaml


class _JobDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as literal blocks (``|``); PyYAML falls back to quoting the ones a
    literal block cannot hold exactly (trailing spaces, control characters)."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_JobDumper.add_representer(str, _string)


def dump(documents: list[dict[str, Any]], *, header: str = "") -> str:
    """The YAML text of ``documents`` (separated by ``---``), after ``header`` comment lines."""
    body = yaml.dump_all(documents, Dumper=_JobDumper, sort_keys=False, width=4096,
                         default_flow_style=False)  # fmt: skip
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + body
