"""`advisor verify`: what an engine's start-up log says against what `check` predicts for the same launch.

Read each log (advisor.verify.parse cleans the lines, the engine's ``Engine.logs`` reads them), rebuild the intent from
the logged arguments, plan it with the same path as `check` (advisor.context.resolve / plan_for) on the machine the
options name, and compare field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from advisor.context import AdvisorError, Options, plan_for, resolve, usage_error
from advisor.rules import known_bugs, registry
from advisor.verify.parse import (
    LogLine,
    Prediction,
    Reading,
    chosen_run,
    detect,
    read_lines,
    read_run,
    split_runs,
)

AGREE = "agree"
DIFFER = "differ"
NOT_LOGGED = "not logged"
VERDICTS = (AGREE, DIFFER, NOT_LOGGED)
FLOAT_SLACK = 5e-4  # engines log fractions to 2-3 places


@dataclass(frozen=True, slots=True)
class Row:
    """One compared field: the plan's value, the log's, the verdict, and the rule (with the log line) behind it."""

    field: str
    predicted: Any
    observed: Any
    verdict: str
    source: str
    line: int | None = None  # the line of the log it was read from (in the file that gave it)


@dataclass(frozen=True, slots=True)
class Verification:
    engine: str
    release: str | None  # as the log names it; None when it does not
    rules: str | None  # the modelled release whose rules predicted
    observed: dict[str, Any]
    rows: tuple[Row, ...] = ()
    notes: tuple[str, ...] = ()  # warnings: several runs, truncated lines, an unmodelled release, ...
    plan: Any = None  # the advisor.plan.Plan the prediction came from
    known_bugs: tuple[Any, ...] = ()  # the engine's known bugs whose symptom the logged error matches

    @property
    def differs(self) -> bool:
        return any(r.verdict == DIFFER for r in self.rows)


@dataclass(frozen=True, slots=True)
class LogText:
    name: str  # the file name, or "-" for stdin
    text: str


@dataclass(frozen=True, slots=True)
class Observation:
    engine: str
    observed: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _readers() -> list[tuple[str, Any]]:
    return [(e.name, e.logs) for e in registry.engines() if e.logs is not None]


def observe(logs: list[LogText], engine: str | None = None) -> Observation:
    """The observed values of one start-up, read from one log or several (one per rank or node: the first file that
    logs a value gives it, and a value the files disagree on is noted)."""
    readers = dict(_readers())
    if engine is not None and engine not in readers:
        raise usage_error(f"--engine {engine!r} has no log reader; choose one of {', '.join(readers)}")
    parsed = [(log, read_lines(log.text)) for log in logs]
    if engine is None:
        engine = detect([line for _, lines in parsed for line in lines], list(readers.items()))
        if engine is None:
            names = ", ".join(log.name for log in logs)
            raise usage_error(
                f"{names}: no start-up line of {' or '.join(readers)} found; pass the engine's start-up log"
                " (its stdout/stderr from launch to ready), or --engine to name it"
            )
    patterns = readers[engine]
    observed: dict[str, Any] = {}
    where: dict[str, int] = {}
    notes: list[str] = []
    for log, lines in parsed:
        reading = _read_one(log, lines, patterns, notes)
        for name, value in reading.observed.items():
            if name not in observed or observed[name] is None:
                observed[name] = value
                if name in reading.lines:
                    where[name] = reading.lines[name]
            elif value is not None and value != observed[name] and name not in ("non_default_args",):
                notes.append(
                    f"{log.name}: {name} is {value!r} here, {observed[name]!r} in an earlier file; using the first"
                )
    observed["engine"] = engine
    return Observation(engine, observed, where, tuple(notes))


def _read_one(log: LogText, lines: list[LogLine], patterns: Any, notes: list[str]) -> Reading:
    runs = split_runs(lines, patterns.starts, patterns.ends)
    run, note = chosen_run(runs)
    if note:
        notes.append(f"{log.name}: {note}")
    if run is None:
        notes.append(f"{log.name}: empty; nothing read")
        return Reading()
    if not run.complete:
        notes.append(
            f"{log.name}: the start-up neither reached ready nor logged an error (cut short or still starting)"
        )
    reading = read_run(patterns, run.lines)
    notes.extend(f"{log.name}: {w}" for w in reading.warnings)
    return reading


# -- predicting ------------------------------------------------------------------------------------------------------


def rebuilt_options(observation: Observation, options: Options) -> Options:
    """The options `check` would have been given for this launch: the log's model, sizes and arguments, unless the
    command line names them; the machine always from the options (live probe, --profile or --facts)."""
    patterns = dict(_readers())[observation.engine]
    logged = patterns.intent(observation.observed)

    model = options.model or logged.get("model")
    if not model:
        raise AdvisorError("the log does not name the model; pass --model ID|DIR")
    return replace(
        options,
        model=str(model),
        engine=observation.engine,
        tp=options.tp or _count(logged.get("tp")),
        dp_size=options.dp_size or _count(logged.get("dp_size")),
        nnodes=options.nnodes if options.nnodes != 1 else _count(logged.get("nnodes")) or 1,
        dp_attention=options.dp_attention or logged.get("dp_attention") is True,
        moe_a2a_backend=(
            options.moe_a2a_backend if options.moe_a2a_backend != "none" else logged.get("moe_a2a_backend") or "none"
        ),  # fmt: skip
        engine_version=options.engine_version or _release(logged.get("engine_version")),
        dtype=options.dtype or logged.get("dtype"),
        overrides=tuple(logged.get("args") or ()) + tuple(options.overrides),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _release(value: Any) -> str | None:
    from advisor.versions import parse_release

    if not isinstance(value, str) or parse_release(value) is None:
        return None
    return value


def compare(predictions: list[Prediction], observed: dict[str, Any], lines: dict[str, int]) -> tuple[Row, ...]:
    rows = []
    for p in predictions:
        value = observed.get(p.name)
        verdict = NOT_LOGGED if value is None else AGREE if same(p.value, value, p.tolerance) else DIFFER
        rows.append(Row(p.name, p.value, value, verdict, p.source, lines.get(p.name)))
    return tuple(rows)


def same(predicted: Any, observed: Any, tolerance: float = 0.0) -> bool:
    """Equal as the engine would print them: numbers within the tolerance (floats within rounding), text ignoring
    case, booleans exactly."""
    if isinstance(predicted, bool) or isinstance(observed, bool):
        return predicted is observed or (isinstance(observed, str) and observed.lower() == str(predicted).lower())
    if isinstance(predicted, (int, float)) and isinstance(observed, (int, float)):
        if tolerance:
            return abs(predicted - observed) <= tolerance * max(abs(predicted), abs(observed))
        if isinstance(predicted, float) or isinstance(observed, float):
            return abs(predicted - observed) <= FLOAT_SLACK
        return predicted == observed
    if isinstance(predicted, str) and isinstance(observed, str):
        return predicted.strip().lower() == observed.strip().lower()
    return predicted == observed


def verify(logs: list[LogText], options: Options, engine: str | None = None) -> Verification:
    """Read the logs, plan the same launch, compare. Raises AdvisorError when the launch cannot be planned (the
    observed values are then in the error's ``observation``)."""
    observation = observe(logs, engine)
    notes = list(observation.notes)
    try:
        rebuilt = rebuilt_options(observation, options)
        try:
            facts, model, intent = resolve(rebuilt)
            plan = plan_for(facts, model, intent)
        except AdvisorError as exc:
            oldest = registry.modelled_releases(observation.engine)[:1]
            if options.engine_version or not rebuilt.engine_version or not oldest or "older" not in exc.message:
                raise
            # A release older than every modelled one (SGLang 0.4.x): best effort with the oldest rules.
            notes.append(f"{exc.message.split(';')[0]}; predicted with v{oldest[0]}'s rules (best effort)")
            facts, model, intent = resolve(replace(rebuilt, engine_version=oldest[0]))
            plan = plan_for(facts, model, intent)
    except AdvisorError as exc:
        exc.observation = observation  # type: ignore[attr-defined]  (the command still shows what was read)
        raise
    patterns = dict(_readers())[observation.engine]
    release = observation.observed.get("release")
    rules = plan.engine.get("rules")
    if not options.engine_version:
        notes += _release_notes(observation.engine, release, plan, patterns.releases_seen)
    rows = compare(patterns.predict(plan), observation.observed, observation.lines)
    bugs = known_bugs.matching(
        observation.engine, observation.observed.get("startup_error"), release or plan.engine["version"]
    )
    return Verification(observation.engine, release, rules, observation.observed, rows, tuple(notes), plan, bugs)


def _release_notes(engine: str, release: str | None, plan: Any, seen: str) -> list[str]:
    if release is None:
        return [
            f"the log does not name the {engine} release; predicted with v{plan.engine['rules']}'s rules"
            " (pass --engine-version X.Y.Z to choose)"
        ]
    notes = []
    if release not in registry.modelled_releases(engine):
        notes.append(f"{engine} {release} is not a modelled release (log lines read as {seen} print them, best"
                     f" effort); predicted with v{plan.engine['rules']}'s rules")  # fmt: skip
    return notes
