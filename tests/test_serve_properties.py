"""Property tests over request bodies: whatever a client sends to the serve app, it gets a JSON answer with an honest
status; never a 500, never an exception escaping a handler (which would be a traceback in the server's log).

The app is the real one (launcher.runtime.serve.app) on the real engine (demo model, tp 1, in this process) with its
scheduler thread, driven through Starlette's TestClient with raise_server_exceptions=True, so any exception that would
reach uvicorn fails the test. Bounded: a few hundred examples in well under a minute of CPU.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_models import open_runtime
from starlette.testclient import TestClient

from launcher.runtime import demo
from launcher.runtime.serve.app import ServeState, build_app
from launcher.runtime.serve.metrics import Metrics
from launcher.runtime.serve.scheduler import Scheduler
from launcher.runtime.tokenizer import Tokenizer

MAX_MODEL_LEN = 24  # short completions keep every example fast
MAX_REQUEST_BYTES = 4096
STATUSES = {200, 400, 404, 413, 422, 503}
PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    model_dir = demo.ensure_demo_model()
    engine = open_runtime(model_dir, max_batch_size=4, max_model_len=MAX_MODEL_LEN)
    tokenizer = Tokenizer.from_dir(model_dir, engine.eos_token_ids)
    metrics = Metrics(model="demo", tp_size=1, max_batch_size=4, max_model_len=MAX_MODEL_LEN, allreduce="torch")
    scheduler = Scheduler(engine, metrics, max_queue=8)
    state = ServeState(scheduler=scheduler, tokenizer=tokenizer, metrics=metrics, model_name="demo",
                       max_model_len=MAX_MODEL_LEN, vocab_size=engine.model.config.vocab_size, retry_after_s=1,
                       created=0, max_request_bytes=MAX_REQUEST_BYTES)  # fmt: skip
    scheduler.start()
    try:
        with TestClient(build_app(state), raise_server_exceptions=True) as http:
            yield http
    finally:
        scheduler.stop(timeout=10)


# -- strategies ------------------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)  # fmt: skip
token_ids = st.lists(st.integers(min_value=-3, max_value=600), max_size=12)
numbers = st.integers(min_value=-5, max_value=40) | st.floats() | st.integers()  # nan, inf and 2**200 included


def maybe(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """The field's plausible values, or anything at all."""
    return st.one_of(strategy, json_values)


sampling = {
    "model": maybe(st.sampled_from(["demo", "gpt-9", ""])),
    "max_tokens": maybe(numbers),
    "temperature": maybe(st.floats(min_value=-1, max_value=3) | st.floats()),
    "top_p": maybe(st.floats(min_value=-0.5, max_value=1.5) | st.floats()),
    "seed": maybe(st.integers()),
    "stop": maybe(st.text(max_size=4) | st.lists(st.text(max_size=4), max_size=20)),
    "stream": maybe(st.booleans()),
    "stream_options": maybe(st.fixed_dictionaries({}, optional={"include_usage": maybe(st.booleans())})),
    "n": maybe(st.integers(min_value=0, max_value=3)),
    "ignore_eos": maybe(st.booleans()),
}
completion_bodies = st.fixed_dictionaries(
    {"prompt": maybe(st.text(max_size=60) | token_ids | st.lists(st.text(max_size=8), max_size=3) | st.lists(token_ids, max_size=2))},
    optional=sampling,
)  # fmt: skip
message = st.fixed_dictionaries(
    {"role": maybe(st.sampled_from(["system", "user", "assistant", "tool", "developer", "robot"]))},
    optional={"content": maybe(st.text(max_size=40) | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}), max_size=3))},
)  # fmt: skip
chat_bodies = st.fixed_dictionaries(
    {"messages": maybe(st.lists(message, max_size=3))},
    optional={**sampling, "max_completion_tokens": maybe(numbers)},
)
nested = st.integers(min_value=1, max_value=200_000).map(lambda depth: b"[" * depth + b"]" * depth)


def encode(body: Any) -> bytes:
    return json.dumps(body, allow_nan=True).encode()  # NaN and Infinity as Python writes them (json.loads reads them)


def check_answer(response) -> None:
    assert response.status_code in STATUSES, (response.status_code, response.text[:500])
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[len("data: "):] for line in response.text.splitlines() if line.startswith("data: ")]
        assert events and events[-1] == "[DONE]", response.text[-500:]
        for event in events[:-1]:
            assert isinstance(json.loads(event), dict)
        return
    body = response.json()
    if response.status_code == 200:
        assert body["choices"] and body["usage"]["total_tokens"] >= 1
    else:
        assert set(body["error"]) == {"message", "type", "param", "code"} and body["error"]["message"]


def post(client: TestClient, path: str, content: bytes):
    return client.post(path, content=content, headers={"Content-Type": "application/json"})


# -- properties ------------------------------------------------------------------------------------------------------


@PROPERTY
@given(body=completion_bodies)
def test_any_completion_body_gets_a_json_answer(client, body):
    check_answer(post(client, "/v1/completions", encode(body)))


@PROPERTY
@given(body=chat_bodies)
def test_any_chat_body_gets_a_json_answer(client, body):
    check_answer(post(client, "/v1/chat/completions", encode(body)))


@PROPERTY
@given(path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]),
       raw=st.binary(max_size=300) | json_values.map(encode) | nested)  # fmt: skip
def test_any_bytes_get_a_json_answer(client, path, raw):
    response = post(client, path, raw)
    check_answer(response)
    if len(raw) > MAX_REQUEST_BYTES:
        assert response.status_code == 413
