"""A Plan as the stable JSON object of `advisor check --json`: the schema-bound dicts (advisor/schema/plan.schema.json).

Cheap to import (advisor.records, launcher.shellquote and the C string escaper of json; json itself, re and shlex
only where a rare path needs them): `advisor check --json` must stay fast (advisor.jsontext says why). The object's shape is
docs/architecture.md "Contracts" and the schema: extend it, never rename a key.
"""

from __future__ import annotations

import sys

from advisor.records import is_record
from launcher import shellquote

try:  # the C string escaper json.dumps uses with ensure_ascii=False (json.encoder would import re)
    from _json import encode_basestring
except ImportError:  # an interpreter without json's C accelerator
    from json.encoder import encode_basestring

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which costs `advisor check` (bench_check.py)
if TYPE_CHECKING:
    from typing import Any

    from advisor.facts import Facts
    from advisor.plan import Plan
    from advisor.rules.engine import ConditionResult, Decision, Problem, ReleaseOutcome

# Version of the JSON object `advisor check --json` prints (not the Facts schema inside it).
PLAN_SCHEMA_VERSION = 1

SEVERITIES = ("error", "warning", "info")


def jsonable(value: Any) -> Any:
    """Observed/expected values and decision values as JSON: tuples and sets become lists, dataclasses objects."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=str)
    if is_record(value):  # records.asdict's dict of the fields, converted in the same pass
        return {name: jsonable(value.__dict__[name]) for name in type(value).__record_names__}
    dataclasses = sys.modules.get("dataclasses")  # an instance of a plain dataclass means the module is loaded
    if dataclasses is not None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return str(value)


def condition_dict(c: ConditionResult) -> dict[str, Any]:
    return {
        "id": c.id,
        "text": c.text,
        "ok": c.ok,
        "observed": jsonable(c.observed),
        "expected": jsonable(c.expected),
        "why": c.why,
        "fix": c.fix,
    }


def decision_dict(d: Decision) -> dict[str, Any]:
    source = None
    if d.source is not None:
        source = {"release": d.source.release, "file": d.source.file, "ref": d.source.ref, "text": str(d.source)}
    return {
        "id": d.id,
        "title": d.title,
        "state": d.state,
        "enabled": d.enabled,
        "value": jsonable(d.value),
        "conditions": [condition_dict(c) for c in d.conditions],
        "flags": list(d.flags),
        "source": source,
        "notes": list(d.notes),
        "settings": {setting.name: jsonable(setting.value) for setting in d.settings},
    }


def problem_dict(p: Problem) -> dict[str, Any]:
    return {"id": p.id, "severity": p.severity, "message": p.message, "fix": p.fix, "source": p.source,
            "packages": list(p.packages)}  # fmt: skip


def release_dict(r: ReleaseOutcome) -> dict[str, Any]:
    return {"release": r.release, "enabled": r.enabled, "failed_conditions": list(r.failed_conditions)}


def problems_named_by(decision: Decision, problems: tuple[Problem, ...]) -> list[Problem]:
    """The problems a decision's notes point at by id ("see problem flashinfer_version_mismatch"), for `explain`."""
    import re  # here: only `explain` asks (advisor.jsontext says why re is kept off the check path)

    words = set(re.findall(r"[a-z0-9_]+", " ".join(decision.notes)))
    return [p for p in problems if p.id in words]


def summary(plan: Plan) -> dict[str, int]:
    counts = {s: 0 for s in SEVERITIES}
    for p in plan.problems:
        counts[p.severity] = counts.get(p.severity, 0) + 1
    return {"errors": counts["error"], "warnings": counts["warning"], "info": counts["info"]}


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The `advisor check --json` object (docs/architecture.md, "Contracts")."""
    return {
        "schema_version": PLAN_SCHEMA_VERSION,
        "facts": facts_to_dict(plan.facts),
        "intent": jsonable(plan.intent),
        "model": jsonable(plan.model) if plan.model is not None else None,
        "engine": dict(plan.engine),
        "decisions": [decision_dict(d) for d in plan.decisions],
        "problems": [problem_dict(p) for p in plan.problems],
        "flags": list(plan.flags),
        "argv": list(plan.argv),
        "command": shellquote.join(plan.argv),
        "release_matrix": [release_dict(r) for r in plan.release_matrix],
        "summary": summary(plan),
    }


def facts_to_dict(facts: Facts) -> dict[str, Any]:
    """jsonable(facts.to_dict()), read from the record in one pass (Facts.to_dict is its asdict: test_report.py)."""
    return jsonable(facts)


def dumps(data: dict[str, Any]) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False)``, then :func:`advisor.sanitize.clean_json`."""
    from advisor.sanitize import clean_json

    return clean_json(indented_json(data))


# -- json.dumps(indent=2, ensure_ascii=False), faster ----------------------------------------------------------------
# Python 3.11's json writes indented output with its pure-Python encoder only (the C encoder cannot indent), a
# generator per container: for a plan that is a noticeable part of `advisor check --json` (bench_check.py). This writes
# the same bytes with one recursive function over the types a plan holds (str, int, float, bool, None, list, tuple,
# dict), spelling each scalar as that encoder does (the C string escaper, int.__repr__, float.__repr__, NaN/Infinity);
# anything else goes to json.dumps, which writes it or raises its own error. tests/test_json_writer.py compares the two.

_INFINITY = float("inf")


class _NotPlain(Exception):
    """A value (or dict key) of a type the writer leaves to json.dumps."""


def indented_json(data: Any) -> str:
    """Exactly ``json.dumps(data, indent=2, ensure_ascii=False)``."""
    parts: list[str] = []
    try:
        _write(data, "\n", parts)
    except (_NotPlain, RecursionError):  # json.dumps writes what it can, and raises its own error otherwise
        import json

        return json.dumps(data, indent=2, ensure_ascii=False)
    return "".join(parts)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: Any) -> str:
    """A dict key as json writes it: text as it is, numbers, true/false/null spelled out."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise _NotPlain


def _write(value: Any, newline: str, parts: list[str]) -> None:
    """Append ``value`` to ``parts``; ``newline`` is a line break plus the indentation of the line ``value`` is on."""
    if isinstance(value, str):
        parts.append(encode_basestring(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            parts.append(separator)
            separator = "," + inner
            _write(item, inner, parts)
        parts.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            parts.append(separator)
            separator = "," + inner
            parts.append(encode_basestring(_key(key)))
            parts.append(": ")
            _write(item, inner, parts)
        parts.append(newline + "}")
    else:
        raise _NotPlain
