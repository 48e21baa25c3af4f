"""What the app knows and computes, without any Textual: options -> facts -> plan.

The screens call `Session.evaluate` from a thread worker, so nothing here may touch widgets. Facts are cached per
source (live / profile / file / python / package overrides) because probing is the slow part and most form changes
(tp, engine, release) only need the rules re-run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from advisor import context
from advisor.context import AdvisorError, Options, load_facts
from advisor.diff import build_diff, diff_lines
from advisor.facts import Facts
from advisor.layouts import build_layouts
from advisor.models import catalog_ids, hf_cache_ids
from advisor.plan import Plan
from advisor.probe.profiles import list_profiles, profile_summary
from advisor.rules.registry import modelled_releases
from advisor.sanitize import clean

LIVE = "live"  # the profile selector's value for "this machine"
FILE = "file"  # the profile selector's value for "the --facts file given on the command line"



@dataclass(frozen=True)
class Evaluation:
    """One run of the rules for one set of options. Exactly one of ``plan`` and ``error`` is set."""

    options: Options
    facts: Facts | None
    plan: Plan | None
    error: str | None
    generation: int = 0


def probes(options: Options) -> bool:
    """True when loading the facts for ``options`` runs something that may be slow: a probe of this machine (NVML on a
    driver without persistence mode can take seconds) or of another Python's packages (``--python``). A simulated
    machine or a facts file alone is read and computed in a few tens of milliseconds."""
    return options.python is not None or not (options.profile or options.facts_file)


def facts_key(options: Options) -> tuple:
    """Everything that changes which facts are loaded (not the rules' inputs)."""
    return (options.profile, options.facts_file, options.python, tuple(options.with_package or ()))


class Session:
    """Turns options into an Evaluation; safe to call from worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._facts: dict[tuple, Facts] = {}

    def forget_facts(self) -> None:
        """Drop cached facts so the next evaluation probes again (the `r` key)."""
        with self._lock:
            self._facts.clear()

    def facts_for(self, options: Options) -> Facts:
        key = facts_key(options)
        with self._lock:
            cached = self._facts.get(key)
        if cached is not None:
            return cached
        facts = load_facts(options)
        with self._lock:
            self._facts[key] = facts
        return facts

    def evaluate(self, options: Options, generation: int = 0) -> Evaluation:
        """Never raises: a bad option or a failing module becomes ``error``, a one-line message the panel shows."""
        facts = None
        try:
            facts = self.facts_for(options)
            plan = self._plan(options, facts)
        except AdvisorError as exc:
            return Evaluation(options, facts, None, str(exc), generation)
        except Exception as exc:  # a bug elsewhere must not take the app down; show it instead
            return Evaluation(options, facts, None, f"{type(exc).__name__}: {exc}", generation)
        return Evaluation(options, plan.facts, plan, None, generation)

    def layouts(self, options: Options) -> tuple[Any, str | None]:
        """(the `advisor layouts` report for these options, None) or (None, a one-line error); never raises."""
        try:
            facts, model, intent = context.resolve(options, facts=self.facts_for(options))
            return build_layouts(facts, model, intent), None
        except AdvisorError as exc:
            return None, str(exc)
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def diff_lines(self, options: Options, release_from: str, release_to: str) -> list[str]:
        """What `advisor diff --from --to` prints for these options; an error is one line."""
        try:
            facts, model, intent = context.resolve(options, facts=self.facts_for(options))
            return diff_lines(build_diff(facts, model, intent, release_from, release_to),
                              {True: "✓", False: "✗", None: "?"})  # fmt: skip
        except AdvisorError as exc:
            return [f"✗ {exc}"]
        except Exception as exc:
            return [f"✗ {type(exc).__name__}: {exc}"]

    def _plan(self, options: Options, facts: Facts) -> Plan:
        """The CLI's own path (context.resolve + plan_for), with the facts already loaded."""
        facts, model, intent = context.resolve(options, facts=facts)
        return context.plan_for(facts, model, intent)


def profile_choice(options: Options) -> str:
    """The profile selector's value for these options."""
    if options.profile:
        return options.profile
    if options.facts_file:
        return FILE
    return LIVE


def apply_profile_choice(options: Options, choice: str, original: Options) -> Options:
    """Options for a profile selector value; FILE goes back to the facts file the app was started with."""
    if choice == LIVE:
        return replace(options, profile=None, facts_file=None)
    if choice == FILE:
        return replace(options, profile=None, facts_file=original.facts_file)
    return replace(options, profile=choice, facts_file=None)


def releases_for(engine: str) -> list[str]:
    """Modelled releases of an engine, oldest first (none for the bundled runtime)."""
    return list(modelled_releases(engine))


def model_suggestions() -> list[str]:
    """Model ids to complete in the form: the bundled catalog, then the local Hugging Face cache."""
    ids: list[str] = []
    for source in (catalog_ids, hf_cache_ids):
        try:  # a cache directory named with control characters is no id to suggest (nor to show)
            ids.extend(i for i in source() if i not in ids and clean(i, newlines=False) == i)
        except Exception:  # an unreadable cache must not stop the app
            continue
    return ids


def profile_names() -> list[tuple[str, str]]:
    """(name, one-line summary) for every simulated machine."""
    out = []
    for name in list_profiles():
        try:
            out.append((name, profile_summary(name)))
        except Exception:
            out.append((name, ""))
    return out
