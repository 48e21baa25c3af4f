"""The engine-independent half of reading a start-up log: clean each line down to the message the engine formatted, split
a file into runs, and read the ``name=value`` and ``{'name': value}`` texts both engines print.

What an engine prints (its line patterns, which lines start a run, how its values are named) lives in its rules package
(``advisor/rules/<engine>/logs.py``), reached through ``Engine.logs``; this module knows none of it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# ANSI escapes (colours, cursor moves) and the stray carriage returns of Windows line ends or progress bars.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[@-Z\\-_]")
# What a collector or a shell puts before the engine's own line: an ISO timestamp (kubectl --timestamps, journald
# exports), a syslog-style date, a "host:" or "node-1 |" tag of docker compose / pdsh.
_OUTER_PREFIXES = (
    re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+"),
    re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ \S+?(?:\[\d+\])?:\s+"),
    re.compile(r"^[\w.-]+\s+\|\s+"),
)
# A process or rank prefix: vLLM's "(VllmWorker rank=0 pid=12)", "(EngineCore_DP0 pid=3)", "(APIServer pid=1)";
# torchrun's "[rank0]:", "[default0]:"; a bare "[TP0]" or "[DP1 TP3]".
_PROCESS = re.compile(r"^\((?P<proc>[A-Za-z_][\w.-]*(?: [\w-]+=[\w.-]+)*)\)\s*")
_TORCHRUN = re.compile(r"^\[(?P<proc>(?:rank|default)\d+)\]:\s*")
_RANK_TAG = re.compile(r"^\[(?P<proc>(?:(?:DP|TP|PP|EP|CP|RANK|rank)\d+ ?)+)\]\s*")
# The engines' own logging formats: SGLang "[2025-06-01 10:00:00 TP0] msg" (also with ",123" ms and no rank), vLLM
# "INFO 06-01 10:00:00 [core.py:94] msg" (v0.x also "INFO 06-01 10:00:00 core.py:94] msg").
_SGLANG_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?P<proc>[^\]]+))?\]\s?")
_VLLM_HEAD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|WARN)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[?[\w./<>-]+:\d+\]\s?"
)
_LEVEL_WORD = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)(?::|\s+-)\s+")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a log as the engine formatted its message: who printed it (a rank or process, "" when unsaid), the
    level when the format says it, the message, and the line number in its file (1-based)."""

    number: int
    message: str
    process: str = ""
    level: str = ""


def strip_controls(raw: str) -> str:
    """The line without ANSI escapes, carriage returns and other control characters."""
    text = _ANSI.sub("", raw)
    text = text.rsplit("\r", 1)[-1] if "\r" in text.rstrip("\r") else text.replace("\r", "")
    return "".join(c for c in text if c == "\t" or c >= " " and c != "\x7f")


def clean_line(raw: str, number: int = 0) -> LogLine:
    """A raw line reduced to the engine's message: controls stripped, outer timestamps and tags, then the process or
    rank prefix and the engine's own timestamp header removed (each may come in any order, several times)."""
    text = strip_controls(raw).strip()
    process = level = ""
    for _ in range(6):  # a handful of nested prefixes at most; never loop on an odd line
        before = text
        for pattern in _OUTER_PREFIXES:
            text = pattern.sub("", text, count=1)
        for pattern in (_PROCESS, _TORCHRUN, _RANK_TAG, _SGLANG_HEAD, _VLLM_HEAD, _LEVEL_WORD):
            match = pattern.match(text)
            if match:
                found = match.groupdict()
                process = process or (found.get("proc") or "").strip()
                level = level or found.get("level") or ""
                text = text[match.end() :]
                break
        if text == before:
            break
    return LogLine(number, text.strip(), process, level)


# The longest line read whole: the longest start-up line (SGLang's server_args) is under 20 KB; a longer one (a dump, a
# progress bar never ended) is read up to here, as a truncated line, so one line cannot cost minutes.
MAX_LINE_CHARS = 64 * 1024


