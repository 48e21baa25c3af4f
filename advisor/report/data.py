"""A Plan as the stable JSON object of `advisor check --json`: the schema-bound dicts (advisor/schema/plan.schema.json).

The object's shape is docs/architecture.md "Contracts" and the schema: extend it, never rename a key.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from typing import TYPE_CHECKING, Any

from advisor.sanitize import clean_json

if TYPE_CHECKING:
    from advisor.facts import Facts
    from advisor.plan import Plan
    from advisor.rules.engine import ConditionResult, Decision, Problem, ReleaseOutcome
    from advisor.rules.startup import Startup

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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
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
        "command": shlex.join(plan.argv),
        "release_matrix": [release_dict(r) for r in plan.release_matrix],
        "startup": startup_dict(plan.startup),
        "summary": summary(plan),
    }


def startup_dict(startup: Startup | None) -> dict[str, Any] | None:
    """The start-up verdict and its arithmetic (advisor.rules.startup.Startup), bytes per GPU."""
    if startup is None:
        return None
    data = {f.name: jsonable(getattr(startup, f.name)) for f in dataclasses.fields(startup)}
    data["total_kv_tokens"] = startup.total_kv_tokens
    return data


def facts_to_dict(facts: Facts) -> dict[str, Any]:
    """The facts as JSON values (the same as jsonable(facts.to_dict()): test_report.py)."""
    return jsonable(facts)


def dumps(data: dict[str, Any]) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False)``, then :func:`advisor.sanitize.clean_json`."""
    return clean_json(json.dumps(data, indent=2, ensure_ascii=False))
