"""Scheduler job files for a multi-node plan: `advisor launch --on slurm|kubernetes|skypilot`.

    job_text(plan, target, settings) -> str      the job file's text for one target
    TARGETS                                      the targets, each a module with ``render(job) -> str``

``job.py`` turns a plan into a :class:`~advisor.schedulers.job.Job` (one argv for the head node, one for the other
nodes, with the head address and node rank left as placeholders each target fills in its own way); ``slurm.py``,
``kubernetes.py`` and ``skypilot.py`` write it for their scheduler, ``shell.py`` holds the node script SLURM and
SkyPilot share, and ``submit.py`` hands a written file to the scheduler's own tool. What differs between engines comes
from the engine's package (``Engine.multinode``, advisor/rules/<engine>/multinode.py).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from advisor.schedulers import kubernetes, skypilot, slurm
from advisor.schedulers.job import JobSettings, make_job

if TYPE_CHECKING:
    from advisor.plan import Plan

TARGETS: dict[str, ModuleType] = {"slurm": slurm, "kubernetes": kubernetes, "skypilot": skypilot}


def job_text(plan: Plan, target: str, settings: JobSettings) -> str:
    """The job file ``target`` runs ``plan`` with; raises JobError (one line naming the fix) when it cannot."""
    module = TARGETS[target]
    return module.render(make_job(plan, settings, needs_image=module.NEEDS_IMAGE))


__all__ = ["TARGETS", "JobSettings", "job_text"]
