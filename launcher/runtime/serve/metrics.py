"""The server's counters, gauges and latency histograms, exposed by prometheus_client (the library SGLang and vLLM use).

Each Metrics holds its own registry (a test may run several servers in one process). Written from the engine thread and
the HTTP event loop; prometheus_client's metrics are thread-safe. The names are the `tp_runtime_` families of /metrics:

- counters: requests_total{endpoint,status}, aborted_requests_total{reason}, prompt_tokens_total,
  generation_tokens_total, engine_steps_total
- gauges: running_requests, queued_requests, max_batch_size, max_model_len, tensor_parallel_size,
  allreduce_strategy{strategy}, model_info{model}
- histograms (seconds): time_to_first_token_seconds (request received -> its first token),
  inter_token_latency_seconds (between two tokens of one sequence), request_queue_time_seconds (received -> admitted
  to the running batch)
"""

from __future__ import annotations

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
PREFIX = "tp_runtime"

# Bucket bounds in seconds, from a GPU's milliseconds to a CPU demo's seconds per step.
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
ITL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6, 1.2, 2.5, 5.0, 10.0)
QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# The `_created` timestamp series prometheus_client adds to counters and histograms by default is not part of this
# server's /metrics (it never had them; SGLang and vLLM turn them off too).
prometheus_client.disable_created_metrics()


class Metrics:
    def __init__(self, *, model: str, tp_size: int, max_batch_size: int, max_model_len: int, allreduce: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.model = model
        self.tp_size = tp_size
        self.max_batch_size = max_batch_size
        self.max_model_len = max_model_len
        self.allreduce = allreduce

        def counter(name: str, documentation: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{PREFIX}_{name}", documentation, labels, registry=self.registry)

        def gauge(name: str, documentation: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(f"{PREFIX}_{name}", documentation, labels, registry=self.registry)

        def histogram(name: str, documentation: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(f"{PREFIX}_{name}", documentation, registry=self.registry, buckets=buckets)

        self._requests = counter("requests_total", "HTTP requests answered, by endpoint and status code.",
                                 ("endpoint", "status"))  # fmt: skip
        self._aborts = counter("aborted_requests_total", "Sequences ended before the engine finished them, by reason.",
                               ("reason",))  # fmt: skip
        self._prompt_tokens = counter("prompt_tokens_total", "Prompt tokens admitted to the engine.")
        self._generation_tokens = counter("generation_tokens_total", "Tokens generated.")
        self._engine_steps = counter("engine_steps_total", "Engine steps (prefill and/or decode).")
        self._running = gauge("running_requests", "Sequences in the running batch.")
        self._queued = gauge("queued_requests", "Requests waiting for a batch slot.")
        gauge("max_batch_size", "Largest running batch the engine accepts.").set(max_batch_size)
        gauge("max_model_len", "Longest prompt plus completion, in tokens.").set(max_model_len)
        gauge("tensor_parallel_size", "Ranks the model is sharded over.").set(tp_size)
        gauge("allreduce_strategy", "The allreduce strategy in use (value 1 on the active one).",
              ("strategy",)).labels(allreduce).set(1)  # fmt: skip
        gauge("model_info", "The served model name.", ("model",)).labels(model).set(1)
        self._ttft = histogram("time_to_first_token_seconds", "Seconds from receiving a request to its first token.",
                               TTFT_BUCKETS)  # fmt: skip
        self._itl = histogram("inter_token_latency_seconds", "Seconds between two consecutive tokens of one sequence.",
                              ITL_BUCKETS)  # fmt: skip
        self._queue_time = histogram("request_queue_time_seconds",
                                     "Seconds from receiving a request to its admission to the running batch.",
                                     QUEUE_BUCKETS)  # fmt: skip

    # -- updates ------------------------------------------------------------------------------------------------------
    def count_request(self, endpoint: str, status: int) -> None:
        self._requests.labels(endpoint, str(status)).inc()

    def count_abort(self, reason: str) -> None:
        self._aborts.labels(reason).inc()

    def add_prompt_tokens(self, n: int) -> None:
        self._prompt_tokens.inc(n)

    def record_step(self, generated: int, running: int, queued: int) -> None:
        self._engine_steps.inc()
        self._generation_tokens.inc(generated)
        self.set_load(running, queued)

    def set_load(self, running: int, queued: int) -> None:
        self._running.set(running)
        self._queued.set(queued)

    def observe_queue_time(self, seconds: float) -> None:
        self._queue_time.observe(seconds)

    def observe_first_token(self, seconds: float) -> None:
        self._ttft.observe(seconds)

    def observe_inter_token(self, seconds: float) -> None:
        self._itl.observe(seconds)

    # -- reads --------------------------------------------------------------------------------------------------------
    def value(self, name: str, **labels: str) -> float:
        """One sample's current value (0 when it has none yet), e.g. value("generation_tokens_total")."""
        return self.registry.get_sample_value(f"{PREFIX}_{name}", labels) or 0.0

    def requests(self, endpoint: str, status: int) -> int:
        return int(self.value("requests_total", endpoint=endpoint, status=str(status)))

    @property
    def prompt_tokens(self) -> int:
        return int(self.value("prompt_tokens_total"))

    @property
    def generation_tokens(self) -> int:
        return int(self.value("generation_tokens_total"))

    @property
    def engine_steps(self) -> int:
        return int(self.value("engine_steps_total"))

    @property
    def running(self) -> int:
        return int(self.value("running_requests"))

    @property
    def queued(self) -> int:
        return int(self.value("queued_requests"))

    @queued.setter
    def queued(self, n: int) -> None:
        self._queued.set(n)

    def render(self) -> str:
        """The Prometheus text exposition of every family."""
        return prometheus_client.generate_latest(self.registry).decode("utf-8")
