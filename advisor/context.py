"""From the common options to Facts, a ModelSpec, an Intent and a Plan: the one path every face takes.

The CLI (`check`, `explain`, `probe`), the TUI and `launch` all call these functions, so defaults and error messages are
the same everywhere. Errors are raised as :class:`AdvisorError`, a one-line message naming the fix plus the exit code the
CLI should use (1: data that could not be read or resolved, 2: a usage error).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, fields, replace
from typing import Any

from advisor.facts import Facts, FactsError
from advisor.intent import COUNT_OPTIONS, Intent, count_error
from advisor.models import DEMO_ID, ModelError, ModelSpec, catalog_spec, resolve_model
from advisor.plan import Plan, PlanError, build_plan, spelled_out
from advisor.probe.environment import visible_gpus
from advisor.probe.profiles import ProfileError, load_profile
from advisor.rules.engine import flag_values
from advisor.rules.registry import get as get_engine
from advisor.rules.registry import names as engine_names
from advisor.rules.sglang.common import MOE_A2A_BACKENDS
from advisor.versions import is_version, parse_release

EXIT_OK = 0
EXIT_ERRORS = 1  # problems of severity error (or warnings with --strict), or inputs that could not be read
EXIT_USAGE = 2  # the command line itself is wrong



class AdvisorError(Exception):
    """A one-line message naming the problem and the fix; ``exit_code`` is 1 for bad data, 2 for usage errors."""

    def __init__(self, message: str, exit_code: int = EXIT_ERRORS) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def usage_error(message: str) -> AdvisorError:
    return AdvisorError(message, EXIT_USAGE)


@dataclass(frozen=True, slots=True)
class Options:
    """The common options of the TUI, `check`, `explain`, `launch`, `layouts` and `diff`: one field per option of
    advisor.options (whose flags, kinds and help live there; the defaults here are click's too), plus two set otherwise.

    ``None`` means "not given": the defaults are resolved from the facts (see :func:`resolve`)."""

    model: str | None = None
    tp: int | None = None
    nnodes: int = 1
    dp_attention: bool = False
    dp_size: int | None = None  # None: the engine's own after --, else 1
    moe_a2a_backend: str = "none"
    engine: str | None = None
    engine_version: str | None = None
    dtype: str | None = None
    profile: str | None = None
    facts_file: str | None = None
    python: str | None = None
    with_package: tuple[str, ...] = ()
    strict: bool = False
    # Not command-line common options: explicit engine flags (after `--` or from the TUI) and the bundled runtime's mode.
    overrides: tuple[str, ...] = ()
    mode: str = "serve"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Options:
        """Build from click's parameter dict (or any mapping); keys that are not options are ignored."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in params.items() if k in known}
        for key in ("with_package", "overrides"):
            if key in values:
                values[key] = tuple(values[key] or ())
        return cls(**values)


# -- facts ---------------------------------------------------------------------------------------------------------------


# A distribution name (PEP 508); its version is checked by advisor.versions (PEP 440: 0.6.12, 2.9.1+cu128, 1.0rc1).
PACKAGE_NAME_PATTERN = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def parse_with_packages(specs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("flashinfer-python==0.6.12", ...)`` -> ``{"flashinfer-python": "0.6.12"}``; a malformed spec is a usage error."""
    versions: dict[str, str] = {}
    for spec in specs:
        name, sep, version = spec.partition("==")
        name, version = name.strip(), version.strip()
        if not sep or not name or not version or "=" in version or any(c.isspace() for c in name + version):
            raise usage_error(
                f"--with-package expects NAME==VERSION (for example flashinfer-python==0.6.12), got {spec!r}"
            )
        if not PACKAGE_NAME_PATTERN.fullmatch(name):
            raise usage_error(f"--with-package {spec!r}: {name!r} is not a package name; pass NAME==VERSION")
        if not is_version(version):
            raise usage_error(
                f"--with-package {spec!r}: {version!r} is not a version (PEP 440: 0.6.12, 2.9.1+cu128, 1.0rc1);"
                " pass NAME==VERSION"
            )
        versions[name] = version
    return versions


def load_facts(options: Options) -> Facts:
    """Facts from exactly one source (--profile, --facts FILE, or a live probe of this machine), then the packages of
    --python's interpreter, then the --with-package overrides."""
    if options.profile and options.facts_file:
        raise usage_error("--profile and --facts both name a machine; pass only one of them")
    overrides = parse_with_packages(options.with_package)  # validate before any slow probe
    if options.python is not None:
        _check_python_path(options.python)

    if options.profile:
        facts = _load_profile(options.profile)
    elif options.facts_file:
        facts = _load_file(options.facts_file)
    else:
        facts = _probe_live(options.python)
    if options.python is not None and (options.profile or options.facts_file):
        facts = _with_python_packages(facts, options.python)
    if overrides:
        facts = facts.with_packages(overrides)
    return facts


def _check_python_path(python: str) -> None:
    """A cheap check before probing: the path (or a name on PATH) must exist. An interpreter that is not there is an
    input that could not be used, like a missing facts file (exit 1, README "Exit codes"), not a usage error."""
    if os.sep in python or (os.altsep and os.altsep in python):
        if not os.path.exists(python):
            raise AdvisorError(f"--python {python}: no such file; pass the path of a Python interpreter")
    elif shutil.which(python) is None:
        raise AdvisorError(f"--python {python}: not found on PATH; pass the path of a Python interpreter")


def _load_profile(name: str) -> Facts:
    """The simulated machine, seen through this shell's CUDA_VISIBLE_DEVICES as the live probe sees a real one (an
    engine started with it set would see only those GPUs)."""
    try:
        facts = load_profile(name)
    except ProfileError as exc:
        raise usage_error(str(exc)) from None
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return facts

    visible, note = visible_gpus(value, facts.gpus)
    environment = {**facts.environment, "CUDA_VISIBLE_DEVICES": value}
    return replace(facts, visible_gpus=visible, visible_gpus_note=note, environment=environment)


def _load_file(path: str) -> Facts:
    try:
        return Facts.load(path)
    except FactsError as exc:
        raise AdvisorError(str(exc)) from None


def _probe_live(python: str | None) -> Facts:
    from advisor.probe.live import probe_live
    from advisor.probe.packages import PythonProbeError

    try:
        return probe_live(python=python)
    except PythonProbeError as exc:
        raise AdvisorError(str(exc)) from None


def _with_python_packages(facts: Facts, python: str) -> Facts:
    """Keep the machine from the profile or file, take the packages (and Python version) from another interpreter."""
    from advisor.probe.packages import PythonProbeError, python_facts

    try:
        version, executable, packages = python_facts(python)
    except PythonProbeError as exc:
        raise AdvisorError(str(exc)) from None
    return replace(
        facts,
        host=replace(facts.host, python=version),
        packages=tuple(packages),
        python_executable=executable,
        python_here=True,
    )


# -- defaults --------------------------------------------------------------------------------------------------------


def default_engine(facts: Facts) -> str:
    """sglang when the facts show it installed, else the bundled runtime."""
    return "sglang" if facts.package("sglang").installed else "bundled"


def default_tp(facts: Facts, engine: str, model: str | None) -> int:
    """The number of GPUs an engine would see; without GPUs 1, except an engine's demo model (the bundled runtime's runs
    2 gloo ranks)."""
    gpus = len(facts.engine_gpus)
    if gpus:
        return gpus
    demo_tp = get_engine(engine).demo_tp
    return demo_tp if demo_tp is not None and model is None else 1




def resolve(options: Options, facts: Facts | None = None) -> tuple[Facts, ModelSpec | None, Intent]:
    """Facts, the model (None: the bundled runtime's demo model) and the Intent, with every default filled in.

    ``facts``: already loaded for these options (the TUI caches them, so a form change does not probe again)."""
    for name in COUNT_OPTIONS:  # before any probe; tp None means "the default", resolved below
        value = getattr(options, name)
        message = None if value is None else count_error(name, value)
        if message:
            raise usage_error(message)
    if options.engine is not None and options.engine not in engine_names():
        raise usage_error(f"--engine {options.engine!r} is not an engine; choose one of {', '.join(engine_names())}")

    if options.engine_version is not None and parse_release(options.engine_version.strip()) is None:
        raise usage_error(
            f"--engine-version {options.engine_version!r} is not a release number; pass X.Y.Z, e.g. 0.5.14"
        )

    backend = options.moe_a2a_backend
    if backend is not None and backend not in MOE_A2A_BACKENDS:
        raise usage_error(f"--moe-a2a-backend {backend!r} is not a backend SGLang knows; choose one of {', '.join(MOE_A2A_BACKENDS)}")
    if facts is None:
        facts = load_facts(options)
    engine = options.engine or default_engine(facts)
    if options.dtype is not None and options.dtype not in (dtypes := get_engine(engine).dtypes):
        raise usage_error(
            f"--dtype {options.dtype!r} is not a dtype {engine} accepts; choose one of {', '.join(dtypes)}"
        )
    model = _resolve_model(options.model, engine)
    spec = get_engine(engine)
    # Options carries every field of Intent (same names); the defaults resolved here replace the "not given" ones. The
    # engine arguments are read as the release's parser reads them (an abbreviation as its option) before its tp is.
    given = {f.name: getattr(options, f.name) for f in fields(Intent)}
    intent = spelled_out(facts, Intent(**{**given, "tp": 1, "dp_size": 1, "engine": engine,
                                          "overrides": tuple(options.overrides)}))  # fmt: skip
    tp = options.tp if options.tp is not None else _engine_count(spec.tp_flags, intent.overrides)
    if tp is None:
        tp = default_tp(facts, engine, options.model)
    dp_size = options.dp_size if options.dp_size is not None else _engine_count(spec.dp_flags, intent.overrides)
    return facts, model, replace(intent, tp=tp, dp_size=dp_size or 1)


def _engine_count(flags: tuple[str, ...], overrides) -> int | None:
    """The size (tensor- or data-parallel) the engine arguments after -- set in the engine's own spellings ``flags``
    (the last one, as its parser keeps), adopted when the advisor's own option is not given: the plan says so
    (<engine>_argument_in_plan). None: not set there, or not a whole number >= 1 (the plan reports that value)."""
    values = flag_values(tuple(overrides), *flags, next_flag="--") if flags else []
    raw = values[-1] if values else None
    try:
        size = int(raw) if raw is not None else None
    except ValueError:
        return None
    return size if size is not None and size >= 1 else None


def _resolve_model(ref: str | None, engine: str) -> ModelSpec | None:
    if ref is None:
        if get_engine(engine).demo_tp is not None:
            return _demo_spec()
        raise usage_error(
            f"{engine} needs a model: pass --model ID|DIR (a Hugging Face id such as Qwen/Qwen3-30B-A3B, or a local"
            " model directory)"
        )

    try:
        return resolve_model(ref)
    except ModelError as exc:
        raise AdvisorError(str(exc)) from None


def _demo_spec() -> ModelSpec | None:
    """The bundled runtime's demo model (catalog entry "demo"), so the rules see its real shape; None if absent."""
    try:
        return catalog_spec(DEMO_ID)
    except ModelError:
        return None


def make_plan(options: Options) -> Plan:
    """The whole path: options -> Facts, ModelSpec, Intent -> Plan."""
    facts, model, intent = resolve(options)
    return plan_for(facts, model, intent)


def plan_for(facts: Facts, model: ModelSpec | None, intent: Intent) -> Plan:
    """build_plan with its errors turned into AdvisorError (for callers that resolve once and re-plan, like the TUI)."""
    try:
        return build_plan(facts, model, intent)
    except PlanError as exc:
        raise usage_error(str(exc)) from None


def exit_code_for(plan: Plan, strict: bool = False) -> int:
    """0 without errors; 1 with errors, or with warnings under --strict."""
    severities = {p.severity for p in plan.problems}
    if "error" in severities or (strict and "warning" in severities):
        return EXIT_ERRORS
    return EXIT_OK
