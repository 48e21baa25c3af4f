"""Intent + Facts + ModelSpec -> Plan.

The engine comes from the registry (advisor.rules.registry); its release decides which rule tables apply:
``intent.engine_version``, else the version of the engine package probed on the machine, else the newest modelled table,
resolved once per plan. The plan holds every decision (each with all its conditions), the problems (compatibility
checks plus plan-level findings), the resolved engine flags, the command line, and the release matrix (the engine's
fusion outcome of this scenario under every modelled release).

Each engine's rules are imported when a plan for that engine is built, so a plan loads one engine's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from advisor import __version__
from advisor.facts import Facts
from advisor.intent import Intent  # its home is advisor.intent; `from advisor.plan import Intent` keeps working
from advisor.models import ModelSpec
from advisor.rules import known_bugs, registry
from advisor.rules.checks import run_checks
from advisor.rules.checks_memory import startup_warnings
from advisor.rules.engine import (
    Decision,
    Engine,
    EngineCommandError,
    Problem,
    Release,
    ReleaseError,
    ReleaseOutcome,
    Scenario,
    flag_groups,
    parse_release,
    tries_custom_allreduce,
)
from advisor.rules.startup import Startup, startup_problems
from advisor.versions import parse_version


class PlanError(Exception):
    """The intent cannot be planned (tp < 1, an unknown engine version, ...); the message is one line naming the fix."""


@dataclass(frozen=True, slots=True)
class Plan:
    intent: Intent
    facts: Facts
    model: ModelSpec | None
    engine: dict[str, str]  # {"name": "sglang", "version": "0.5.18", "rules": "0.5.18"}
    decisions: tuple[Decision, ...] = ()
    problems: tuple[Problem, ...] = ()
    flags: tuple[str, ...] = ()  # resolved engine flags
    argv: tuple[str, ...] = ()  # the resolved command line
    release_matrix: tuple[ReleaseOutcome, ...] = field(default_factory=tuple)
    startup: Startup | None = None  # the engine's start-up arithmetic and verdict (advisor.rules.startup)

    def decision(self, decision_id: str) -> Decision | None:
        return next((d for d in self.decisions if d.id == decision_id), None)

    @property
    def has_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def _validate(intent: Intent) -> None:
    if intent.engine not in registry.names():
        raise PlanError(f"unknown engine {intent.engine!r}; choose one of {', '.join(registry.names())}")
    problem = intent.error()
    if problem:
        raise PlanError(problem)


def _engine_version(facts: Facts, intent: Intent, engine: Engine) -> tuple[str, list[Problem]]:
    """The version whose rules apply (asked for, else installed, else the newest modelled), and any warning about it."""
    newest = engine.newest
    if intent.engine_version:
        return intent.engine_version.strip().lstrip("v"), []
    pkg = facts.package(engine.package)
    if pkg.installed and pkg.version:
        if parse_release(pkg.version) is not None:
            return pkg.base_version, []
        return newest, [Problem(
            "engine_version_unparsed", "warning",
            f"installed {intent.engine} reports version {pkg.version!r}, which is not a release; using the newest modelled rules v{newest}",
            "pass --engine-version X.Y.Z to choose the rules",
            f"{intent.engine} package metadata (importlib.metadata)", (intent.engine,),
        )]  # fmt: skip
    return newest, []


def _version_ignored(intent: Intent) -> Problem:
    """An engine without releases of its own (the bundled runtime ships with tp-advisor) has no rules to pick."""
    return Problem(
        "engine_version_ignored", "warning",
        f"--engine-version {intent.engine_version} does not apply to the {intent.engine} engine: it ships with"
        f" tp-advisor, whose version is its own ({__version__})",
        "drop --engine-version, or pass --engine sglang|vllm to plan for a release of those",
        "tp-advisor",
    )  # fmt: skip


def _prerelease(intent: Intent, installed: str | None, rules: str) -> list[Problem]:
    """A pre-release or development build (0.5.9rc1, 0.6.0.dev3) is planned with the rules of the release it leads
    to, whose code it may not have yet; say so rather than silently treat it as that release."""
    shown = intent.engine_version.strip().lstrip("v") if intent.engine_version else installed
    version = parse_version(shown)
    if version is None or not (version.is_prerelease or version.is_devrelease):
        return []
    if parse_release(version.base_version) != parse_release(rules):
        return []  # planned with another release's rules: the newer / older warning says so
    return [Problem(
        "engine_version_prerelease", "warning",
        f"{intent.engine} {shown} is a pre-release; this plan uses the rules of release v{rules}, which may differ"
        " from what the pre-release does",
        f"check {intent.engine} {shown}'s changes against v{rules}, or plan for a release with --engine-version",
        f"{intent.engine} v{rules}", (intent.engine,),
    )]  # fmt: skip


def _merge_flags(decisions: list[Decision]) -> tuple[str, ...]:
    """The decisions' flags in order, each flag once."""
    seen: set[str] = set()
    out: list[str] = []
    for d in decisions:
        for group in flag_groups(d.flags):
            if group[0] not in seen:
                seen.add(group[0])
                out.extend(group)
    return tuple(out)


