"""The lifeline: a watchdog that stops an engine's process tree when the process that started it dies.

``launcher.spawn`` starts one per run (``python -m launcher.lifeline``, in its own session, so a terminal's SIGHUP or
Ctrl-C does not reach it) with the read end of a pipe as its stdin; only the launcher holds the write end. It reads the
engine's pid and creation time as the first line, then blocks on the pipe:

- the launcher writes ``done`` (the run is over, or the launcher tears it down itself): exit, touching nothing;
- the pipe reaches end-of-file without ``done``: the launcher is gone, whatever killed it (SIGKILL, a crash, a closed
  terminal); SIGTERM the engine's process group (torchrun forwards it to its ranks), then SIGKILL every process of the
  tree that is still there after ``GRACE_S`` seconds.

A linux parent-death signal on the engine alone would not do: it follows the *thread* that started the child (the TUI
starts runs from a worker thread that ends at once), and torchrun's ranks are grandchildren in sessions of their own.
Standard library and psutil only; it never imports torch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

import psutil

GRACE_S = 3.0  # what a clean SIGTERM teardown may take before everything left is killed
POLL_S = 0.1
DONE = b"done\n"


def tree(root: psutil.Process) -> list[psutil.Process]:
    """``root`` and every descendant that is still running (recursive; ranks in other sessions included)."""
    procs = [root]
    with contextlib.suppress(psutil.Error):
        procs += root.children(recursive=True)
    return [p for p in procs if _running(p)]


def _running(proc: psutil.Process) -> bool:
    try:
        # is_running() also compares the creation time, so a recycled pid is never taken for the engine's
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def tear_down(root: psutil.Process, grace_s: float = GRACE_S) -> None:
    """SIGTERM the engine's process group, then SIGKILL whatever of its tree is left after ``grace_s`` seconds."""
    seen = {p.pid: p for p in tree(root)}
    if _running(root):
        with contextlib.suppress(OSError):
            os.killpg(root.pid, signal.SIGTERM)  # the engine leads its own session: the group is its own
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if _running(root):
            for proc in tree(root):  # keep learning descendants while the engine tears down
                seen.setdefault(proc.pid, proc)
        if not any(_running(p) for p in seen.values()):
            return
        time.sleep(POLL_S)
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            if _running(proc):
                proc.kill()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe decides
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    header = stdin.readline().split()
    if len(header) != 2:
        return 0  # the launcher died before it could name the engine (or never meant to)
    try:
        root = psutil.Process(int(header[0]))
        if abs(root.create_time() - float(header[1])) > 0.01:
            return 0  # that pid is another process already
    except (ValueError, psutil.Error):
        return 0
    if stdin.readline() == DONE:  # blocks until the launcher says "done" or dies (end of file)
        return 0
    tear_down(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
