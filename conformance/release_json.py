"""The per-release golden files the flags commands write (advisor/rules/<engine>/cli_flags.json): read what is stored,
put one release's result in, and write it back with the releases in version order, one a line, so a new release shows
in `git diff` as the lines it adds or changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from packaging.version import Version


def load(out: Path, about: str) -> dict[str, Any]:
    """The stored file (a new one when there is none), its ``about`` set to this harness's."""
    data = json.loads(out.read_text()) if out.exists() else {"releases": {}}
    data["about"] = about
    return data


def store(out: Path, data: dict[str, Any], release: str, value: Any) -> None:
    """``value`` as ``release``'s entry, written at once (a later release's failure keeps the ones done)."""
    data["releases"][release] = value
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda item: Version(item[0])))
    lines = ",\n".join(f"  {json.dumps(r)}: {json.dumps(v)}" for r, v in data["releases"].items())
    out.write_text(f'{{\n "about": {json.dumps(data["about"])},\n "releases": {{\n{lines}\n }}\n}}\n')
