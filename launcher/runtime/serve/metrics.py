"""Server counters and gauges, rendered in the Prometheus text exposition format (version 0.0.4).

Written from the engine thread and the HTTP event loop, so every update takes a lock.
"""

from __future__ import annotations

import threading
from collections import Counter

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "tp_runtime"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    def __init__(self, *, model: str, tp_size: int, max_batch_size: int, max_model_len: int, allreduce: str) -> None:
        self._lock = threading.Lock()
        self.model = model
        self.tp_size = tp_size
        self.max_batch_size = max_batch_size
        self.max_model_len = max_model_len
        self.allreduce = allreduce
        self._requests: Counter[tuple[str, str]] = Counter()  # (endpoint, status) -> count
        self._aborts: Counter[str] = Counter()  # reason -> count
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.engine_steps = 0
        self.running = 0
        self.queued = 0

    def count_request(self, endpoint: str, status: int) -> None:
        with self._lock:
            self._requests[(endpoint, str(status))] += 1

    def count_abort(self, reason: str) -> None:
        with self._lock:
            self._aborts[reason] += 1

    def add_prompt_tokens(self, n: int) -> None:
        with self._lock:
            self.prompt_tokens += n

    def record_step(self, generated: int, running: int, queued: int) -> None:
        with self._lock:
            self.engine_steps += 1
            self.generation_tokens += generated
            self.running = running
            self.queued = queued

    def set_load(self, running: int, queued: int) -> None:
        with self._lock:
            self.running = running
            self.queued = queued

    def requests(self, endpoint: str, status: int) -> int:
        with self._lock:
            return self._requests[(endpoint, str(status))]

    def render(self) -> str:
        with self._lock:
            lines: list[str] = []

            def family(name: str, kind: str, help: str, samples: list[tuple[str, float | int]]) -> None:
                lines.append(f"# HELP {PREFIX}_{name} {help}")
                lines.append(f"# TYPE {PREFIX}_{name} {kind}")
                for labels, value in samples:
                    lines.append(f"{PREFIX}_{name}{labels} {value}")

            family(
                "requests_total",
                "counter",
                "HTTP requests answered, by endpoint and status code.",
                [(f'{{endpoint="{_escape(e)}",status="{s}"}}', n) for (e, s), n in sorted(self._requests.items())],
            )
            family(
                "aborted_requests_total",
                "counter",
                "Sequences ended before the engine finished them, by reason.",
                [(f'{{reason="{_escape(r)}"}}', n) for r, n in sorted(self._aborts.items())],
            )
            family(
                "prompt_tokens_total", "counter", "Prompt tokens admitted to the engine.", [("", self.prompt_tokens)]
            )
            family("generation_tokens_total", "counter", "Tokens generated.", [("", self.generation_tokens)])
            family("engine_steps_total", "counter", "Engine steps (prefill and/or decode).", [("", self.engine_steps)])
            family("running_requests", "gauge", "Sequences in the running batch.", [("", self.running)])
            family("queued_requests", "gauge", "Requests waiting for a batch slot.", [("", self.queued)])
            family("max_batch_size", "gauge", "Largest running batch the engine accepts.", [("", self.max_batch_size)])
            family("max_model_len", "gauge", "Longest prompt plus completion, in tokens.", [("", self.max_model_len)])
            family("tensor_parallel_size", "gauge", "Ranks the model is sharded over.", [("", self.tp_size)])
            family(
                "allreduce_strategy",
                "gauge",
                "The allreduce strategy in use (value 1 on the active one).",
                [(f'{{strategy="{_escape(self.allreduce)}"}}', 1)],
            )
            family("model_info", "gauge", "The served model name.", [(f'{{model="{_escape(self.model)}"}}', 1)])
            return "\n".join(lines) + "\n"
