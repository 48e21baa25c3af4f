"""`advisor launch`: resolve the plan, say in a few lines what is on and why, then start the engine with exactly those flags.

The plan summary, the run directory and the launcher's own lines go to stderr; the engine's rank-0 stdout goes to stdout
unchanged (so `advisor launch --mode generate -- --json | jq` works); other ranks' lines go to stderr, prefixed.

Exit codes: the engine's (0 when it finished cleanly; non-zero with "error: rank N failed ..." when it did not), 1 when the
plan has errors and --force is not given or the engine is not installed, 2 for usage errors, 130/143/129 when stopped by
SIGINT/SIGTERM/SIGHUP (a closed terminal: the engine gets SIGTERM, its clean teardown).
"""

from __future__ import annotations

import shlex
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import click

from advisor.cli import common_options, options_from_context
from advisor.context import AdvisorError, make_plan
from advisor.launch_job import write_job
from advisor.launch_prep import NO_COMMAND, PLAN_ERRORS, prepare_launch
from advisor.report import output_width
from advisor.rules import registry
from advisor.sanitize import clean
from advisor.schedulers import TARGETS, JobSettings
from launcher import spawn
from launcher.engines import RUNTIME_MODES, ReadySignal

EXIT_ERRORS = 1
STATE_MARK = {
    "auto-enabled": "on ",
    "forced-on": "on ",
    "not-enabled": "off",
    "forced-off": "off",
    "unavailable": " - ",
}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@common_options
@click.option("--mode", type=click.Choice(RUNTIME_MODES), default=None, help="Bundled runtime mode (default: serve).")
@click.option("--dry-run", is_flag=True, help="Print the exact command (one per node) and start nothing.")
@click.option("--force", is_flag=True, help="Start even when the plan has errors.")
@click.option("--run-dir", metavar="DIR", help="Where the per-rank logs go (default: a new folder under ~/.local/state/tp-advisor/runs).")
@click.option("--dist-init-addr", metavar="HOST:PORT", help="Multi-node: node 0's rendezvous address (default: this host:29500).")
@click.option("--node-rank", type=int, default=0, show_default=True, help="Multi-node: which node's command to start here.")
@click.option("--on", "target", type=click.Choice(sorted(TARGETS)), default=None,
              help="Multi-node: write the scheduler's job file for the plan instead of starting it (docs/multi-node.md).")
@click.option("-o", "--output", metavar="FILE", help="With --on: write the job file here (default: stdout).")
@click.option("--submit", is_flag=True, help="With --on and -o: hand the file to sbatch, kubectl apply -f or sky launch.")
@click.option("--image", metavar="IMAGE", help="With --on: the container image (default: the engine's official one).")
@click.option("--interface", metavar="IFACE", help="With --on: the network interface between nodes (NCCL/GLOO_SOCKET_IFNAME).")
@click.option("--rdma", is_flag=True, help="With --on kubernetes: the pods use RDMA (adds IPC_LOCK).")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED, metavar="[-- ENGINE ARGS...]")
@click.pass_context
def launch(ctx: click.Context, mode, dry_run, force, run_dir, dist_init_addr, node_rank, target, output, submit, image,
           interface, rdma, extra, **_params) -> None:  # fmt: skip
    """Resolve the plan, show what is on and why, and start the engine with exactly those flags.

    Arguments after `--` go to the engine verbatim (and the rules see them, e.g. `-- --enforce-disable-flashinfer-allreduce-fusion`).
    With no model and no GPU it runs the bundled demo model at tp 2 on CPU. Ctrl-C stops every rank.

    Exit codes: the engine's; 1 plan errors (without --force) or engine not installed; 2 usage error; 130 on Ctrl-C,
    143 on SIGTERM, 129 on SIGHUP (the terminal closed). If this process is killed, the engine's tree goes too.
    """
    if dist_init_addr is not None and not _is_host_port(dist_init_addr):
        raise AdvisorError(f"--dist-init-addr expects HOST:PORT (for example 10.0.0.1:29500), got {dist_init_addr!r}", 2)
    _check_job_options(target, output=output, submit=submit, image=image, interface=interface, rdma=rdma,
                       dry_run=dry_run, dist_init_addr=dist_init_addr, node_rank=node_rank)  # fmt: skip
    options = options_from_context(ctx)
    options = replace(options, overrides=tuple(options.overrides) + tuple(extra), mode=mode or "serve")
    plan = make_plan(options)
    if target:
        for line in summary_lines(plan):
            _err(line)
        settings = JobSettings(python=options.python, image=image, interface=interface, rdma=rdma)
        ctx.exit(write_job(plan, target, settings, output=output, do_submit=submit, force=force))
    nnodes = max(1, plan.intent.nnodes)
    if not 0 <= node_rank < nnodes:
        raise AdvisorError(f"--node-rank {node_rank} is outside 0..{nnodes - 1}; pass a rank below --nnodes", 2)

    echo = _err
    for line in summary_lines(plan):
        echo(line)
    commands, refusals = prepare_launch(plan, python=options.python, dist_init_addr=dist_init_addr,
                                        strict=options.strict, run_dir=run_dir)  # fmt: skip
    refusals = [r for r in refusals if not (force and r.kind == PLAN_ERRORS)]
    for refusal in refusals:
        if refusal.kind == NO_COMMAND:
            raise AdvisorError(refusal.message, refusal.exit_code)

    if dry_run:
        for rank, argv in enumerate(commands):
            if nnodes > 1:
                click.echo(f"# node {rank} of {nnodes}")
            click.echo(clean(shlex.join(argv), newlines=False))
        refused = any(r.kind == PLAN_ERRORS for r in refusals)  # only the plan decides a dry run's exit code
        if refused:
            echo(click.style("the plan has errors: `advisor launch` would refuse to start it (see above; --force overrides)", fg="red"))
        ctx.exit(EXIT_ERRORS if refused else 0)

    if refusals:
        raise AdvisorError(refusals[0].message, refusals[0].exit_code)
    if nnodes > 1:
        echo(f"multi-node: run on each node the command for its rank (this one starts node {node_rank}):")
        for rank, argv in enumerate(commands):
            echo(f"  node {rank}: " + clean(shlex.join(argv), newlines=False))
    engine = registry.get(plan.intent.engine)
    settled = partial(_print_verdict, plan) if engine.logs is not None else None  # `advisor verify` on its own log
    ctx.exit(run_engine(commands[node_rank], run_dir=run_dir, label=engine.name, ready=engine.ready, settled=settled))


