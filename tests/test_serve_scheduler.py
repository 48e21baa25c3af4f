"""The continuous-batching scheduler on the real engine (demo model, in this process, tp 1): admission bounded by the
batch size, the queue limit, aborts, shutdown, and an engine failure answered with 500s instead of a hang."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest
from runtime_models import open_runtime

from launcher.runtime import demo
from launcher.runtime.engine import SamplingParams, TokenEvent
from launcher.runtime.serve.metrics import Metrics
from launcher.runtime.serve.scheduler import Failed, NotServing, QueueFull, Scheduler

MAX_BATCH = 3


@pytest.fixture(scope="module")
def demo_dir():
    return demo.ensure_demo_model()


@pytest.fixture
def engine(demo_dir):
    return open_runtime(demo_dir, max_batch_size=MAX_BATCH, max_model_len=64)


class Sink:
    """Collects what the engine thread delivers, per sequence; tracks the largest running batch it saw."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.events: dict[int, list] = defaultdict(list)
        self.done: dict[int, threading.Event] = defaultdict(threading.Event)
        self.lock = threading.Lock()
        self.fatal = threading.Event()

    def deliver_for(self, key: int):
        def deliver(event) -> None:
            with self.lock:
                self.events[key].append(event)
            if isinstance(event, Failed) or event.finished:
                self.done[key].set()

        return deliver

    def wait(self, keys, timeout: float = 60) -> None:
        for key in keys:
            assert self.done[key].wait(timeout), f"request {key} never finished"


def make(engine, max_queue: int = 100) -> tuple[Scheduler, Sink]:
    metrics = Metrics(model="demo", tp_size=1, max_batch_size=MAX_BATCH, max_model_len=64, allreduce="torch")
    sink = Sink(metrics)
    return Scheduler(engine, metrics, max_queue=max_queue, heartbeat_s=0.05, on_fatal=sink.fatal.set), sink


def params(n: int) -> SamplingParams:
    return SamplingParams(max_tokens=n, ignore_eos=True)


def test_every_request_completes_with_batches_bounded_by_the_engine(engine) -> None:
    scheduler, sink = make(engine)
    ids = {i: scheduler.submit([10 + i, 20, 30], params(3 + i % 4), sink.deliver_for(i)) for i in range(10)}
    assert scheduler.queued() == 10  # nothing runs before start
    scheduler.start()
    try:
        sink.wait(range(10))
    finally:
        scheduler.stop()
    for i in range(10):
        events = sink.events[i]
        assert all(isinstance(e, TokenEvent) and e.seq_id == ids[i] for e in events)
        assert len(events) == 3 + i % 4 and events[-1].finish_reason == "length"
    assert sink.metrics.generation_tokens == sum(3 + i % 4 for i in range(10))
    assert "tp_runtime_running_requests 0" in sink.metrics.render()
    assert engine.free_slots() == MAX_BATCH and not engine.has_work()


def test_full_queue_refuses_and_waiting_requests_can_be_withdrawn(engine) -> None:
    scheduler, sink = make(engine, max_queue=2)
    first = scheduler.submit([1, 2], params(2), sink.deliver_for(1))
    scheduler.submit([1, 2], params(2), sink.deliver_for(2))
    with pytest.raises(QueueFull, match="--max-queue 2"):
        scheduler.submit([1, 2], params(2), sink.deliver_for(3))
    scheduler.abort(first)  # still waiting: simply removed
    assert scheduler.queued() == 1
    scheduler.start()
    try:
        sink.wait([2])
    finally:
        scheduler.stop()
    assert sink.events[1] == [] and sink.events[3] == []


def test_abort_of_a_running_sequence_frees_its_slot(engine) -> None:
    scheduler, sink = make(engine)
    scheduler.start()
    try:
        long = scheduler.submit([5, 6], params(60), sink.deliver_for(1))
        while len(sink.events[1]) < 2:
            threading.Event().wait(0.01)
        scheduler.abort(long)
        scheduler.submit([7, 8], params(2), sink.deliver_for(2))
        sink.wait([2])
        for _ in range(200):  # the abort lands within a step or two
            if engine.free_slots() == MAX_BATCH:
                break
            threading.Event().wait(0.01)
    finally:
        scheduler.stop()
    assert engine.free_slots() == MAX_BATCH
    assert len(sink.events[1]) < 60 and not sink.events[1][-1].finished


def test_stop_answers_running_and_waiting_requests_and_refuses_new_ones(engine) -> None:
    scheduler, sink = make(engine)
    scheduler.start()
    try:
        for key in range(MAX_BATCH + 2):  # two of them wait for a slot
            scheduler.submit([1, 2], params(60), sink.deliver_for(key))
        while not sink.events[0]:
            threading.Event().wait(0.01)
    finally:
        scheduler.stop()
    sink.wait(range(MAX_BATCH + 2), timeout=5)
    for key in range(MAX_BATCH + 2):
        assert sink.events[key][-1] == Failed(503, "the server is shutting down")
    with pytest.raises(NotServing):
        scheduler.submit([1], params(2), sink.deliver_for(99))


def test_an_engine_step_failure_fails_that_steps_requests_and_the_loop_serves_on(engine) -> None:
    """Issue 30: a real failure inside one batched step (an embedding lookup out of the vocabulary) answers the requests
    of that step 500 and withdraws them; the loop is not fatal and serves the next request."""
    scheduler, sink = make(engine)
    vocab = engine.model.config.vocab_size
    scheduler.submit([1, 2, 3], params(40), sink.deliver_for(1))
    scheduler.submit([vocab + 5], params(4), sink.deliver_for(2))  # the embedding lookup fails in the engine
    scheduler.start()
    try:
        sink.wait([1, 2])
        scheduler.submit([1, 2, 3], params(4), sink.deliver_for(3))
        sink.wait([3])
    finally:
        scheduler.stop()
    for key in (1, 2):
        failure = sink.events[key][-1]
        assert isinstance(failure, Failed) and failure.status == 500 and "engine failure" in failure.message
    assert not isinstance(sink.events[3][-1], Failed) and sink.events[3][-1].finished
    assert scheduler.error is None and not sink.fatal.is_set()
    assert engine.free_slots() == engine.max_batch_size
