"""Intent + Facts + ModelSpec -> Plan.

(Contract stub: build_plan is filled in by issue 3.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.facts import Facts
from advisor.models import ModelSpec
from advisor.rules.engine import Decision, Problem, ReleaseOutcome


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