def _check_job_options(target: str | None, **given) -> None:
    """The job options need --on, and --on takes no option of a launch here (the job sets rank and address)."""
    job_only = ("output", "submit", "image", "interface", "rdma")
    here_only = ("dry_run", "dist_init_addr", "node_rank")
    flag = {name: "--" + name.replace("_", "-") for name in (*job_only, *here_only)} | {"output": "-o/--output"}
    if target is None:
        used = [flag[n] for n in job_only if given[n]]
        if used:
            raise AdvisorError(f"{', '.join(used)} only go with --on slurm|kubernetes|skypilot; add --on TARGET", 2)
        return
    used = [flag[n] for n in here_only if given[n]]
    if used:
        raise AdvisorError(f"--on {target} writes a job that sets every node's rank and address itself; drop"
                           f" {', '.join(used)}", 2)  # fmt: skip


def run_engine(
    argv: list[str], *, run_dir: str | None = None, label: str = "run", ready: Sequence[ReadySignal] = (),
    settled: Callable[[Any], None] | None = None,
) -> int:
    """Start ``argv`` through launcher.spawn, stream its lines, forward SIGINT/SIGTERM/SIGHUP; the exit code to use.
    ``ready``: the engine's ready lines to wait for (empty: any engine's). ``settled``: called once with the run when it
    is ready or has failed."""
    path = run_dir or spawn.default_run_dir(label)
    _err("command: " + clean(shlex.join(argv), newlines=False))
    _err(f"logs: {path}")
    printer = _Printer(mute_agent_teardown=spawn.is_torchrun(argv))
    with spawn.forward_signals() as forwarder:  # in place before the child exists: no signal slips through
        on_state = _once_settled(settled) if settled is not None else None
        run = spawn.start(argv, run_dir=path, on_line=printer, ready=tuple(ready) or None, on_state=on_state)
        forwarder.attach(run)
        code = run.wait()
    try:
        return _report_end(run, code, forwarder.received)
    except OSError:  # the terminal is gone (SIGHUP): the exit code still says what happened
        return _exit_code(run, code, forwarder.received)


def _once_settled(callback: Callable[[Any], None]) -> Callable[[Any], None]:
    """An on_state callback calling ``callback`` the first time the run is ready or has failed."""
    fired = threading.Event()

    def on_state(run) -> None:
        if run.state in (spawn.READY, spawn.FAILED) and not fired.is_set():
            fired.set()
            callback(run)

    return on_state


def _print_verdict(plan, run) -> None:
    from advisor.verify.after_launch import verdict_lines

    for line in verdict_lines(run.log_path, plan):
        _err(clean(line, newlines=False))


def _exit_code(run, code: int | None, received: list[int]) -> int:
    if run.state == spawn.STOPPED:
        return 128 + int(received[0] if received else signal.SIGTERM)
    if run.state == spawn.FAILED:
        if code is None or code == 0:
            return EXIT_ERRORS
        return code if code > 0 else 128 - code
    return code or 0


def _report_end(run, code: int | None, received: list[int]) -> int:
    if run.survivors:
        _err(click.style(f"error: processes {run.survivors} could not be stopped; kill them by pid", fg="red"))
    if run.state == spawn.STOPPED:
        sig = received[0] if received else signal.SIGTERM
        _err(f"stopped ({signal.Signals(sig).name}); every rank is gone. logs: {run.run_dir}")
    elif run.state == spawn.FAILED:
        _err(click.style("error: " + clean(str(run.failure), newlines=False), fg="red"))
        _err(f"logs: {run.run_dir}")
    return _exit_code(run, code, received)