def read_lines(text: str) -> list[LogLine]:
    """Every non-empty line of a log text, cleaned; any line end (LF, CRLF, CR) and any bytes decoded by the caller."""
    lines = []
    for number, raw in enumerate(re.split(r"\r\n|\n|\r(?!$)", text), start=1):
        line = clean_line(raw[:MAX_LINE_CHARS], number)
        if line.message:
            lines.append(line)
    return lines


# -- runs ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One start-up of the engine within a log: its lines, and whether it got as far as ready or a start-up error."""

    lines: tuple[LogLine, ...]
    complete: bool


def split_runs(lines: Sequence[LogLine], starts: Callable[[str], str | None], ends: Callable[[str], bool]) -> list[Run]:
    """The runs of a log: ``starts`` names the kind of a line that opens a start-up (None for other lines), and a new
    run begins where a kind the current run already holds comes again (lines before the first belong to the first;
    ranks repeat nothing, as only rank 0 logs these lines); a run is complete once a line ``ends`` accepts (ready, or the
    start-up failed)."""
    runs: list[list[LogLine]] = [[]]
    seen: set[str] = set()
    for line in lines:
        kind = starts(line.message)
        if kind and kind in seen:
            runs.append([])
            seen = set()
        if kind:
            seen.add(kind)
        runs[-1].append(line)
    return [Run(tuple(run), any(ends(line.message) for line in run)) for run in runs if run]


def chosen_run(runs: Sequence[Run]) -> tuple[Run | None, str | None]:
    """The run to read: the last complete one, else the last; and a note when the log holds more than one run."""
    if not runs:
        return None, None
    complete = [i for i, run in enumerate(runs) if run.complete]
    index = complete[-1] if complete else len(runs) - 1
    if len(runs) == 1:
        return runs[0], None
    which = "the last complete one" if complete else "the last one; none got to ready or an error"
    if complete and index != len(runs) - 1:
        which += f"; run {len(runs)} stops before ready"
    return runs[index], f"the log holds {len(runs)} start-ups; reading run {index + 1} ({which})"


# -- values ----------------------------------------------------------------------------------------------------------

_OPEN = {"(": ")", "[": "]", "{": "}"}


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets and quotes; an unclosed bracket (a truncated line) keeps the
    rest as one piece."""
    parts: list[str] = []
    depth: list[str] = []
    quote = ""
    start = 0
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            depth.append(_OPEN[char])
        elif depth and char == depth[-1]:
            depth.pop()
        elif not depth and char == separator:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def value_of(text: str) -> Any:
    """A logged value as Python data where it is a literal (numbers, strings, True/False/None, lists, dicts); an
    object's repr (``torch.bfloat16``, ``CompilationConfig(...)``) stays its text, with its ``name=value`` fields readable
    through :func:`fields_of`."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "none"):
        return None
    return text


def fields_of(text: str) -> dict[str, Any]:
    """``a=1, b='x', c=Obj(d=2)`` (a repr's or config line's fields) or ``{'a': 1, ...}`` as a dict; values through
    :func:`value_of`. A truncated tail yields the fields before it; text that is neither gives {}."""
    text = text.strip()
    if text.startswith("{"):
        return _dict_fields(text)
    match = re.match(r"^[A-Za-z_][\w.]*\((.*)\)?$", text, re.S)
    if match and "=" in text.split(",", 1)[0]:
        text = match.group(1)
        if text.endswith(")") and text.count("(") < text.count(")"):
            text = text[:-1]
    found: dict[str, Any] = {}
    for part in split_top_level(text):
        name, sep, value = part.partition("=")
        name = name.strip()
        if sep and re.fullmatch(r"[A-Za-z_]\w*", name):
            found[name] = value_of(value)
    return found


