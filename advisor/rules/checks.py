"""Compatibility checks: what will break (or silently degrade) for this machine, model and intent.

Each check returns Problems (id, severity error|warning|info, message, fix, source, and the packages the problem is
about, which the package table marks). Problem ids are stable (see docs/architecture.md, "Contracts"). Every check degrades when the facts it needs are unknown: it skips, or says what it
cannot check and why; none of them raises.

The checks are grouped by topic: checks_flashinfer, checks_parallel, checks_memory, checks_platform and
checks_machine (launch pitfalls of the machine itself); checks_context holds what they share. Background: docs/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts import Facts
from advisor.models import (
    ModelSpec,
    weight_bytes_per_param,  # noqa: F401 - imported from here
)
from advisor.rules import flashinfer as fi
from advisor.rules.checks_context import (  # noqa: F401 - names other modules import from here
    INFO,
    _Context,
)
from advisor.rules.checks_flashinfer import (
    check_flashinfer_gpu_arch,
    check_flashinfer_import,
    check_jit_cache_cuda,
    check_torch_cuda_vs_driver,
)
from advisor.rules.checks_machine import MACHINE_CHECKS
from advisor.rules.checks_parallel import check_tp_divisibility, check_tp_vs_gpus
from advisor.rules.checks_platform import (
    check_engine_installed,
    check_mig,
    check_multicast,
    check_no_gpus,
    check_pynvml,
)
from advisor.rules.engine import Problem

if TYPE_CHECKING:  # advisor.plan imports this module
    from collections.abc import Callable

    from advisor.intent import Intent


def run_checks(facts: Facts, model: ModelSpec | None, intent: Intent, *, fusion: bool | None = None,
               prediction: fi.ImportPrediction | None = None,
               custom_allreduce: bool | None = None) -> list[Problem]:  # fmt: skip
    """Every compatibility check, in a stable order.

    ``fusion`` is the plan's fusion decision when known (enabled or not); None lets the checks estimate whether an engine
    would try FlashInfer's fused allreduce from the GPUs, tp and the installed flashinfer. ``prediction``: the plan's
    ``predict_import(facts)`` when it already has one. ``custom_allreduce``: the plan's custom allreduce decision
    (None: the machine checks estimate it).
    """
    if prediction is None:
        prediction = fi.predict_import(facts)
    context = _Context(facts, model, intent, prediction, fusion, custom_allreduce)
    problems: list[Problem] = []
    for check in CHECKS:
        try:
            problems.extend(check(context))
        except Exception as exc:  # a check bug must not hide every other finding
            problems.append(
                Problem(
                    id="check_failed",
                    severity=INFO,
                    message=f"check {check.__name__.removeprefix('check_')} could not run: {type(exc).__name__}: {exc}",
                    fix="report this to tp-advisor with `advisor probe -o facts.json` attached",
                    source="advisor/rules/checks.py",
                )
            )
    return problems


CHECKS: tuple[Callable[[_Context], list[Problem]], ...] = (
    check_no_gpus,
    check_engine_installed,
    check_flashinfer_import,
    check_jit_cache_cuda,
    check_torch_cuda_vs_driver,
    check_flashinfer_gpu_arch,
    check_tp_vs_gpus,
    check_tp_divisibility,
    check_multicast,
    check_mig,
    check_pynvml,
    *MACHINE_CHECKS,  # advisor/rules/checks_machine.py: launch pitfalls of the machine itself
)
