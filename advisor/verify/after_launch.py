"""The verdict `advisor launch` prints once the engine it started reports ready or fails: its start-up log (the run
directory's launcher.log, where launcher.spawn tees every line) against the plan that was launched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.rules import known_bugs, registry
from advisor.verify.compare import DIFFER, NOT_LOGGED, LogText, compare, observe


def verdict_lines(log_path: str | Path, plan: Any) -> list[str]:
    """What the engine logged against ``plan`` (no re-planning: the prediction is the launched plan's own), as lines
    to print; [] for an engine whose logs the advisor does not read. Never raises: a log it cannot read says so."""
    engine = registry.get(plan.intent.engine)
    if engine.logs is None:
        return []
    try:
        text = Path(log_path).read_bytes().decode("utf-8", errors="replace")
        observation = observe([LogText(str(log_path), text)], plan.intent.engine)
    except Exception as exc:  # an unreadable or foreign log must not break the launch's own report
        return [f"verify: could not read the start-up log ({exc})"]
    rows = compare(engine.logs.predict(plan), observation.observed, observation.lines)
    differ = [r for r in rows if r.verdict == DIFFER]
    agree = sum(r.verdict not in (DIFFER, NOT_LOGGED) for r in rows)
    lines = [f"verify: {agree} agree, {len(differ)} differ, {sum(r.verdict == NOT_LOGGED for r in rows)} not logged"
             f" (advisor verify {log_path} for the table)"]  # fmt: skip
    lines += [f"  {r.field}: predicted {r.predicted!r}, logged {r.observed!r} ({r.source})" for r in differ]
    error = observation.observed.get("startup_error")
    if error:
        lines.append(f"  start-up error: {error}")
        for bug in known_bugs.matching(plan.intent.engine, error, plan.engine.get("version")):
            lines.append(f"  known bug: {bug.title} ({bug.link}); workaround: {bug.workaround}")
    return lines
