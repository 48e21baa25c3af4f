"""What every compatibility check reads: the check context (facts, model, intent, the flashinfer prediction, the plan's
fusion decision), the severities and the small helpers the topic modules share (checks_flashinfer, checks_parallel,
checks_memory, checks_platform, checks_machine). advisor/rules/checks.py runs them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.facts import Facts, Gpu
from advisor.formats import gib
from advisor.models import ModelSpec, dtype_bytes
from advisor.rules import flashinfer as fi
from advisor.rules import registry
from advisor.rules.engine import Forcing, Problem
from launcher.runtime.contract import FUSION_MAJORS_BEFORE_SM12

if TYPE_CHECKING:
    from advisor.intent import Intent
    from advisor.rules.engine import Engine

ERROR, WARNING, INFO = "error", "warning", "info"
GIB = 1024**3
MIB = 1024**2

FUSION = "flashinfer_allreduce_fusion"  # the decision id whose forcing flags the fusion estimate reads


@dataclass(frozen=True, slots=True)
class _Context:
    facts: Facts
    model: ModelSpec | None
    intent: Intent
    prediction: fi.ImportPrediction
    fusion_decided: bool | None  # the plan's fusion decision, None to estimate it (fusion())
    custom_allreduce: bool | None = None  # whether the engine sets its custom allreduce up (tries_custom_allreduce)

    @property
    def engine(self) -> Engine | None:
        """The plan's engine as the registry models it; None for a name no engine is registered under."""
        if self.intent.engine not in registry.names():
            return None
        return registry.get(self.intent.engine)

    @property
    def tp_per_node(self) -> int:
        return self.intent.gpus_per_node

    @property
    def gpus_used(self) -> tuple[Gpu, ...]:
        return self.facts.engine_gpus[: self.tp_per_node]

    @property
    def dtype(self) -> str | None:
        dtype = self.intent.dtype if self.intent.dtype not in (None, "auto") else None
        return dtype or (self.model.dtype if self.model else None)

    def forced_on(self) -> bool:
        """An engine argument that forces the fusion on, in any registered engine's spelling."""
        return any(f.forces_on(self.intent.overrides) for f in _fusion_forcing(self.intent.overrides))

    def forced_off(self) -> bool:
        return any(f.forces_off(self.intent.overrides) for f in _fusion_forcing(self.intent.overrides))

    def fusion(self) -> bool | None:
        """Would an engine try FlashInfer's fused allreduce here? The plan's decision when given, else an estimate."""
        if self.fusion_decided is not None:
            return self.fusion_decided
        if self.forced_off():
            return False
        if self.intent.tp < 2 or self.intent.dp_attention:
            return False
        pred = self.prediction
        if pred.importable is False or pred.has_fusion_api is False:
            return False
        if self.dtype and dtype_bytes(self.dtype) not in (2, None):
            return False
        if self.tp_per_node < 2 and self.intent.nnodes == 1:
            return False
        gpus = self.gpus_used
        majors = {g.capability[0] for g in gpus if g.capability}
        if majors and not majors <= set(pred.fusion_majors or FUSION_MAJORS_BEFORE_SM12):
            return False
        if pred.importable is None or not gpus or any(g.capability is None for g in gpus):
            return None
        return True


def _fusion_forcing(overrides: tuple[str, ...]) -> list[Forcing]:
    """Every registered engine's flags that force the fusion (none to read without engine arguments)."""
    if not overrides:
        return []
    return [e.forcing[FUSION] for e in registry.engines() if FUSION in e.forcing]


def _cannot(problem_id: str, what: str, reason: str, source: str, packages: tuple[str, ...] = ()) -> Problem:
    return Problem(problem_id, INFO, f"cannot check {what}: {reason}", "probe on the target machine", source, packages)


def _gib(n: float) -> str:
    return gib(n)