def _dict_fields(text: str) -> dict[str, Any]:
    whole = value_of(text)
    if isinstance(whole, dict):
        return {str(k): v for k, v in whole.items()}
    body = text[1:-1] if text.endswith("}") else text[1:]
    found: dict[str, Any] = {}
    for part in split_top_level(body):
        name, sep, value = part.partition(":")
        key = value_of(name)
        if sep and isinstance(key, str):
            found[key] = value_of(value)
    return found


def nested(value: Any, *path: str) -> Any:
    """A field inside a logged value: a dict's key or a repr's ``name=value`` (``nested(cfg, "decode", "max_bs")``)."""
    for name in path:
        if isinstance(value, str):
            value = fields_of(value)
        if not isinstance(value, dict) or name not in value:
            return None
        value = value[name]
    return value


def number(text: str) -> int | float | None:
    """``"1,234"`` -> 1234, ``"3.50"`` -> 3.5; None for anything else."""
    cleaned = text.replace(",", "").strip()
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        return float(cleaned)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Reading:
    """What one engine's reader made of a run: observed values by name, the line each came from, and warnings."""

    observed: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prediction:
    """What a plan says one logged field will be, and the rule that says so. ``tolerance``: the relative difference
    still read as agreement (0: exact; an estimate of what the engine measures gets a margin)."""

    name: str
    value: Any
    source: str
    tolerance: float = 0.0


@dataclass(slots=True)
class RunValues:
    """What the reading of one run has found so far; an engine's line handlers add to it through :meth:`keep`."""

    observed: dict[str, Any]
    where: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    custom_ar_reasons: list[str] = field(default_factory=list)
    ready: bool = False

    def keep(self, name: str, value: Any, line: LogLine) -> None:
        """Record a logged value (None: not logged) and the line it came from; a later line's value wins."""
        if value is not None:
            self.observed[name] = value
            self.where[name] = line.number


# An engine's line rule: (find: the message -> a match or None, handle: (match, line, values) -> None).
LineRule = tuple[Callable[[str], Any], Callable[[Any, LogLine, RunValues], None]]


@dataclass(frozen=True, slots=True)
class LogPatterns:
    """How one engine's start-up log reads (each engine's ``advisor/rules/<engine>/logs.py`` builds one for its
    ``Engine.logs``): its patterns and what each line gives; :func:`read_run` does the reading."""

    engine: str
    signature: Callable[[str], int]  # how strongly a message says "this engine wrote it" (0: not at all)
    starts: Callable[[str], str | None]  # the kind of a message that opens a start-up; None for other messages
    ends: Callable[[str], bool]  # ready, or the start-up failed
    # The engine's lines, first match wins; then its custom-allreduce-off message (a match with a "reason" group), its
    # ready line and the first line of a failure; ``also``: rules tried on every line besides (a version anywhere).
    lines: tuple[LineRule, ...]
    custom_ar_off: Callable[[str], Any]
    ready: Callable[[str], Any]
    error: Callable[[str], Any]
    tp_field: str  # the logged tensor-parallel size's name: a run that got to ready with tp > 1 kept the kernel on
    disable_custom_ar_field: str  # the logged switch that turns custom allreduce off
    # The observed values -> (model, tp, dp_size, nnodes, dp_attention, engine arguments) that rebuild the intent.
    intent: Callable[[dict[str, Any]], dict[str, Any]]
    predict: Callable[[Any], list[Prediction]]  # (plan) -> what the plan says each logged field will be
    releases_seen: str = ""  # the release range whose lines it was written against, for the warning on others
    also: tuple[LineRule, ...] = ()
    finish: Callable[[RunValues], None] | None = None  # values derived once the run is read (V0 blocks -> tokens)


