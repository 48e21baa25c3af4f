"""`advisor diff`: the same scenario under two releases of one engine, and what an upgrade (or downgrade) changes.

Both plans come from the ordinary rules (advisor.plan.build_plan) with only ``engine_version`` changed. A decision is
reported when its state, value or flags differ; problems are compared by (id, severity). For every change the report
names the release between the two where it first happened and that release's upstream source (file, PR), found by
planning each modelled release in between (plans are cheap: no probing, the facts and model are loaded once).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from advisor.context import Options, plan_for, resolve, usage_error
from advisor.report import jsonable, problem_dict
from advisor.rules import known_bugs, registry
from advisor.rules.engine import Scenario, parse_release, release_text
from advisor.rules.known_bugs import KnownBug
from advisor.rules.registry import modelled_releases

if TYPE_CHECKING:
    from advisor.facts import Facts
    from advisor.models import ModelSpec
    from advisor.plan import Intent, Plan
    from advisor.rules.engine import Decision, Problem

DIFF_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Change:
    id: str
    title: str
    before: Decision | None
    after: Decision | None
    changed_in: str | None  # the first release after `from` (towards `to`) where this decision changed
    source: str | None  # that release's upstream source of the decision


@dataclass(frozen=True)
class Diff:
    engine: str
    release_from: str
    release_to: str
    from_default: str | None  # why --from was picked when not given ("installed", "before --to")
    plan_from: Plan
    plan_to: Plan
    changes: tuple[Change, ...]
    problems_added: tuple[Problem, ...]
    problems_removed: tuple[Problem, ...]
    # The engine's known bugs (advisor.rules.known_bugs) fixed and introduced between the two releases, each with
    # whether this scenario meets its condition.
    bugs_fixed: tuple[tuple[KnownBug, bool], ...] = ()
    bugs_introduced: tuple[tuple[KnownBug, bool], ...] = ()


def _normalise(engine: str, text: str, option: str) -> str:
    """A modelled release as the tables spell it ("v0.5.14.post2" -> "0.5.14"), else a usage error naming them."""
    releases = modelled_releases(engine)
    parsed = parse_release(text)
    if parsed is None:
        raise usage_error(f"{option} {text!r} is not a release number; pass X.Y.Z, e.g. {releases[-1]}")
    release = release_text(parsed)
    if release not in releases:
        span = releases[0] if len(releases) == 1 else f"{releases[0]} .. {releases[-1]}"
        raise usage_error(f"{option} {text}: {engine} {release} is not a modelled release; pass one of {span}")
    return release


def _installed(facts: Facts, engine: str) -> str | None:
    package = facts.package(registry.get(engine).package)
    return package.base_version if package.installed and package.version else None


def resolve_releases(facts: Facts, engine: str, release_from: str | None, release_to: str | None,
                     engine_version: str | None = None) -> tuple[str, str, str | None]:  # fmt: skip
    """(from, to, why from was chosen) with the defaults: to = the newest modelled release; from = --engine-version,
    else the installed release, else the modelled release before `to`."""
    if not modelled_releases(engine):

        versioned = registry.versioned()
        raise usage_error(
            f"advisor diff compares releases of {' or '.join(versioned)}; the {engine} engine has no releases (pass "
            + " or ".join(f"--engine {name}" for name in versioned) + ")"
        )
    releases = modelled_releases(engine)
    to = _normalise(engine, release_to, "--to") if release_to else releases[-1]
    why = None
    if release_from:
        start = _normalise(engine, release_from, "--from")
    elif engine_version:
        start, why = _normalise(engine, engine_version, "--engine-version"), "--engine-version"
    elif (installed := _installed(facts, engine)) is not None:
        start, why = _normalise(engine, installed, f"--from (the installed {engine})"), "installed"
    else:
        index = releases.index(to)
        if index == 0:
            raise usage_error(f"{engine} is not installed here and {to} is the oldest modelled release; pass --from")
        start, why = releases[index - 1], f"{engine} not installed: the release before {to}"
    return start, to, why


def _snapshot(decision: Decision | None) -> tuple[Any, ...] | None:
    if decision is None:
        return None


    return decision.state, json.dumps(jsonable(decision.value), sort_keys=True), tuple(decision.flags)


def _differs(a: Decision | None, b: Decision | None) -> bool:
    """State, value or flags differ, or a setting both releases know (not None) differs."""
    if _snapshot(a) != _snapshot(b):
        return True
    known = {s.name: s.value for s in (a.settings if a else ()) if s.value is not None}
    return any(s.value is not None and s.name in known and known[s.name] != s.value for s in (b.settings if b else ()))


def _between(engine: str, start: str, end: str) -> list[str]:
    """The modelled releases after `start` up to and including `end`, walking towards `end`."""
    releases = list(modelled_releases(engine))
    i, j = releases.index(start), releases.index(end)
    return releases[i + 1 : j + 1] if i <= j else list(reversed(releases[j:i]))


def build_diff(facts: Facts, model: ModelSpec | None, intent: Intent, release_from: str | None = None,
               release_to: str | None = None) -> Diff:  # fmt: skip

    start, end, why = resolve_releases(facts, intent.engine, release_from, release_to, intent.engine_version)
    plans: dict[str, Plan] = {}

    def plan(release: str) -> Plan:
        if release not in plans:
            plans[release] = plan_for(facts, model, replace(intent, engine_version=release))
        return plans[release]

    before, after = plan(start), plan(end)
    ids = list(dict.fromkeys([d.id for d in before.decisions] + [d.id for d in after.decisions]))
    changes = []
    for decision_id in ids:
        old, new = before.decision(decision_id), after.decision(decision_id)
        if not _differs(old, new):
            continue
        changed_in, source = end, new.source if new is not None else None
        for release in _between(intent.engine, start, end):
            step = plan(release).decision(decision_id)
            if _differs(step, old):
                changed_in, source = release, step.source if step is not None else None
                break
        title = (new or old).title
        changes.append(Change(decision_id, title, old, new, changed_in, str(source) if source else None))

    def keys(p: Plan) -> dict[tuple[str, str], Problem]:
        return {(x.id, x.severity): x for x in reversed(p.problems)}  # the first of each (id, severity) wins

    old_problems, new_problems = keys(before), keys(after)
    added = tuple(p for k, p in reversed(new_problems.items()) if k not in old_problems)
    removed = tuple(p for k, p in reversed(old_problems.items()) if k not in new_problems)
    fixed, introduced = known_bugs.changed(intent.engine, start, end)
    scenario = Scenario(facts, model, replace(intent, engine_version=end))

    def tagged(bugs: list[KnownBug], p: Plan) -> tuple[tuple[KnownBug, bool], ...]:
        return tuple((b, known_bugs.applies(b, replace(scenario, intent=p.intent), p.decisions)) for b in bugs)

    return Diff(intent.engine, start, end, why, before, after, tuple(changes), added, removed,
                tagged(fixed, before), tagged(introduced, after))  # fmt: skip


def diff_for(options: Options, release_from: str | None, release_to: str | None) -> Diff:
    facts, model, intent = resolve(options)
    return build_diff(facts, model, intent, release_from, release_to)


# -- JSON ----------------------------------------------------------------------------------------------------------------


def _side(decision: Decision | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {"state": decision.state, "value": jsonable(decision.value), "flags": list(decision.flags),
            "settings": {setting.name: jsonable(setting.value) for setting in decision.settings}}  # fmt: skip


def condition_changes(change: Change) -> list[dict[str, Any]]:
    """Conditions whose verdict differs (or that exist on one side only): {"id", "from", "to", "observed"}."""
    old = {c.id: c for c in (change.before.conditions if change.before else ())}
    new = {c.id: c for c in (change.after.conditions if change.after else ())}
    out = []
    for cid in dict.fromkeys([*old, *new]):
        a, b = old.get(cid), new.get(cid)
        if a is not None and b is not None and a.ok == b.ok:
            continue
        out.append({
            "id": cid,
            "from": a.ok if a is not None else "absent",
            "to": b.ok if b is not None else "absent",
            "observed": jsonable((b or a).observed),
            "expected": jsonable((b or a).expected),
        })  # fmt: skip
    return out


def diff_dict(diff: Diff) -> dict[str, Any]:
    """The `advisor diff --json` object (advisor/schema/diff.schema.json)."""
    return {
        "schema_version": DIFF_SCHEMA_VERSION,
        "engine": diff.engine,
        "from_release": diff.release_from,
        "to_release": diff.release_to,
        "changes": [
            {
                "id": c.id,
                "title": c.title,
                "from": _side(c.before),
                "to": _side(c.after),
                "conditions": condition_changes(c),
                "changed_in": c.changed_in,
                "source": c.source,
            }
            for c in diff.changes
        ],
        "problems_added": [problem_dict(p) for p in diff.problems_added],
        "problems_removed": [problem_dict(p) for p in diff.problems_removed],
        "known_bugs_fixed": [_bug(b, hits) for b, hits in diff.bugs_fixed],
        "known_bugs_introduced": [_bug(b, hits) for b, hits in diff.bugs_introduced],
        "argv": {"from": list(diff.plan_from.argv), "to": list(diff.plan_to.argv)},
    }


def _bug(bug: KnownBug, hits: bool) -> dict[str, Any]:
    return {"id": bug.id, "title": bug.title, "link": bug.link, "first_affected": bug.first_affected,
            "fixed_in": bug.fixed_in, "this_scenario": hits, "workaround": bug.workaround}  # fmt: skip


# -- people --------------------------------------------------------------------------------------------------------------


def _value(value: Any) -> str:

    return value if isinstance(value, str) else json.dumps(jsonable(value))


def _flags(flags: tuple[str, ...]) -> str:
    return " ".join(flags) if flags else "(none)"


def diff_lines(diff: Diff, marks: dict[object, str] | None = None) -> list[str]:
    """The human report, one string per line (the CLI prints them; the TUI shows them)."""
    marks = marks or {True: "[ok]", False: "[x]", None: "[?]"}
    intent = diff.plan_to.intent
    model = diff.plan_to.model.id if diff.plan_to.model is not None else "demo"
    where = diff.plan_to.facts.source
    head = f"{diff.engine} {diff.release_from} -> {diff.release_to}: {model}, tp {intent.tp}"
    if intent.nnodes > 1:
        head += f" x {intent.nnodes} nodes"
    if intent.dp_attention:
        head += f", DP attention (dp {intent.dp_size})"
    lines = [head + (f" on {where}" if where else "")]
    if diff.from_default:
        lines.append(f"(from {diff.release_from}: {diff.from_default})")
    if diff.release_from == diff.release_to:
        lines.append("same release: nothing changes")
        return lines
    if not diff.changes:
        lines.append("no decision changes")
    for c in diff.changes:
        lines.append("")
        lines.append(f"{c.id}: {c.title}")
        a, b = c.before, c.after
        if a is None or b is None:
            lines.append(f"  {'added' if a is None else 'removed'} in {c.changed_in}")
        else:
            if a.state != b.state:
                lines.append(f"  state: {a.state} -> {b.state}")
            if _snapshot(a)[1] != _snapshot(b)[1]:
                lines.append(f"  value: {_value(a.value)} -> {_value(b.value)}")
            if a.flags != b.flags:
                lines.append(f"  flags: {_flags(a.flags)} -> {_flags(b.flags)}")
            before = {setting.name: setting.value for setting in a.settings if setting.value is not None}
            for setting in b.settings:
                if setting.value is not None and setting.name in before and before[setting.name] != setting.value:
                    lines.append(f"  {setting.name}: {_value(before.get(setting.name))} -> {_value(setting.value)}")
        for cond in condition_changes(c):
            old = cond["from"] if cond["from"] == "absent" else marks[cond["from"]]
            new = cond["to"] if cond["to"] == "absent" else marks[cond["to"]]
            lines.append(f"  condition {cond['id']}: {old} -> {new} (observed {_value(cond['observed'])})")
        if c.changed_in:
            lines.append(f"  changed in {diff.engine} {c.changed_in}" + (f"; source: {c.source}" if c.source else ""))
    for title, problems in (("problems added", diff.problems_added), ("problems removed", diff.problems_removed)):
        if problems:
            lines.append("")
            lines.append(f"{title}:")
            lines.extend(f"  {p.severity} {p.id}: {p.message}" for p in problems)
    for title, bugs in (("known bugs fixed", diff.bugs_fixed), ("known bugs introduced", diff.bugs_introduced)):
        if bugs:
            lines.append("")
            lines.append(f"{title}:")
            lines.extend(f"  {'* ' if hits else ''}{b.title} ({b.link})" for b, hits in bugs)
    if any(hits for _, hits in diff.bugs_fixed + diff.bugs_introduced):
        lines.append("  (* this scenario meets the bug's condition)")
    if diff.plan_from.argv != diff.plan_to.argv:
        lines.append("")
        lines.append(f"command from: {shlex.join(diff.plan_from.argv)}")
        lines.append(f"command to:   {shlex.join(diff.plan_to.argv)}")
    else:
        lines.append("")
        lines.append("command: unchanged")
    return lines
