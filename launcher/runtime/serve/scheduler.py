"""Continuous batching on rank 0, and the follower loop on the other ranks.

Every loop iteration rank 0 decides the step's commands (requests admitted to the batch, sequences to abort, shutdown),
broadcasts them over a CPU (gloo) group, and then every rank applies them and calls `engine.step()` in the same order,
as tensor parallelism requires. Requests join when the engine has a free slot and leave as soon as they finish, between
two decode steps. When idle, rank 0 still broadcasts an empty command list every `heartbeat_s` seconds so that the
followers' collective never runs into its timeout.

A step that fails (engine.StepFailed: a forward or sampling error; rank 0 broadcasts a failed sampling to every rank)
fails the requests of that step alone with a JSON 500, its sequences withdrawn on every rank, and the loop goes on; only
a failure of the loop itself (the control channel) is fatal.

The engine is touched only by the engine thread; HTTP handlers talk to it through `submit` / `abort`, and tokens go
back through each job's `deliver` callback (which must be thread-safe and must not block, e.g. call_soon_threadsafe).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from launcher.runtime.engine import StepFailed
from launcher.runtime.serve.metrics import Metrics


class QueueFull(Exception):
    """The waiting queue is at its limit; the client should retry later."""


class NotServing(Exception):
    """The scheduler is shutting down or has failed."""


@dataclass(frozen=True)
class Failed:
    """Delivered instead of tokens when a request cannot be served."""

    status: int
    message: str


@dataclass
class Commands:
    """One step's schedule, identical on every rank."""

    add: list[tuple[int, list[int], Any]] = field(default_factory=list)  # (seq_id, prompt ids, SamplingParams)
    abort: list[int] = field(default_factory=list)
    shutdown: bool = False
    sync: bool = False  # every rank joins ControlChannel.sync() after applying the commands (the /health probe)


@dataclass
class _Job:
    seq_id: int
    prompt_ids: list[int]
    params: Any
    deliver: Callable[[Any], None]
    received: float = field(default_factory=time.monotonic)  # when submit() took it, for the latency histograms
    last_token: float | None = None  # when its latest token came out of the engine


class ControlChannel:
    """Broadcasts rank 0's commands to all ranks over a CPU process group."""

    def __init__(self, group: Any = None) -> None:
        import torch.distributed as dist

        self._dist = dist
        backend = str(dist.get_backend(group))
        # NCCL would put each small pickled message through the GPU and busy-wait while idle; use gloo for control.
        # new_group is collective: every rank constructs its ControlChannel at the same point.
        self._group = group if backend == "gloo" else dist.new_group(backend="gloo")

    def publish(self, commands: Commands) -> None:
        self._dist.broadcast_object_list([commands], src=0, group=self._group)

    def receive(self) -> Commands:
        box: list[Any] = [None]
        self._dist.broadcast_object_list(box, src=0, group=self._group)
        return box[0]

    def sync(self) -> None:
        """A round trip through every rank: returns only once all of them got this far (a broadcast alone would not
        notice a stopped follower: its messages just wait in the socket buffers)."""
        import torch

        self._dist.all_reduce(torch.zeros(1), group=self._group)


def apply_commands(engine: Any, commands: Commands) -> list[tuple[int, Exception]]:
    """Aborts first (they free slots), then admissions. Returns the admissions the engine refused: whatever one
    request's add_request raises refuses that request alone (every rank refuses it the same way)."""
    for seq_id in commands.abort:
        engine.abort(seq_id)
    refused = []
    for seq_id, prompt_ids, params in commands.add:
        try:
            engine.add_request(seq_id, prompt_ids, params)
        except Exception as exc:
            refused.append((seq_id, exc))
    return refused


