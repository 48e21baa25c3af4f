"""The node script SLURM's step and SkyPilot's ``run`` share: on each node, check it (the engine release installed, then
`advisor check --strict`), then start the head's or a worker's command.

    node_script(job, rank="$SLURM_NODEID", head="$TP_ADVISOR_HEAD") -> str   (bash; rank and head are shell expressions)
"""

from __future__ import annotations

import shlex

from advisor import __version__
from advisor.schedulers.job import HEAD, RANK, Job

# Set to 0 in the job's environment to skip the pre-flight checks (an image without tp-advisor, say).
PREFLIGHT_SWITCH = "TP_ADVISOR_PREFLIGHT"
# The nodes check themselves with this advisor's own release (the same rules that made the plan).
ADVISOR_INSTALL = f"pip install 'tp-advisor=={__version__}'"


def word(token: str, *, rank: str, head: str) -> str:
    """``token`` quoted for bash, with the placeholders replaced by the shell expressions ``rank`` and ``head``."""
    if HEAD not in token and RANK not in token:
        return shlex.quote(token)
    inner = token.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    return '"' + inner.replace(HEAD, head).replace(RANK, rank) + '"'


def command(argv: tuple[str, ...], *, rank: str, head: str) -> str:
    return " ".join(word(t, rank=rank, head=head) for t in argv)


def node_script(job: Job, *, rank: str, head: str, host: str = "$(hostname)") -> str:
    """The bash run on every node: ``rank`` and ``head`` expand there to the node's rank and the head's address."""
    where = f"node {rank} ({host})"
    lines = ["set -euo pipefail", f'rank="{rank}"', f'echo "{where}: rank $rank of {job.nnodes}, head {head}" >&2']
    checks = _version_check(job, where) + _preflight(job, where)
    if checks:
        lines += [f'if [ "${{{PREFLIGHT_SWITCH}:-1}}" != 0 ]; then', *("  " + line for line in checks), "fi"]
    lines += [
        'if [ "$rank" -eq 0 ]; then',
        "  exec " + command(job.head, rank="$rank", head=head),
        "else",
        "  exec " + command(job.worker, rank="$rank", head=head),
        "fi",
    ]
    return "\n".join(lines) + "\n"


def _version_check(job: Job, where: str) -> list[str]:
    """The engine release installed on the node must be the plan's: a node on another release hangs or fails late."""
    if not job.version:
        return []
    package = job.engine.package
    probe = [job.python, "-c", f'import importlib.metadata as m; print(m.version("{package}"))']
    return [
        f"installed=$({shlex.join(probe)} 2>/dev/null || echo none)",
        f'if [ "$installed" != {shlex.quote(job.version)} ]; then',
        f'  echo "{where}: {package} $installed is installed, the plan is for {package} {job.version};'
        f' install it with: {job.install}" >&2',
        "  exit 1",
        "fi",
    ]


def _preflight(job: Job, where: str) -> list[str]:
    return [
        "if ! command -v advisor >/dev/null 2>&1; then",
        f'  echo "{where}: tp-advisor is not installed here ({ADVISOR_INSTALL}), or set'
        f' {PREFLIGHT_SWITCH}=0 to skip the pre-flight checks" >&2',
        "  exit 1",
        "fi",
        f"if ! {shlex.join(job.preflight)} >&2; then",
        f'  echo "{where}: the pre-flight check failed (see above); the job ends before the engine starts" >&2',
        "  exit 1",
        "fi",
    ]
