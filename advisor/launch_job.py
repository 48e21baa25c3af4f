"""`advisor launch --on slurm|kubernetes|skypilot`: write the scheduler's job file for the plan (to -o FILE, else
stdout) and, with --submit, hand it to the scheduler's tool. Nothing else is written or started.

Exit codes: 0 written (and submitted: the tool's own status), 1 the plan has errors (without --force) or the tool is
not on PATH or the file cannot be written, 2 usage (an option the job cannot take, a plan a job cannot start).
"""

from __future__ import annotations

import click

from advisor.context import EXIT_ERRORS, EXIT_USAGE, AdvisorError
from advisor.schedulers import TARGETS, JobSettings, job_text
from advisor.schedulers.job import JobError
from advisor.schedulers.submit import submit, tool_missing
from launcher.files import FileRefused, output_target, write_text_atomic


def write_job(plan, target: str, settings: JobSettings, *, output: str | None, do_submit: bool, force: bool) -> int:
    """Write (and maybe submit) the job; the exit code. AdvisorError for every refusal, before anything is written."""
    if output == "":
        raise AdvisorError("-o/--output needs a file name (or - for stdout)", EXIT_USAGE)
    if do_submit and not output:
        raise AdvisorError("--submit needs -o FILE: the scheduler's tool reads the job from a file", EXIT_USAGE)
    module = TARGETS[target]
    try:
        text = job_text(plan, target, settings)
    except JobError as exc:
        raise AdvisorError(str(exc), EXIT_USAGE) from None
    errors = sum(p.severity == "error" for p in plan.problems)
    if errors and not force:
        raise AdvisorError(f"not writing the job: the plan has {errors} error(s) (listed above); fix them, or pass"
                           " --force to write it anyway", EXIT_ERRORS)  # fmt: skip
    if do_submit and (missing := tool_missing(module.TOOL)):
        raise AdvisorError(missing, EXIT_ERRORS)
    if not output or output == "-":
        click.echo(text, nl=False)
        return 0
    try:
        output_target(output, "job file")
        write_text_atomic(output, text, "job file")
    except FileRefused as exc:
        raise AdvisorError(str(exc), EXIT_ERRORS) from None
    except OSError as exc:
        raise AdvisorError(
            f"cannot write {output}: {exc.strerror or exc}; choose a writable path", EXIT_ERRORS
        ) from None
    click.echo(f"wrote the {target} job to {output}", err=True)
    if not do_submit:
        click.echo(f"submit it with: {' '.join(module.TOOL)} {output}", err=True)
        return 0
    try:
        return submit(module.TOOL, output)
    except JobError as exc:  # the tool went missing since the check
        raise AdvisorError(str(exc), EXIT_ERRORS) from None