def follow(engine: Any, channel: ControlChannel) -> int:
    """Ranks other than 0: apply rank 0's commands until it says shutdown."""
    while True:
        try:
            commands = channel.receive()
        except Exception as exc:  # rank 0 went away without saying goodbye
            print(f"error: lost contact with rank 0 ({exc}); stopping", file=sys.stderr, flush=True)
            return 1
        if commands.shutdown:
            return 0
        apply_commands(engine, commands)
        if commands.sync:
            try:
                channel.sync()
            except Exception as exc:
                print(f"error: lost contact with rank 0 ({exc}); stopping", file=sys.stderr, flush=True)
                return 1
        if engine.has_work():
            try:
                engine.step()
            except StepFailed as exc:  # its sequences are withdrawn; rank 0 fails their requests and carries on
                print(f"error: engine step failed: {exc}", file=sys.stderr, flush=True)


class Scheduler:
    def __init__(
        self,
        engine: Any,
        metrics: Metrics,
        *,
        max_queue: int,
        channel: ControlChannel | None = None,
        heartbeat_s: float = 1.0,
        on_fatal: Callable[[], None] | None = None,
    ) -> None:
        self._engine = engine
        self._metrics = metrics
        self._max_queue = max_queue
        self._channel = channel
        self._heartbeat_s = heartbeat_s
        self._on_fatal = on_fatal
        self._cv = threading.Condition()
        self._waiting: deque[_Job] = deque()
        self._aborts: list[int] = []
        self._running: dict[int, _Job] = {}  # engine thread only
        self._withdrawn: list[int] = []  # engine thread only: a failed step's sequences, for the next commands' abort
        self._stopping = False
        self._sync_wanted = False
        self.turns = 0  # loop iterations completed (a round trip through every rank when a probe asked for one)
        self._ids = itertools.count(1)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="engine-loop", daemon=True)

    # --- called from the HTTP side ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def submit(self, prompt_ids: list[int], params: Any, deliver: Callable[[Any], None]) -> int:
        with self._cv:
            if self._stopping or self.error is not None:
                raise NotServing("the server is shutting down")
            if len(self._waiting) >= self._max_queue:
                raise QueueFull(f"{len(self._waiting)} requests are already waiting (--max-queue {self._max_queue})")
            seq_id = next(self._ids)
            self._waiting.append(_Job(seq_id, prompt_ids, params, deliver))
            self._cv.notify()
            return seq_id

    def abort(self, seq_id: int) -> None:
        with self._cv:
            for job in self._waiting:
                if job.seq_id == seq_id:
                    self._waiting.remove(job)
                    return
            self._aborts.append(seq_id)
            self._cv.notify()

    def stop(self, timeout: float = 30.0) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def request_stop(self) -> None:
        """Like stop() without waiting: the loop answers every request still waiting or running with 503."""
        with self._cv:
            self._stopping = True
            self._cv.notify()

    def probe(self) -> int:
        """Ask the loop for one iteration that goes through every rank; returns the turn count to wait past. The loop
        is making progress when ``turns`` exceeds it soon: /health waits for that, with a deadline."""
        with self._cv:
            self._sync_wanted = True
            self._cv.notify()
            return self.turns

    @property
    def stopping(self) -> bool:
        return self._stopping

    def queued(self) -> int:
        with self._cv:
            return len(self._waiting)

    # --- the engine thread -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            with _engine_thread_context(self._engine):
                self._loop()
            self._fail_all(503, "the server is shutting down")
        except BaseException as exc:
            self.error = exc
            print(f"error: engine loop failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            self._fail_all(500, f"engine failure: {type(exc).__name__}: {exc}")
            if self._on_fatal is not None:
                self._on_fatal()

    def _loop(self) -> None:
        engine = self._engine
        while True:
            with self._cv:
                if not (self._waiting or self._aborts or self._stopping or engine.has_work()):
                    self._cv.wait(timeout=self._heartbeat_s)
                commands = Commands(
                    # a failed step's sequences too: a rank whose own step did not fail withdraws them now
                    abort=[seq_id for seq_id in self._aborts if seq_id in self._running] + self._withdrawn,
                    shutdown=self._stopping,
                    sync=self._sync_wanted,
                )
                self._aborts.clear()
                self._withdrawn = []
                self._sync_wanted = False
                free = min(engine.free_slots(), engine.max_batch_size - len(self._running))
                admitted = [self._waiting.popleft() for _ in range(min(max(free, 0), len(self._waiting)))]
                queued = len(self._waiting)
            commands.add = [(job.seq_id, job.prompt_ids, job.params) for job in admitted]

            if self._channel is not None:
                self._channel.publish(commands)
            if commands.shutdown:
                self._waiting.extendleft(reversed(admitted))  # so that _fail_all answers them
                return

            for seq_id in commands.abort:
                self._running.pop(seq_id, None)
            refused = dict(apply_commands(engine, commands))
            if commands.sync and self._channel is not None:
                self._channel.sync()
            admitted_at = time.monotonic()
            for job in admitted:
                self._metrics.observe_queue_time(admitted_at - job.received)
                if job.seq_id in refused:
                    self._deliver(job, Failed(400, str(refused[job.seq_id])))
                else:
                    self._running[job.seq_id] = job

            generated = 0
            if engine.has_work():
                for event in self._step():
                    job = self._running.get(event.seq_id)
                    if job is None:
                        continue
                    generated += 1
                    self._observe_token(job)
                    if event.finished:
                        del self._running[event.seq_id]
                    self._deliver(job, event)
                self._metrics.record_step(generated, len(self._running), queued)
            else:
                self._metrics.set_load(len(self._running), queued)
            self.turns += 1

    def _step(self) -> list[Any]:
        """One engine step's events. A step that fails (StepFailed: the engine withdrew its sequences) fails the
        requests of that step alone, with a JSON 500 each; the loop serves the next step."""
        try:
            return self._engine.step()
        except StepFailed as exc:
            print(f"error: engine step failed ({len(exc.seq_ids)} requests answered 500): {exc}", file=sys.stderr,
                  flush=True)  # fmt: skip
            self._withdrawn += exc.seq_ids
            for seq_id in exc.seq_ids:
                job = self._running.pop(seq_id, None)
                if job is not None:
                    self._deliver(job, Failed(500, f"engine failure in this request's step: {exc}"))
            return []

    def _observe_token(self, job: _Job) -> None:
        """Time to first token for a job's first token, inter-token latency for the next ones."""
        now = time.monotonic()
        if job.last_token is None:
            self._metrics.observe_first_token(now - job.received)
        else:
            self._metrics.observe_inter_token(now - job.last_token)
        job.last_token = now

    def _deliver(self, job: _Job, event: Any) -> None:
        """Hand one event to its handler. A failure here concerns that request alone: it is withdrawn from the engine
        (at the next step, on every rank) and told once, if it can still be told; the loop carries on."""
        try:
            job.deliver(event)
        except RuntimeError:  # the handler's event loop is closed (server shutting down)
            pass
        except Exception as exc:
            print(f"error: request {job.seq_id} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            if job.seq_id in self._running:
                with self._cv:
                    self._aborts.append(job.seq_id)
            if not isinstance(event, Failed):
                with contextlib.suppress(Exception):
                    job.deliver(Failed(500, f"request failed: {type(exc).__name__}: {exc}"))

    def _fail_all(self, status: int, message: str) -> None:
        with self._cv:
            jobs = list(self._waiting) + list(self._running.values())
            self._waiting.clear()
            self._running.clear()
        for job in jobs:
            self._deliver(job, Failed(status, message))
        self._metrics.set_load(0, 0)


@contextlib.contextmanager
def _engine_thread_context(engine: Any) -> Iterator[None]:
    """The CUDA device and grad mode are per thread: give the engine thread what the main thread set up."""
    import torch

    device = getattr(engine, "device", None)
    if isinstance(device, torch.device) and device.type == "cuda":
        torch.cuda.set_device(device)
    with torch.inference_mode():
        yield
