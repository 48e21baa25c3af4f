"""A finding the plan reports: what will break or surprise, and the fix. Its own module so that the FlashInfer
prediction (advisor.rules.flashinfer) and the rule vocabulary (advisor.rules.engine, which re-exports it) both use it
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    id: str  # "flashinfer_version_mismatch"
    severity: str  # "error" | "warning" | "info"
    message: str
    fix: str
    source: str | None = None  # what behaviour it predicts ("flashinfer-python 0.6.12, flashinfer/__init__.py")
    # The normalised distribution names the problem is about ("flashinfer-python", "torch"), set by the check that
    # raises it; the package table marks these and only these. Empty for problems about the machine, layout or model.
    packages: tuple[str, ...] = ()


class EngineCommandError(ValueError):
    """The plan cannot be turned into the engine's command line; the message is one line naming the fix. Here, beside
    Problem, because advisor.plan turns it into one and the command builders (which import advisor.plan) raise it."""
