"""Issue 30, the bundled server's classes: no valid request kills the engine loop (numerically safe sampling, one
request's failure stays its own), prompts are refused by a cheap bound before they cost memory, client input never
gets a 500, timeouts are finite, /health notices a loop that stopped making progress.

In this process on the demo model (tp 1) with the real app and scheduler, through Starlette's TestClient with
raise_server_exceptions=True, so an exception that would reach uvicorn fails the test. What needs a real server is in
test_serve.py: the JSON 503 at the shutdown timeout, JSON 413/400 for a Content-Length h11 refuses, 408 for slow
headers and bodies, /health with a SIGSTOPped tp 2 rank.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_models import open_runtime
from starlette.testclient import TestClient

from launcher.runtime import demo
from launcher.runtime.engine import SamplingParams, TokenEvent
from launcher.runtime.sampling import make_generator, sample, sample_one
from launcher.runtime.serve.app import ServeState, build_app
from launcher.runtime.serve.metrics import Metrics
from launcher.runtime.serve.scheduler import Failed, Scheduler
from launcher.runtime.tokenizer import Tokenizer

MAX_MODEL_LEN = 32
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

# every temperature and top_p the API accepts, the awkward ends weighted in: subnormal, tiny, one ulp from the bounds
temperatures = st.sampled_from([0.0, 5e-324, 1e-46, 1e-39, 1e-30, 1e-8, 1e-4, 2.0]) | st.floats(0.0, 2.0)
top_ps = st.sampled_from([5e-324, 1e-46, 1e-39, 1e-8, 0.5, 1 - 1e-16, 1.0]) | st.floats(0.0, 1.0, exclude_min=True)
logit_values = st.floats(-1e38, 1e38) | st.sampled_from([float("inf"), float("-inf"), float("nan"), 0.0, 88.0, -88.0])


@pytest.fixture(scope="module")
def model_dir():
    return demo.ensure_demo_model()


def make_state(model_dir, engine=None, **extra: Any) -> ServeState:
    engine = engine or open_runtime(model_dir, max_batch_size=4, max_model_len=MAX_MODEL_LEN)
    tokenizer = Tokenizer.from_dir(model_dir, engine.eos_token_ids)
    metrics = Metrics(model="demo", tp_size=1, max_batch_size=4, max_model_len=MAX_MODEL_LEN, allreduce="torch")
    scheduler = Scheduler(engine, metrics, max_queue=8, heartbeat_s=0.05)
    return ServeState(scheduler=scheduler, tokenizer=tokenizer, metrics=metrics, model_name="demo",
                      max_model_len=MAX_MODEL_LEN, vocab_size=engine.model.config.vocab_size, retry_after_s=1,
                      created=0, **extra)  # fmt: skip


@pytest.fixture(scope="module")
def state(model_dir) -> Iterator[ServeState]:
    state = make_state(model_dir)
    state.scheduler.start()
    try:
        yield state
    finally:
        state.scheduler.stop(timeout=10)


@pytest.fixture(scope="module")
def client(state) -> Iterator[TestClient]:
    with TestClient(build_app(state), raise_server_exceptions=True) as http:
        yield http


def complete(client: TestClient, **body: Any):
    return client.post("/v1/completions", json={"prompt": "hello", "max_tokens": 3, **body})


def assert_json_error(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


# -- 1. sampling is numerically safe; one request's failure is its own -------------------------------------------------


@PROPERTY
@given(temperature=temperatures, top_p=top_ps, values=st.lists(logit_values, min_size=1, max_size=40),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64]), seed=st.integers(0, 2**32))
def test_sampling_answers_a_token_for_every_accepted_value(temperature, top_p, values, dtype, seed):  # fmt: skip
    logits = torch.tensor(values, dtype=torch.float64).to(dtype)
    token = sample_one(logits, temperature, top_p, make_generator(seed))
    assert 0 <= token < len(values)
    finite = torch.nan_to_num(logits.double(), nan=-math.inf)
    if temperature < 1e-4 and torch.isfinite(finite).any():
        assert finite[token] == finite.max()  # tiny temperatures are greedy


def test_tiny_temperature_and_top_p_sample_the_best_token() -> None:
    logits = torch.tensor([0.0, 3.0, 1.0, -2.0])
    params = [SamplingParams(temperature=1e-39), SamplingParams(temperature=1.0, top_p=1e-46)]
    assert sample(logits.expand(2, 4), params, [make_generator(1), make_generator(2)]) == [1, 1]


def test_a_tiny_temperature_or_top_p_request_is_answered_and_the_loop_lives(client, state) -> None:
    for body in ({"temperature": 1e-39}, {"top_p": 1e-46}, {"temperature": 5e-324, "top_p": 5e-324}):
        assert complete(client, **body).status_code == 200, body
    assert state.scheduler.error is None
    assert complete(client).status_code == 200


def test_a_failing_delivery_fails_that_request_alone(model_dir) -> None:
    engine = open_runtime(model_dir, max_batch_size=4, max_model_len=MAX_MODEL_LEN)
    metrics = Metrics(model="demo", tp_size=1, max_batch_size=4, max_model_len=MAX_MODEL_LEN, allreduce="torch")
    scheduler = Scheduler(engine, metrics, max_queue=8, heartbeat_s=0.05)
    events: dict[str, list] = {"bad": [], "good": []}
    done = threading.Event()

    def bad(event) -> None:
        events["bad"].append(event)
        if isinstance(event, TokenEvent):
            raise ValueError("the handler broke")

    def good(event) -> None:
        events["good"].append(event)
        if isinstance(event, Failed) or event.finished:
            done.set()

    scheduler.submit([1, 2, 3], SamplingParams(max_tokens=8, ignore_eos=True), bad)
    scheduler.submit([1, 2, 3], SamplingParams(max_tokens=8, ignore_eos=True), good)
    scheduler.start()
    try:
        assert done.wait(30)
    finally:
        scheduler.stop()
    assert scheduler.error is None
    assert isinstance(events["bad"][-1], Failed) and events["bad"][-1].status == 500
    assert len(events["good"]) == 8 and events["good"][-1].finish_reason == "length"
    assert engine.free_slots() == 4


# -- 3. client input never gets a 500: JSON numbers the decoder refuses, strings no tokenizer encodes ------------------

FIELDS = ("prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "model", "user", "n")
CLIENT_STATUSES = {200, 400, 404, 413, 422}
# JSON number text: integers of any length (beyond Python's 4300-digit conversion limit too), fractions, exponents
json_numbers = st.integers(1, 6000).map(lambda n: "9" * n) | st.builds(
    lambda sign, digits, frac, exp: f"{sign}{digits}{frac}{exp}",
    st.sampled_from(["", "-"]),
    st.integers(1, 6000).map(lambda n: "9" * n) | st.integers(0, 10**6).map(str),
    st.sampled_from(["", ".5", ".000001"]),
    st.sampled_from(["", "e5", "E-400", "e999999", "e+308"]),
)
# strings with lone surrogates mixed in (json.dumps writes them as \udXXX escapes, as a client library would)
json_strings = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=12).map(json.dumps)  # fmt: skip


def check_client_answer(response) -> None:
    assert response.status_code in CLIENT_STATUSES, (response.status_code, response.text[:300])
    if response.status_code != 200:
        assert_json_error(response, response.status_code)


@settings(PROPERTY, max_examples=150)
@given(path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]), field=st.sampled_from(FIELDS),
       value=json_numbers | json_strings, in_list=st.booleans())  # fmt: skip
def test_any_json_number_or_string_in_any_field_gets_a_4xx_json_error_or_an_answer(client, path, field, value, in_list):
    value = f"[{value}]" if in_list else value
    base = '"prompt": "hi"' if path == "/v1/completions" else '"messages": [{"role": "user", "content": "hi"}]'
    raw = f'{{{base}, "max_tokens": 2, "{field}": {value}}}' if field != "prompt" else f'{{"prompt": {value}, "max_tokens": 2}}'
    check_client_answer(client.post(path, content=raw.encode(), headers={"Content-Type": "application/json"}))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"prompt": "hi", "max_tokens": ' + b"1" * 5000 + b"}",
        b'{"prompt": [' + b"7" * 4301 + b"]}",
        b'{"prompt": "a\\ud800b"}',
        b'{"prompt": "hi", "model": "\\udfff"}',
        b'{"messages": [{"role": "user", "content": "\\ud83d"}]}',
    ],
    ids=["long-int-max-tokens", "long-int-token-id", "surrogate-prompt", "surrogate-model", "surrogate-chat"],
)
def test_numbers_and_strings_the_server_cannot_use_are_400(client, raw) -> None:
    path = "/v1/chat/completions" if b"messages" in raw else "/v1/completions"
    error = assert_json_error(client.post(path, content=raw, headers={"Content-Type": "application/json"}), 400)
    assert error["code"] in {"invalid_json", "invalid_unicode"}


# -- 2. no input costs gigabytes: a cheap length bound before tokenizing, a cap on bytes being prepared ----------------

special_texts = st.sampled_from(["<|endoftext|>", "<|im_start|>", "<|reserved_123|>", " ", "\n", "é", "😀", "a"])
texts = st.text(max_size=200) | st.lists(special_texts | st.text(max_size=5), max_size=60).map("".join)


@PROPERTY
@given(text=texts, special=st.booleans())
def test_the_cheap_bound_never_exceeds_the_real_token_count(state, text, special) -> None:
    assert state.tokenizer.min_tokens(text) <= len(state.tokenizer.encode(text, add_special_tokens=special))


class CountingTokenizer:
    """The real tokenizer, counting the characters it was asked to tokenize."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.encoded = 0

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        self.encoded += len(text)
        return self.inner.encode(text, add_special_tokens)

    def encode_chat(self, messages, check=None):
        text = self.inner.apply_chat_template(messages)
        if check is not None:
            check(text)
        return self.encode(text, add_special_tokens=not self.inner.has_chat_template)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_prompt_longer_than_the_context_is_refused_before_it_is_tokenized(model_dir) -> None:
    state = make_state(model_dir, max_request_bytes=4 << 20, max_inflight_bytes=16 << 20)
    state.tokenizer = counting = CountingTokenizer(state.tokenizer)
    with TestClient(build_app(state), raise_server_exceptions=True) as http:
        huge = "lorem ipsum " * 300_000  # 3.6 MB: ~1 GB of memory to tokenize
        for path, body in (("/v1/completions", {"prompt": huge}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": huge}]})):  # fmt: skip
            error = assert_json_error(http.post(path, json=body), 400)
            assert error["code"] == "context_length_exceeded" and "at least" in error["message"]
        assert counting.encoded == 0
        error = assert_json_error(http.post("/v1/completions", json={"prompt": list(range(200_000))}), 400)
        assert error["code"] == "context_length_exceeded"
        # a prompt that fits is still tokenized and answered
        state.scheduler.start()
        try:
            assert http.post("/v1/completions", json={"prompt": "hello", "max_tokens": 2}).status_code == 200
        finally:
            state.scheduler.stop(timeout=10)
        assert counting.encoded == len("hello")


def test_bodies_being_prepared_are_capped_with_a_503(model_dir) -> None:
    state = make_state(model_dir, max_request_bytes=4096, max_inflight_bytes=8192)
    with TestClient(build_app(state), raise_server_exceptions=True) as http:
        state.inflight_bytes = 8000  # as if other requests were being tokenized now
        response = http.post("/v1/completions", json={"prompt": "x" * 500})
        error = assert_json_error(response, 503)
        assert error["code"] == "server_busy" and response.headers["retry-after"] == "1"
        state.inflight_bytes = 0
        state.scheduler.start()
        try:
            assert http.post("/v1/completions", json={"prompt": "x" * 5, "max_tokens": 1}).status_code == 200
        finally:
            state.scheduler.stop(timeout=10)
    assert state.inflight_bytes == 0


# -- 4. shutdown options are finite; 5. /health notices a loop that stopped coming round -------------------------------


@pytest.mark.parametrize("flag", ["--shutdown-timeout", "--health-timeout"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999", "-1", "soon"])
def test_non_finite_or_negative_timeouts_are_refused_when_parsed(flag, value, capsys) -> None:
    import argparse

    from launcher.runtime.serve.server import add_serve_args

    parser = argparse.ArgumentParser(prog="serve")
    add_serve_args(parser)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([f"{flag}={value}"])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"serve: error: argument {flag}:") and value in last


def test_health_is_503_while_the_engine_loop_is_stuck_and_ok_again_after(model_dir) -> None:
    state = make_state(model_dir, health_timeout_s=0.5)
    engine = state.scheduler._engine
    release, entered = threading.Event(), threading.Event()
    real_step = engine.step

    def stuck_step():
        entered.set()
        release.wait(30)  # as a collective does when another rank is stopped
        return real_step()

    engine.step = stuck_step
    state.scheduler.start()
    try:
        with TestClient(build_app(state), raise_server_exceptions=True) as http:
            assert http.get("/health").json() == {"status": "ok"}
            state.scheduler.submit([1, 2, 3], SamplingParams(max_tokens=2), lambda event: None)
            assert entered.wait(10)
            response = http.get("/health")
            assert response.status_code == 503 and response.json()["status"] == "stalled"
            release.set()
            assert http.get("/health").json() == {"status": "ok"}
    finally:
        release.set()
        state.scheduler.stop(timeout=10)


def test_a_failing_engine_step_fails_its_requests_alone_and_the_loop_serves_on(model_dir) -> None:
    """A step that raises (here the real engine's sampling, made to fail for one marked request) withdraws that step's
    sequences and answers their requests 500; the loop lives and the next request is served."""
    from launcher.runtime import engine as engine_module

    engine = open_runtime(model_dir, max_batch_size=4, max_model_len=MAX_MODEL_LEN)
    real_sample = engine_module.sample

    def failing_sample(logits, params, generators):
        if any(p.seed == 666 for p in params):
            raise RuntimeError("sampling broke")
        return real_sample(logits, params, generators)

    engine_module.sample = failing_sample
    metrics = Metrics(model="demo", tp_size=1, max_batch_size=4, max_model_len=MAX_MODEL_LEN, allreduce="torch")
    scheduler = Scheduler(engine, metrics, max_queue=8, heartbeat_s=0.05)
    events: dict[str, list] = {"bad": [], "after": []}
    done = threading.Event()

    def after(event) -> None:
        events["after"].append(event)
        if isinstance(event, Failed) or event.finished:
            done.set()

    try:
        scheduler.submit([1, 2, 3], SamplingParams(max_tokens=4, temperature=1.0, seed=666), events["bad"].append)
        scheduler.start()
        deadline = threading.Event()
        for _ in range(200):
            if events["bad"]:
                break
            deadline.wait(0.05)
        scheduler.submit([1, 2, 3], SamplingParams(max_tokens=4, ignore_eos=True), after)
        assert done.wait(30)
    finally:
        engine_module.sample = real_sample
        scheduler.stop()
    assert scheduler.error is None
    assert isinstance(events["bad"][-1], Failed) and events["bad"][-1].status == 500
    assert len(events["after"]) == 4 and events["after"][-1].finish_reason == "length"
    assert engine.free_slots() == 4
