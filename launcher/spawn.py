"""Start, watch and stop an engine process: the one place in tp-advisor that does (the CLI and the TUI both use it).
Reading its output (ranks, failure diagnosis) is launcher/diagnosis.py; each engine's ready line is launcher/engines.py.

Usage::

    from launcher import spawn

    run = spawn.start(argv, run_dir=None, env=None, on_line=print_line, on_state=None)
    print("logs:", run.run_dir)
    run.wait_ready(timeout=120)          # True once a rank printed "ready: http://HOST:PORT" (run.url holds it)
    code = run.wait()                    # blocks until the process tree is gone; returns the exit code
    if run.state == spawn.FAILED:
        print(run.failure)               # "rank 1 failed (exit -9, SIGKILL): Signal 9 (SIGKILL) received by PID 4242"
    run.stop(timeout=10)                 # from any thread: SIGTERM, then SIGKILL, then no descendant survives

``start(argv, *, env=None, run_dir=None, on_line=None, on_state=None, cwd=None) -> Run``
    ``argv`` is a list (no shell anywhere). The child gets its own session (``start_new_session=True``) so a terminal's
    Ctrl-C reaches only us; we forward it. For a torchrun command (``python -m torch.distributed.run ...`` or ``torchrun``)
    ``--log-dir RUN/logs --tee 3`` are inserted, so each rank's stdout/stderr are kept under
    ``RUN/logs/<run id>/attempt_0/<local rank>/`` and also reach us prefixed ``[rankN]:``; everything the child prints
    (the agent's own log included) goes to ``RUN/launcher.log``; ``RUN/argv.json`` records the command.
    The environment adds, unless the caller set them: ``PYTHONUNBUFFERED=1`` (lines arrive as they are printed),
    ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT=3`` (torchrun's grace before SIGKILL after a rank dies; its default is 30 s) and
    ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[rank${rank}]:`` (global ranks in line prefixes); for torchrun also
    ``OMP_NUM_THREADS=1`` (torchrun's own default, which it otherwise announces in a banner).
    Descendants are sampled every half second, so a process that lives shorter than that may escape tracking.

``on_line(LogLine)`` is called from a reader thread for every output line (``line.rank`` is the rank or None for the
launcher's own lines, ``line.text`` the text without prefix, ``line.stream`` "stdout" or "stderr", ``str(line)`` a
display form). ``on_state(Run)`` is called
from a watcher thread on every state change. In a Textual app, hop to the UI thread with ``app.call_from_thread``.

States: ``starting`` -> ``ready`` (the engine's ready line was seen, ``start(ready=...)``, the engine's own signals:
the bundled runtime's ``ready: http://...``, SGLang's and vLLM's uvicorn ``Uvicorn running on http://...``; ``Run.url``) -> one of ``exited`` (code 0),
``failed`` (non-zero; ``Run.failure`` names the first failing rank and its error) or ``stopped`` (``stop()`` was asked).
``Run.returncode`` is the child's exit code (negative: killed by that signal).

Teardown guarantees: every descendant ever seen (torchrun starts workers in their own sessions, so a process-group
signal alone would miss them) is tracked with psutil. When the child exits, any survivor is terminated then killed.
When torchrun starts tearing down (a rank died) but has not finished within ``FAIL_FAST_S`` seconds, everything is
killed. ``stop()`` sends SIGTERM (or the given signal) to the child's process group, waits, then SIGKILLs the group and
every tracked descendant, and checks that none is left (``Run.survivors`` lists any that could not be killed).

``forward_signals(run=None)`` is a context manager for a CLI main thread: SIGINT/SIGTERM/SIGHUP while inside it stop
the run (SIGHUP, a closed terminal, is sent on as SIGTERM; a second signal kills at once); enter it before ``start()``
and ``attach(run)`` so no signal slips through.

If this process dies without tearing the run down (SIGKILL, a crash), the run's lifeline (``launcher.lifeline``, a
watchdog started with every run) sees its pipe close and stops the engine's whole tree within seconds; the runtime's
ranks also die with their torchrun agent (a parent-death signal set in each worker).

Thread-safe: every ``Run`` method may be called from any thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import psutil

from launcher.diagnosis import Failure, LogLine, diagnose, parse_line, starts_teardown
from launcher.engines import READY_SIGNALS, ReadySignal
from launcher.lifeline import DONE as LIFELINE_DONE

__all__ = ["Failure", "LogLine", "Run", "forward_signals", "start"]  # the first two: diagnosis.py

STARTING, READY, EXITED, FAILED, STOPPED = "starting", "ready", "exited", "failed", "stopped"
FINAL_STATES = (EXITED, FAILED, STOPPED)

FAIL_FAST_S = 6.0  # once torchrun starts tearing down, how long it may take before we kill everything ourselves
POLL_S = 0.2
DEFAULT_ENV = {
    "PYTHONUNBUFFERED": "1",
    "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3",
    "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank${rank}]:",
}

def default_run_dir(label: str = "run") -> Path:
    """A fresh directory under $TP_ADVISOR_RUNS, else $XDG_STATE_HOME/tp-advisor/runs (~/.local/state/...)."""
    base = os.environ.get("TP_ADVISOR_RUNS")
    if not base:
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        base = os.path.join(state, "tp-advisor", "runs")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(base) / f"{stamp}-{label}-{os.getpid()}"
    n = 1
    while path.exists():
        n += 1
        path = Path(base) / f"{stamp}-{label}-{os.getpid()}-{n}"
    return path


def is_torchrun(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    if os.path.basename(argv[0]) == "torchrun":
        return True
    return len(argv) >= 3 and argv[1] == "-m" and argv[2] == "torch.distributed.run"


def with_torchrun_logs(argv: Sequence[str], log_dir: str | Path) -> list[str]:
    """torchrun argv with ``--log-dir LOG_DIR --tee 3`` right after the launcher (unless a log dir is already given)."""
    argv = list(argv)
    if not is_torchrun(argv) or any(a.split("=", 1)[0] in ("--log-dir", "--log_dir") for a in argv):
        return argv
    at = 1 if os.path.basename(argv[0]) == "torchrun" else 3
    return argv[:at] + ["--log-dir", str(log_dir), "--tee", "3"] + argv[at:]


class Run:
    """One started engine. Create it with ``start()``."""

    def __init__(self, argv: list[str], run_dir: Path, on_line, on_state,
                 ready: Sequence[ReadySignal] | None = None) -> None:  # fmt: skip
        self.argv = argv
        self._ready_signals = tuple(ready) if ready is not None else READY_SIGNALS
        self.run_dir = run_dir
        self.log_path = run_dir / "launcher.log"
        self.torchrun = is_torchrun(argv)
        self._on_line = on_line
        self._on_state = on_state
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._ready = threading.Event()
        self._state = STARTING
        self._url: str | None = None
        self._failure: Failure | None = None
        self._returncode: int | None = None
        self._stop_requested = False
        self._stopper: threading.Thread | None = None
        self._failure_seen_at: float | None = None
        self._killed_by_us = False  # the fail-fast teardown SIGKILLed the tree: a rank failed first
        self._tracked: dict[int, psutil.Process] = {}
        self.survivors: list[int] = []
        self.lines: deque[LogLine] = deque(maxlen=500)
        self._proc: subprocess.Popen | None = None
        self._lifeline: subprocess.Popen | None = None
        self._lifeline_fd: int | None = None

    # -- public API ------------------------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def url(self) -> str | None:
        return self._url

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def failure(self) -> Failure | None:
        return self._failure

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the child and every descendant are gone; the exit code, or None on timeout."""
        return self._returncode if _wait_until(self._done.is_set, self._done, timeout) else None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the engine is ready or finished; True only when it is ready."""
        _wait_until(lambda: self._ready.is_set() or self._done.is_set(), self._ready, timeout)
        return self._ready.is_set()

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM, wait: bool = True) -> int | None:
        """Stop the run: ``sig`` to the process group, SIGKILL after a grace period, then no descendant survives.

        With ``wait=False`` it returns at once (safe inside a signal handler). A second call while a stop is under way
        escalates to SIGKILL immediately."""
        with self._lock:
            if self._done.is_set():
                return self._returncode
            first = not self._stop_requested
            self._stop_requested = True
            if first:
                self._stopper = threading.Thread(target=self._stop_sequence, args=(timeout, sig), daemon=True)
                self._stopper.start()
            else:
                self._kill_all(signal.SIGKILL)
        return self.wait(timeout + 5) if wait else None

    def tail(self, n: int = 20) -> list[LogLine]:
        return list(self.lines)[-n:]

    # -- internals -------------------------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        with self._lock:
            if self._state == state:
                return
            self._state = state
        if self._on_state is not None:
            with contextlib.suppress(Exception):  # a broken callback must not break teardown
                self._on_state(self)

    def _launch(self, env: Mapping[str, str], cwd: str | None) -> None:
        self._start_lifeline(env)  # before the engine: no window in which the engine runs without one
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            self._release_lifeline()
            raise
        with contextlib.suppress(psutil.Error):
            root = self._tracked[self._proc.pid] = psutil.Process(self._proc.pid)
            self._tell_lifeline(f"{root.pid} {root.create_time()!r}\n".encode())
        self._log = open(self.log_path, "ab", buffering=0)  # noqa: SIM115 - closed by the watcher when all is over
        self._readers = [
            threading.Thread(target=self._read_output, args=(pipe, name), name=f"spawn-{name}", daemon=True)
            for pipe, name in ((self._proc.stdout, "stdout"), (self._proc.stderr, "stderr"))
        ]
        self._watcher = threading.Thread(target=self._watch, name="spawn-watcher", daemon=True)
        for reader in self._readers:
            reader.start()
        self._watcher.start()

    def _start_lifeline(self, env: Mapping[str, str]) -> None:
        """A watchdog that tears the engine's tree down if this process dies without saying so (see launcher.lifeline)."""
        read_end, self._lifeline_fd = os.pipe()  # both non-inheritable: the engine never holds the write end
        package_root = str(Path(__file__).resolve().parent.parent)
        path = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        try:
            self._lifeline = subprocess.Popen(
                [sys.executable, "-m", "launcher.lifeline"],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**env, "PYTHONPATH": path},
                start_new_session=True,  # a closed terminal's SIGHUP must not reach it
                close_fds=True,
            )
        except BaseException:
            os.close(self._lifeline_fd)
            self._lifeline_fd = None
            raise
        finally:
            os.close(read_end)

    def _tell_lifeline(self, message: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self._lifeline_fd, message)

    def _release_lifeline(self) -> None:
        """The tree is gone (or was never started): the watchdog exits without touching anything."""
        if self._lifeline_fd is None:
            return
        self._tell_lifeline(LIFELINE_DONE)
        with contextlib.suppress(OSError):
            os.close(self._lifeline_fd)
        self._lifeline_fd = None
        if self._lifeline is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._lifeline.wait(timeout=5)

    def _read_output(self, pipe, stream: str) -> None:
        for raw in iter(pipe.readline, b""):
            with self._lock:
                self._log.write(raw)
            self._handle_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"), stream)

    def _handle_line(self, text: str, stream: str = "stdout") -> None:
        line = parse_line(text, stream)
        self.lines.append(line)
        url = None if self._ready.is_set() else next(
            (u for sig in self._ready_signals if (u := sig.url(line.text, line.rank)) is not None), None
        )
        if url is not None:
            with self._lock:
                self._url = url
            self._ready.set()
            if self._state == STARTING:
                self._set_state(READY)
        if line.rank is None and self._failure_seen_at is None and starts_teardown(text):
            self._failure_seen_at = time.monotonic()
        if self._on_line is not None:
            with contextlib.suppress(Exception):
                self._on_line(line)

    def _watch(self) -> None:
        assert self._proc is not None
        last_scan = 0.0
        while True:
            try:
                code = self._proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now - last_scan >= 0.5:
                self._track_descendants()
                last_scan = now
            if self._failure_seen_at is not None and now - self._failure_seen_at > FAIL_FAST_S:
                # torchrun saw a rank die but is still waiting on the others: do not wait for it.
                self._killed_by_us = True
                self._kill_all(signal.SIGKILL)
                self._failure_seen_at = float("inf")
        self._reap_leftovers()
        self._release_lifeline()
        for reader in self._readers:
            reader.join(timeout=5)
        with self._lock:
            self._log.close()
            self._returncode = code
        if self._stop_requested:
            final = STOPPED
        elif code == 0:
            final = EXITED
        else:
            self._failure = self._diagnose(code)
            final = FAILED
        self._set_state(final)
        self._done.set()

    def _track_descendants(self) -> None:
        root = self._tracked.get(self._proc.pid) if self._proc else None
        if root is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                self._tracked.setdefault(child.pid, child)

    def _alive(self) -> list[psutil.Process]:
        alive = []
        for proc in list(self._tracked.values()):
            with contextlib.suppress(psutil.Error):
                # is_running() also compares the creation time, so a recycled pid is never mistaken for ours.
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
        return alive

    def _kill_all(self, sig: int) -> None:
        self._track_descendants()
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)
        for proc in self._alive():
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)

    def _reap_leftovers(self) -> None:
        """After the child exited: nothing it started may outlive it."""
        leftovers = [p for p in self._alive() if not (self._proc and p.pid == self._proc.pid)]
        if leftovers:
            for proc in leftovers:
                with contextlib.suppress(psutil.Error):
                    proc.terminate()
            _, still = psutil.wait_procs(leftovers, timeout=1.0)
            for proc in still:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            psutil.wait_procs(still, timeout=2.0)
        self.survivors = [p.pid for p in self._alive() if not (self._proc and p.pid == self._proc.pid)]

    def _stop_sequence(self, timeout: float, sig: int) -> None:
        assert self._proc is not None
        self._track_descendants()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)
        grace = max(0.5, timeout - 2.0)
        if self._done.wait(grace):
            return
        self._kill_all(signal.SIGKILL)

    def _diagnose(self, code: int) -> Failure:
        """Why the run failed (launcher/diagnosis.py reads the log, torchrun's summary and the ranks' error files)."""
        text = ""
        with contextlib.suppress(OSError):
            text = self.log_path.read_text(errors="replace")
        return diagnose(code, log_text=text, lines=list(self.lines), torchrun=self.torchrun,
                        log_dir=self.run_dir / "logs", killed_by_us=self._killed_by_us, pid=self.pid)  # fmt: skip


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    run_dir: str | Path | None = None,
    on_line: Callable[[LogLine], None] | None = None,
    on_state: Callable[[Run], None] | None = None,
    cwd: str | None = None,
    ready: Sequence[ReadySignal] | None = None,
) -> Run:
    """Start ``argv`` in its own session and watch it; see the module docstring. ``ready``: how the engine says it
    accepts requests (the engine's ``ready``, advisor.rules.engine.Engine); default: any engine's signal
    (launcher.engines.READY_SIGNALS)."""
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("empty command")
    run_path = Path(run_dir) if run_dir is not None else default_run_dir()
    run_path.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env.update(env or {})
    for key, value in DEFAULT_ENV.items():
        full_env.setdefault(key, value)
    if is_torchrun(argv):
        argv = with_torchrun_logs(argv, run_path / "logs")
        # torchrun sets 1 per rank itself when several ranks share a node, with a banner on every launch; the same
        # value, set here, keeps its output to the ranks' own lines.
        full_env.setdefault("OMP_NUM_THREADS", "1")
    (run_path / "argv.json").write_text(json.dumps({"argv": argv, "shell": shlex.join(argv)}, indent=2) + "\n")
    run = Run(argv, run_path, on_line, on_state, ready)
    run._launch(full_env, cwd)
    return run


