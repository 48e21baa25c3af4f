"""Intent + Facts + ModelSpec -> Plan.

The engine's release decides which rule tables apply: ``intent.engine_version``, else the version of the engine package
probed on the machine, else the newest modelled table. The plan holds every decision (each with all its conditions), the
problems (compatibility checks plus plan-level findings), the resolved engine flags, the command line, and the release
matrix (the SGLang fusion outcome of this scenario under every modelled release).

Cheap to import: no torch, flashinfer or textual (checks and launcher.engines are imported inside build_plan).
"""

from __future__ import annotations

from dataclasses import field, replace

from advisor.facts import Facts
from advisor.models import ModelSpec
from advisor.records import record
from advisor.rules.engine import Decision, Problem, ReleaseOutcome, Scenario, flag_groups, parse_release

ENGINES = ("bundled", "sglang", "vllm")


class PlanError(Exception):
    """The intent cannot be planned (tp < 1, an unknown engine version, ...); the message is one line naming the fix."""


@record
class Intent:
    """What the user asked for (CLI flags or the TUI form)."""

    model: str | None = None  # id or directory; None -> the bundled runtime's demo model
    tp: int = 1
    nnodes: int = 1
    dp_attention: bool = False
    dp_size: int = 1
    moe_a2a_backend: str = "none"
    engine: str = "bundled"  # "bundled" | "sglang" | "vllm"
    engine_version: str | None = None  # None -> the probed version, else the newest modelled release
    dtype: str | None = None  # None -> the model's dtype
    # Explicit engine flags the user passed after `--` (or set in the TUI), e.g. "--enforce-disable-flashinfer-allreduce-fusion".
    overrides: tuple[str, ...] = ()
    mode: str = "serve"  # for the bundled runtime: serve | generate | bench


@record
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

    def decision(self, decision_id: str) -> Decision | None:
        return next((d for d in self.decisions if d.id == decision_id), None)

    @property
    def has_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def _validate(intent: Intent) -> None:
    if intent.engine not in ENGINES:
        raise PlanError(f"unknown engine {intent.engine!r}; choose one of {', '.join(ENGINES)}")
    for name in ("tp", "nnodes", "dp_size"):
        value = getattr(intent, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            flag = "--" + name.replace("_", "-")
            raise PlanError(f"{flag} must be a whole number >= 1, got {value!r}; pass e.g. {flag} 1")
    if intent.tp % intent.nnodes:
        raise PlanError(f"tp {intent.tp} does not split evenly over {intent.nnodes} nodes; choose a tp divisible by --nnodes")


def _engine_version(facts: Facts, intent: Intent, newest: str) -> tuple[str, list[Problem]]:
    """The version whose rules apply, and any warning about where it came from."""
    if intent.engine_version:
        return intent.engine_version.strip().lstrip("v"), []
    pkg = facts.package(intent.engine)
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
    from advisor.rules import sglang

    _validate(intent)
    scenario = Scenario(facts, model, intent)
    problems: list[Problem] = []

    if intent.engine == "sglang":
        version, found = _engine_version(facts, intent, sglang.NEWEST)
        problems += found
        try:
            row, newer = sglang.row_for(version)
        except sglang.ReleaseError as exc:
            raise PlanError(str(exc)) from None
        rules = sglang.rules_release(version)
        if newer:
            problems.append(Problem(
                "engine_version_newer", "warning",
                f"sglang {version} is newer than the newest modelled release; this plan uses the newest modelled release v{rules}",
                "check the release notes for changed defaults, or pass --engine-version to pick a modelled release",
                f"sglang v{rules}",
            ))  # fmt: skip
        decisions, found = sglang.decide(scenario, version)
        problems += found
    elif intent.engine == "vllm":
        from advisor.rules import vllm

        version, found = _engine_version(facts, intent, vllm.NEWEST)
        problems += found
        try:
            rules = vllm.rules_release(version)
        except vllm.ReleaseError as exc:
            raise PlanError(str(exc)) from None
        decisions, found = vllm.decide(scenario, version)
        problems += found
    else:
        from advisor import __version__
        from advisor.rules import bundled

        version = rules = __version__
        decisions, found = bundled.decide(scenario)
        problems += found

    from advisor.rules.checks import run_checks

    fusion = next((d.enabled for d in decisions if d.id == "flashinfer_allreduce_fusion"), None)
    custom_ar = next((d.enabled for d in decisions if d.id == "custom_allreduce"), None)
    problems = list(run_checks(facts, model, intent, fusion=fusion, prediction=scenario.flashinfer,
                               custom_allreduce=custom_ar)) + problems  # fmt: skip
    plan = Plan(
        intent=intent,
        facts=facts,
        model=model,
        engine={"name": intent.engine, "version": version, "rules": rules},
        decisions=tuple(decisions),
        problems=tuple(problems),
        flags=_merge_flags(decisions),
        release_matrix=sglang.release_matrix(scenario),
    )
    return _with_argv(plan)


def _with_argv(plan: Plan) -> Plan:
    """The command line as launcher.engines spells it; when it cannot be built, an empty argv and a problem saying why."""
    from launcher import engines

    try:
        return replace(plan, argv=tuple(engines.command_for(plan)))
    except engines.EngineCommandError as exc:
        problem = Problem("no_command", "error", f"cannot build the {plan.intent.engine} command: {exc}", str(exc),
                          "launcher/engines.py (command_for)")  # fmt: skip
        return replace(plan, problems=plan.problems + (problem,))
