"""The vocabulary of rules: conditions, verdicts, decisions and problems.

A release of an engine is a table of Rules (data plus small predicates), not an if-chain. Every condition of a rule is
evaluated, never short-circuited, so the user sees every blocker at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Decision states (ARCHITECTURE.md, "Contracts").
AUTO_ENABLED = "auto-enabled"
NOT_ENABLED = "not-enabled"
FORCED_ON = "forced-on"
FORCED_OFF = "forced-off"
UNAVAILABLE = "unavailable"
STATES = (AUTO_ENABLED, NOT_ENABLED, FORCED_ON, FORCED_OFF, UNAVAILABLE)


@dataclass(frozen=True)
class Source:
    """Where a rule comes from: the release it models, the file, and the PR or issue that explains it."""

    release: str  # "sglang v0.5.14"
    file: str  # "python/sglang/srt/server_args.py"
    ref: str | None = None  # "PR #28786"

    def __str__(self) -> str:
        return f"{self.release}, {self.file}" + (f" ({self.ref})" if self.ref else "")


@dataclass(frozen=True)
class ConditionResult:
    """One evaluated condition. ``ok`` is None when the facts needed to decide are unknown."""

    id: str
    text: str  # "GPU is SM90 or SM100"
    ok: bool | None
    observed: Any
    expected: Any
    why: str  # why the condition exists
    fix: str  # how to change the outcome


@dataclass(frozen=True)
class Decision:
    id: str  # "flashinfer_allreduce_fusion"
    title: str
    state: str  # one of STATES
    enabled: bool
    value: Any = None  # the resolved setting where a decision picks one ("fa3", "auto", {...})
    conditions: tuple[ConditionResult, ...] = ()
    flags: tuple[str, ...] = ()  # engine flags this decision puts on the command line
    source: Source | None = None
    notes: tuple[str, ...] = ()  # what happens at run time, log lines to expect, ordering subtleties

    @property
    def failed(self) -> tuple[ConditionResult, ...]:
        return tuple(c for c in self.conditions if c.ok is False)

    @property
    def undecided(self) -> tuple[ConditionResult, ...]:
        return tuple(c for c in self.conditions if c.ok is None)


@dataclass(frozen=True)
class Problem:
    id: str  # "flashinfer_version_mismatch"
    severity: str  # "error" | "warning" | "info"
    message: str
    fix: str
    source: str | None = None  # what behaviour it predicts ("flashinfer-python 0.6.12, flashinfer/__init__.py")


@dataclass(frozen=True)
class ReleaseOutcome:
    """One row of the release matrix: the fusion decision under one modelled release."""

    release: str
    enabled: bool
    failed_conditions: tuple[str, ...] = field(default_factory=tuple)
