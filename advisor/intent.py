"""What the user asked for (CLI flags or the TUI form), and the one check of its numbers.

`advisor.context.resolve` checks the counts given on the command line before it probes anything
(:func:`count_error`); `advisor.plan.build_plan` and the bundled command builder check the whole intent (:meth:`Intent.error`).
The limits and the messages are written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.options import COMMON, NUMBER

# The counts of an intent, with the option that sets each (messages name the option): advisor.options' whole numbers.
COUNT_OPTIONS = {o.field: o.flag for o in COMMON if o.kind == NUMBER}


@dataclass(frozen=True, slots=True)
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

    @property
    def gpus_per_node(self) -> int:
        """GPUs (ranks) each node runs: tp split evenly over the nodes (intent_error refuses an uneven split); >= 1."""
        return max(1, self.tp // max(1, self.nnodes))

    def error(self) -> str | None:
        """Why this intent cannot be planned or launched (a count below 1, a tp that does not split evenly over the
        nodes), as one line naming the fix; None when it can."""
        for name in COUNT_OPTIONS:
            message = count_error(name, getattr(self, name))
            if message:
                return message
        if self.tp % self.nnodes:
            return f"tp {self.tp} does not split evenly over {self.nnodes} nodes; choose a tp divisible by --nnodes"
        return None


def count_error(name: str, value: object) -> str | None:
    """The one-line message when the count ``name`` ("tp", "nnodes", "dp_size") is not a whole number >= 1."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    flag = COUNT_OPTIONS[name]
    return f"{flag} must be a whole number >= 1, got {value!r}; pass e.g. {flag} 1"

