"""Hand a written job file to its scheduler's own tool (sbatch, kubectl apply -f, sky launch)."""

from __future__ import annotations

import shutil
import subprocess

from advisor.schedulers.job import JobError


def tool_missing(tool: tuple[str, ...]) -> str | None:
    """The one-line error when the scheduler's tool is not on PATH (checked before anything is written), else None."""
    if shutil.which(tool[0]) is not None:
        return None
    return (f"{tool[0]} is not on PATH, so the job cannot be submitted from here; install it, or drop --submit and run"
            f" `{' '.join(tool)} FILE` where it is")  # fmt: skip


def submit(tool: tuple[str, ...], path: str) -> int:
    """Run ``tool path`` in the foreground and return its exit status; JobError when the tool is not on PATH."""
    program = shutil.which(tool[0])
    if program is None:
        raise JobError(tool_missing(tool) or tool[0])
    return subprocess.run([program, *tool[1:], path], check=False).returncode