class SignalForwarder:
    """What ``forward_signals`` yields: the signals received so far, and ``attach(run)`` for a run started inside it."""

    def __init__(self, run: Run | None) -> None:
        self.received: list[int] = []
        self._run = run

    def attach(self, run: Run) -> None:
        """Forward to ``run`` from now on; a signal that arrived before it existed stops it at once."""
        self._run = run
        if self.received:
            run.stop(sig=_engine_signal(self.received[0]), wait=False)

    def _handle(self, signum, _frame) -> None:
        self.received.append(signum)
        if self._run is not None:
            self._run.stop(sig=_engine_signal(signum), wait=False)


def _engine_signal(received: int) -> int:
    """The engine (in its own session) never sees the terminal's hangup: a closed terminal asks for the clean SIGTERM
    teardown, not for whatever SIGHUP would do to each rank."""
    return signal.SIGTERM if received == signal.SIGHUP else received


FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def forward_signals(run: Run | None = None, signals: Sequence[int] = FORWARDED_SIGNALS) -> Iterator[SignalForwarder]:
    """In the main thread: SIGINT/SIGTERM/SIGHUP stop the run (sent on to the engine, SIGHUP as SIGTERM; a second one
    kills at once).

    Enter it before ``start()`` and ``attach()`` the run, so no signal can slip between starting and forwarding.
    ``.received`` lists the signals received, so the caller can pick an exit code (130 for SIGINT)."""
    forwarder = SignalForwarder(run)
    previous = {s: signal.signal(s, forwarder._handle) for s in signals}
    try:
        yield forwarder
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _wait_until(condition: Callable[[], bool], event: threading.Event, timeout: float | None) -> bool:
    """Wait for ``condition`` (``event`` is set when it may have changed); False when ``timeout`` ran out first.
    Short slices keep the main thread responsive to signal handlers while it waits."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not condition():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        event.wait(0.25)
    return True