def build_plan(facts: Facts, model: ModelSpec | None, intent: Intent) -> Plan:
    """Decide every rule of the chosen engine release, run the checks, and resolve flags and argv."""
    _validate(intent)
    engine = registry.get(intent.engine)
    release, problems = _release(facts, intent, engine)
    intent = _spelled_out(intent, engine, release)
    scenario = Scenario(facts, model, intent)
    decisions, found = engine.decide(scenario, release)
    problems += found
    problems += known_bugs.hit(engine, release.version, scenario, decisions)  # the release's known bugs this plan hits
    fusion = next((d.enabled for d in decisions if d.id == "flashinfer_allreduce_fusion"), None)
    # Whether the engine sets its custom allreduce up (and finds out about P2P at start-up): p2p_unavailable says how.
    custom_ar = next((tries_custom_allreduce(d) for d in decisions if d.id == "custom_allreduce"), None)
    problems = list(run_checks(facts, model, intent, fusion=fusion, prediction=scenario.flashinfer,
                               custom_allreduce=custom_ar)) + problems  # fmt: skip
    startup = engine.startup(scenario, release, decisions) if engine.startup else None
    problems += startup_problems(startup, intent.engine) + startup_warnings(startup, intent.engine, engine.context_flag)
    plan = Plan(
        intent=intent,
        facts=facts,
        model=model,
        engine={"name": intent.engine, "version": release.version, "rules": release.rules},
        decisions=tuple(decisions),
        problems=tuple(problems),
        flags=_merge_flags(decisions),
        release_matrix=engine.release_matrix(scenario),
        startup=startup,
    )
    return _with_argv(plan, engine)


def _release(facts: Facts, intent: Intent, engine: Engine) -> tuple[Release, list[Problem]]:
    """The release the plan models (resolved once per plan), and the warnings about it."""
    problems: list[Problem] = []
    version: str | None = None
    if engine.releases:
        version, found = _engine_version(facts, intent, engine)
        problems += found
    elif intent.engine_version:
        problems.append(_version_ignored(intent))
    try:
        rules, found = engine.resolve(version)
    except ReleaseError as exc:
        raise PlanError(str(exc)) from None
    problems += found
    if engine.releases:
        problems += _prerelease(intent, facts.package(engine.package).version, rules)
    return Release(version or rules, rules), problems


def _spelled_out(intent: Intent, engine: Engine, release: Release) -> Intent:
    """``intent`` with its engine arguments as the release's parser reads them (Engine.spell_out: ``--mem-frac 0.8`` is
    SGLang's --mem-fraction-static 0.8), so that every rule, check and the command read what the engine takes."""
    if engine.spell_out is None or not intent.overrides:
        return intent
    return replace(intent, overrides=engine.spell_out(tuple(intent.overrides), release))


def spelled_out(facts: Facts, intent: Intent) -> Intent:
    """What build_plan reads as the engine arguments, for a caller that reads them before planning (advisor.context
    adopts the engine's tp from them); ``intent`` as given where its release cannot be resolved (the plan says why)."""
    try:
        engine = registry.get(intent.engine)
        release, _ = _release(facts, intent, engine)
    except (PlanError, KeyError, ValueError):
        return intent
    return _spelled_out(intent, engine, release)


def _with_argv(plan: Plan, engine: Engine) -> Plan:
    """The command line as the engine spells it (its builder, through Engine.command_line); when it cannot be built, an
    empty argv and a problem saying why."""
    try:
        return replace(plan, argv=tuple(engine.command_line(plan)))
    except EngineCommandError as exc:
        problem = Problem("no_command", "error", f"cannot build the {plan.intent.engine} command: {exc}", str(exc),
                          f"advisor/rules/{engine.name}/command.py")  # fmt: skip
        return replace(plan, problems=plan.problems + (problem,))
