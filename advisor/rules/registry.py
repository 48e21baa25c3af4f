"""The engines the advisor models, one line each.

An engine is a package under advisor/rules/ whose engine.py exports ``ENGINE`` (an advisor.rules.engine.Engine): its
releases, release resolution, decisions, forcing flags, command and install hint. Adding an engine is that package plus
one line in ENGINES; adding a release is one row in the engine's tables. The plan, the CLI, completion, the TUI and the
checks ask this module, never name an engine themselves.

Only names and module paths live here, so listing the engines (`--engine` choices, `--help`) imports no rules; an
engine's module is imported the first time it is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.rules.engine import Engine

# name -> the module that exports the engine's ENGINE. The first is the default engine of a machine without SGLang.
ENGINES: dict[str, str] = {
    "bundled": "advisor.rules.bundled.engine",
    "sglang": "advisor.rules.sglang.engine",
    "vllm": "advisor.rules.vllm.engine",
}


class UnknownEngine(KeyError):
    """No engine of that name; the message names the registered ones."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown engine"


def names() -> tuple[str, ...]:
    """The registered engine names, in registry order."""
    return tuple(ENGINES)


def get(name: str) -> Engine:
    """The engine called ``name``; :class:`UnknownEngine` (one line naming the choices) when none is."""
    if name not in ENGINES:
        raise UnknownEngine(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    engine = importlib.import_module(ENGINES[name]).ENGINE
    if engine.name != name:
        raise UnknownEngine(f"{ENGINES[name]} exports engine {engine.name!r}, registered as {name!r}")
    return engine


def engines() -> tuple[Engine, ...]:
    """Every registered engine (imports their rules)."""
    return tuple(get(name) for name in ENGINES)


def modelled_releases(engine: str) -> tuple[str, ...]:
    """The releases whose rules the advisor models, oldest first (vLLM: every release where a modelled behaviour changes);
    none for an engine without releases or one that is not registered."""
    return get(engine).releases if engine in ENGINES else ()


def versioned() -> tuple[str, ...]:
    """The engines with modelled releases (`advisor diff` compares two of them)."""
    return tuple(e.name for e in engines() if e.releases)