def summary_lines(plan, width: int | None = None) -> list[str]:
    """What will run, each decision (on/off and why), and the problems: a few lines, not the full `check` report,
    wrapped to ``width`` (default: stderr's, see advisor.report.output_width) with hanging indents."""
    if width is None:
        width = output_width(sys.stderr)
    intent = plan.intent
    spec = registry.get(intent.engine)
    name = spec.title or spec.name
    version = (plan.engine or {}).get("version")
    rules = (plan.engine or {}).get("rules")
    release = f" {version}" if version else ""
    if rules and rules != version:
        release += f" (rules of v{rules})"
    model = intent.model or "demo"
    if plan.model is not None and plan.model.architecture:
        model += f" ({plan.model.architecture})"
    if plan.model is not None and plan.model.origin == "hf-cache" and plan.model.notes:
        model += f", {plan.model.notes}"  # which snapshot, and why
    model = clean(model, newlines=False)  # ids, architectures and messages come from files: no escapes reach the terminal
    gpus = len(plan.facts.engine_gpus)
    where = (f"{gpus} GPU(s)" + (" per node" if intent.nnodes > 1 else "")) if gpus else "CPU"
    nodes = f", {intent.nnodes} nodes" if intent.nnodes > 1 else ""
    mode = f", mode {intent.mode}" if spec.modes else ""
    lines = _wrap("", f"{name}{release}: {model}, tp {intent.tp}{nodes} on {where}{mode}", width, bold=True)
    for decision in plan.decisions:
        mark = STATE_MARK.get(decision.state, "   ")
        value = "" if decision.value in (None, "", {}) or isinstance(decision.value, dict) else f" = {decision.value}"
        color = "green" if decision.enabled else None
        lines += _wrap(f"  {mark} ", f"{decision.title}{value}: {_why(decision)}", width, fg=color)
    for problem in plan.problems:
        color = {"error": "red", "warning": "yellow"}.get(problem.severity)
        lines += _wrap(f"  {problem.severity}: ", f"{problem.message} (fix: {problem.fix})", width, fg=color)
    return lines


def _wrap(head: str, body: str, width: int, **style) -> list[str]:
    """``head`` (styled, without its padding) then ``body`` wrapped to ``width``, continuation lines indented under the
    body's start. Words are never broken: a path or flag longer than the line stays whole."""
    indent = len(head)
    chunks = textwrap.wrap(clean(body, newlines=False), max(20, width - indent), break_long_words=False, break_on_hyphens=False) or [""]
    if style.get("bold"):
        chunks[0] = click.style(chunks[0], bold=True)
    label = head.strip()
    styled_head = head.replace(label, click.style(label, fg=style.get("fg")), 1) if label else head
    return [styled_head + chunks[0]] + [" " * indent + chunk for chunk in chunks[1:]]


def _why(decision) -> str:
    failed = [c for c in decision.conditions if c.ok is False]
    unknown = [c for c in decision.conditions if c.ok is None]
    if decision.state in ("forced-on", "forced-off"):
        return decision.state.replace("-", " ") + (f" ({' '.join(decision.flags)})" if decision.flags else " by your flags")
    if failed:
        shown = "; ".join(f"{c.text} (observed {c.observed})" for c in failed[:2])
        more = f"; +{len(failed) - 2} more" if len(failed) > 2 else ""
        return f"{decision.state}: {shown}{more}"
    if unknown:
        return f"{decision.state}: unknown {', '.join(c.text for c in unknown[:2])}"
    if len(decision.conditions) == 1:
        return f"{decision.state}: its condition holds"
    if decision.conditions:
        return f"{decision.state}: all {len(decision.conditions)} conditions hold"
    return decision.state


def _is_host_port(value: str) -> bool:
    host, sep, port = value.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


class _Printer:
    """Rank 0's (or a non-torchrun engine's) stdout as is (completions, JSON lines, "ready: URL"); everything else to
    stderr, rank-prefixed. Once torchrun starts tearing down (a rank failed, or we forwarded a signal) its own log lines
    and its Python traceback are muted: they stay in RUN/launcher.log, and we print the one-line summary instead."""

    TEARDOWN = ("failed (exitcode:", "closing signal", "Traceback (most recent call last)", "got signal", "death signal")

    def __init__(self, mute_agent_teardown: bool) -> None:
        self.mute_agent_teardown = mute_agent_teardown
        self.muted = False

    def __call__(self, line) -> None:
        if line.rank is None and self.mute_agent_teardown:
            if not self.muted and any(marker in line.text for marker in self.TEARDOWN):
                self.muted = True
            if self.muted:
                return
        if line.rank in (0, None) and line.stream == "stdout":
            click.echo(line.text)
        elif line.rank is None or line.text.startswith("[rank"):
            _err(clean(line.text, newlines=False))  # engine logs may hold control characters: shown escaped
        else:
            _err(f"[rank {line.rank}] " + clean(line.text, newlines=False))


def _err(text: str) -> None:
    click.echo(text, err=True)
    sys.stderr.flush()
