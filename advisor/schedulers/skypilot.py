"""SkyPilot: a task YAML with ``num_nodes`` and the node's GPUs as ``resources.accelerators``; the ``setup`` installs
the plan's engine release and the ``run`` script is the node script (advisor/schedulers/shell.py) with the head from
the first line of SKYPILOT_NODE_IPS and the rank from SKYPILOT_NODE_RANK.

Sources: SkyPilot's task YAML reference (docs/source/reference/yaml-spec.rst) and its distributed-jobs guide
(docs/source/running-jobs/distributed-jobs.rst), which name both variables.
"""

from __future__ import annotations

import re
from typing import Any

from advisor import __version__
from advisor.schedulers.job import Job, JobError
from advisor.schedulers.shell import ADVISOR_INSTALL, node_script
from advisor.schedulers.yaml_text import dump

NEEDS_IMAGE = False  # the cloud's own image unless --image names one
TOOL = ("sky", "launch")
# NVML's GPU name -> SkyPilot's accelerator name (`sky show-gpus`): the first pattern that matches wins.
ACCELERATORS = (
    (r"\bGB200\b", "GB200"),
    (r"\bB200\b", "B200"),
    (r"\bH200\b", "H200"),
    (r"\bH100\b", "H100"),
    (r"\bA100\b.*80\s*GB", "A100-80GB"),
    (r"\bA100\b", "A100"),
    (r"\bL40S\b", "L40S"),
    (r"\bL4\b", "L4"),
    (r"\bA10G\b", "A10G"),
)


def render(job: Job) -> str:
    task: dict[str, Any] = {
        "name": job.name,
        "num_nodes": job.nnodes,
        "resources": {"accelerators": f"{accelerator(job.gpu_name)}:{job.gpus_per_node}", "ports": job.http_port},
    }
    if job.image:
        task["resources"]["image_id"] = f"docker:{job.image}"
    if job.env:
        task["envs"] = dict(job.env)
    setup = [job.install] if job.install and not job.image else []
    if ADVISOR_INSTALL not in setup:
        setup.append(f"{ADVISOR_INSTALL}  # the pre-flight check on every node")
    task["setup"] = "\n".join(setup) + "\n"
    head = '$(echo "$SKYPILOT_NODE_IPS" | head -n 1)'
    task["run"] = node_script(job, rank="$SKYPILOT_NODE_RANK", head=head)
    header = (f"Written by tp-advisor {__version__}: {job.summary('nodes')}.\n"
              f"Launch with: sky launch FILE; the server answers on the head node's port {job.http_port}.")  # fmt: skip
    return dump([task], header=header)


def accelerator(gpu_name: str | None) -> str:
    """SkyPilot's name for the GPU; JobError for one it has no name for here."""
    for pattern, name in ACCELERATORS:
        if gpu_name and re.search(pattern, gpu_name):
            return name
    known = ", ".join(name for _, name in ACCELERATORS)
    raise JobError(f"no SkyPilot accelerator name for GPU {gpu_name or 'unknown'}; plan on one of {known}"
                   " (--profile or --facts of such a machine)")  # fmt: skip