def read_run(patterns: LogPatterns, lines: Sequence[LogLine]) -> Reading:
    """One run's lines -> the engine's observed values (its argument names, plus what it measured), by its patterns:
    each line goes to the first of the engine's rules that matches it, else is its custom-allreduce-off message, its
    ready line or the first line of a failure. Custom allreduce is read as off when the engine said so (with its
    reason) or was told to, and as on when a run with more than one rank got to ready without saying so."""
    values = RunValues({"engine": patterns.engine, "release": None})
    for line in lines:
        message = line.message
        for find, handle in patterns.lines:
            if match := find(message):
                handle(match, line, values)
                break
        else:
            if match := patterns.custom_ar_off(message):
                values.custom_ar_reasons.append(match.group("reason"))
                values.where.setdefault("custom_allreduce_disabled", line.number)
            elif patterns.ready(message):
                values.ready = True
            elif "startup_error" not in values.observed and patterns.error(message):
                values.keep("startup_error", message, line)
        for find, handle in patterns.also:
            if match := find(message):
                handle(match, line, values)
    if patterns.finish is not None:
        patterns.finish(values)
    observed = values.observed
    tp = observed.get(patterns.tp_field)
    if values.custom_ar_reasons:
        observed["custom_allreduce_disabled"] = True
        observed["custom_allreduce_reason"] = values.custom_ar_reasons[0]
    elif observed.get(patterns.disable_custom_ar_field) is True:
        observed["custom_allreduce_disabled"] = True
        observed["custom_allreduce_reason"] = "--" + patterns.disable_custom_ar_field.replace("_", "-")
    elif values.ready and isinstance(tp, int) and not isinstance(tp, bool) and tp > 1:
        observed["custom_allreduce_disabled"] = False  # a run that got to ready without the message kept it on
    return Reading(observed, values.where, tuple(values.warnings))


def detect(lines: Iterable[LogLine], engines: Sequence[tuple[str, LogPatterns]]) -> str | None:
    """The engine whose signature lines score highest in the log; None when no engine's line appears."""
    scores = {name: 0 for name, _ in engines}
    for line in lines:
        for name, patterns in engines:
            scores[name] += patterns.signature(line.message)
    best = max(scores, key=lambda n: scores[n], default=None)
    return best if best is not None and scores[best] > 0 else None


def decision_predictions(plan: Any, table: Sequence[tuple[str, str, str]]) -> list[Prediction]:
    """Predictions read off a plan's decisions: ``(logged name, decision id, what)`` where what is "value", "enabled",
    "disabled", "value.KEY" (a key of the decision's value) or "setting.NAME" (one of its settings). A decision the plan
    does not make, or a value it leaves unknown, predicts nothing."""
    predictions = []
    for name, decision_id, what in table:
        decision = plan.decision(decision_id)
        if decision is None:
            continue
        kind, _, key = what.partition(".")
        if kind == "enabled":
            value: Any = decision.enabled
        elif kind == "disabled":
            value = not decision.enabled
        elif kind == "setting":
            value = next((s.value for s in decision.settings if s.name == key), None)
        elif key:
            value = decision.value.get(key) if isinstance(decision.value, dict) else None
        else:
            value = decision.value
        if value is not None:
            predictions.append(Prediction(name, value, str(decision.source) if decision.source else decision_id))
    return predictions


def startup_predictions(plan: Any, names: dict[str, str], margin: float) -> list[Prediction]:
    """Predictions from the plan's start-up model (advisor.rules.startup.Startup), when it has one: ``names`` maps a
    logged name to the Startup attribute ("kv_tokens", "context_len", "weights_gib"); measured figures get ``margin``
    (context_len, which the engine does not measure, none)."""
    startup = getattr(plan, "startup", None)
    if startup is None:
        return []
    predictions = []
    for name, attribute in names.items():
        if attribute == "weights_gib":
            raw = getattr(startup, "weights_bytes", None)
            value = None if raw is None else round(raw / 2**30, 2)
        else:
            value = getattr(startup, attribute, None)
        if value is not None:
            exact = attribute == "context_len"
            source = "the start-up model (advisor/rules/startup.py)" + (
                "" if exact else f", an estimate within {margin:.0%}"
            )
            predictions.append(Prediction(name, value, source, 0.0 if exact else margin))
    return predictions
