"""SLURM: an sbatch script that runs one step over all nodes, one task per node; each task runs the node script
(advisor/schedulers/shell.py) with its rank from SLURM_NODEID and the head from the allocation's first host name.

Sources: SLURM's sbatch and srun manuals (--nodes, --ntasks-per-node, --gpus-per-node, --exclusive,
--kill-on-bad-exit; SLURM_JOB_NODELIST, SLURM_NODEID), `scontrol show hostnames`; pyxis's --container-image for srun;
SGLang's SLURM example (docs/references/multi_node_deployment/multi_node.md).
"""

from __future__ import annotations

import shlex

from advisor import __version__
from advisor.schedulers.job import Job
from advisor.schedulers.shell import PREFLIGHT_SWITCH, node_script

NEEDS_IMAGE = False  # a container is optional (pyxis/enroot, with --image)
TOOL = ("sbatch",)
HEAD_VARIABLE = "TP_ADVISOR_HEAD"


def render(job: Job) -> str:
    srun = ["srun", f"--nodes={job.nnodes}", f"--ntasks={job.nnodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    if job.image:
        srun += [f"--container-image={job.image}"]  # pyxis (enroot) runs the step in the image
    step = node_script(job, rank="$SLURM_NODEID", head=f"${HEAD_VARIABLE}").rstrip("\n")
    end = heredoc_end(step)
    lines = [
        "#!/bin/bash",
        f"# Written by tp-advisor {__version__}: {job.summary()}. Submit with: sbatch FILE",
        f"# Every node checks itself first (set {PREFLIGHT_SWITCH}=0 to skip); the server answers on the first node's"
        f" port {job.http_port}.",
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --nodes={job.nnodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={job.gpus_per_node}",
        "#SBATCH --exclusive",
        f"#SBATCH --output={job.name}-%j.out",
        "set -euo pipefail",
        "",
        "# The head is the allocation's first node; SLURM numbers it node 0 (SLURM_NODEID). sed, not head: it reads",
        "# the whole list, so scontrol never ends on SIGPIPE (a failure under pipefail).",
        f'{HEAD_VARIABLE}=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',
        f"export {HEAD_VARIABLE}",
        *(f"export {name}={shlex.quote(value)}" for name, value in job.env.items()),
        f'echo "{job.name}: {job.nnodes} nodes, head ${HEAD_VARIABLE}" >&2',
        "",
        "# What each node runs (quoted: expanded on the node, not here).",
        f"read -r -d '' NODE_STEP <<'{end}' || true",
        step,
        end,
        "",
        shlex.join(srun) + ' bash -c "$NODE_STEP"',
    ]
    return "\n".join(lines) + "\n"


def heredoc_end(body: str, word: str = "STEP") -> str:
    """A here-document delimiter no line of ``body`` equals (an engine argument may hold a newline and that word: the
    document would end there and the rest run as the batch script's own lines)."""
    lines = set(body.split("\n"))  # bash ends a here-document at a line of exactly the word, split at \n only
    end, n = word, 0
    while end in lines:
        n += 1
        end = f"{word}_{n}"
    return end
