"""Fast checks of the server's parts that need no running server: text streaming with stop strings, request
validation, the Prometheus rendering, the loopback-only host rule, port-in-use detection."""

from __future__ import annotations

import argparse
import errno
import socket

import pytest

from launcher.runtime.serve import add_serve_args, preflight_error
from launcher.runtime.serve.metrics import Metrics
from launcher.runtime.serve.protocol import ChatCompletionRequest, CompletionRequest, OpenAIError, parse_request
from launcher.runtime.serve.server import ServeConfigError, bind_socket, loopback_host, url_for
from launcher.runtime.serve.textstream import TextStream


def byte_decode(ids: list[int]) -> str:
    return bytes(ids).decode("utf-8", errors="replace")


def run_stream(text: bytes, stop: list[str]) -> tuple[list[str], TextStream]:
    stream = TextStream(byte_decode, stop=stop)
    deltas = [stream.push(b) for b in text]
    deltas.append(stream.finish())
    return deltas, stream


def test_text_without_stop_is_released_token_by_token() -> None:
    deltas, stream = run_stream(b"hello", [])
    assert deltas == ["h", "e", "l", "l", "o", ""]
    assert stream.text == "hello" and not stream.stopped


def test_stop_string_cuts_the_text_and_is_never_emitted() -> None:
    deltas, stream = run_stream(b"abc STOP def", ["STOP"])
    assert "".join(deltas) == "abc " == stream.text
    assert stream.stopped
    assert all("S" not in d for d in deltas)


def test_partial_stop_prefix_is_held_back_then_released() -> None:
    stream = TextStream(byte_decode, stop=["xyz"])
    assert stream.push(ord("a")) == "a"
    assert stream.push(ord("x")) == ""  # could be the start of "xyz"
    assert stream.push(ord("y")) == ""
    assert stream.push(ord("q")) == "xyq"  # it was not
    assert stream.finish() == ""


def test_earliest_of_several_stop_strings_wins() -> None:
    deltas, stream = run_stream(b"one two three", ["three", "two"])
    assert stream.text == "one " and "".join(deltas) == "one "


def test_stop_string_spanning_tokens_and_at_the_start() -> None:
    deltas, stream = run_stream(b"END", ["END"])
    assert "".join(deltas) == "" and stream.stopped


def test_split_utf8_character_is_held_until_complete() -> None:
    stream = TextStream(byte_decode)
    euro = "€".encode()
    assert stream.push(euro[0]) == ""
    assert stream.push(euro[1]) == ""
    assert stream.push(euro[2]) == "€"


def test_incomplete_utf8_at_the_end_is_flushed_by_finish() -> None:
    stream = TextStream(byte_decode)
    assert stream.push(0xE2) == ""
    assert stream.finish() == "\ufffd"


def test_tokens_after_a_stop_are_ignored() -> None:
    stream = TextStream(byte_decode, stop=["b"])
    assert stream.push(ord("a")) == "a"
    assert stream.push(ord("b")) == ""
    assert stream.push(ord("c")) == ""
    assert stream.finish() == "" and stream.text == "a"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
        ({"prompt": "x", "max_tokens": 0}, "max_tokens"),
        ({"prompt": "x", "max_tokens": "5"}, "max_tokens"),
        ({"prompt": "x", "max_tokens": 2.5}, "max_tokens"),
        ({"prompt": "x", "temperature": "hot"}, "temperature"),
        ({"prompt": "x", "temperature": -0.1}, "temperature"),
        ({"prompt": "x", "top_p": 0}, "top_p"),
        ({"prompt": "x", "n": 2}, "n"),
        ({"prompt": "x", "stream": "yes"}, "stream"),
        ({"prompt": "x", "stop": [""]}, "stop"),
        ({"prompt": "x", "stop": 7}, "stop"),
        ({"prompt": ["a", "b"]}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "x", "best_of": 3}, "best_of"),
        ({"prompt": "x", "logprobs": 2}, "logprobs"),
        ({}, "prompt"),
    ],
)
def test_bad_completion_fields_are_422_naming_the_parameter(body: dict, param: str) -> None:
    with pytest.raises(OpenAIError) as info:
        parse_request(CompletionRequest, body)
    assert info.value.status == 422
    assert info.value.param is not None and info.value.param.split(".")[0] == param
    error = info.value.body()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]


def test_request_body_must_be_an_object() -> None:
    with pytest.raises(OpenAIError) as info:
        parse_request(CompletionRequest, ["prompt"])
    assert info.value.status == 422


def test_completion_prompt_forms() -> None:
    assert parse_request(CompletionRequest, {"prompt": "hi"}).prompt_text_or_ids() == "hi"
    assert parse_request(CompletionRequest, {"prompt": [1, 2]}).prompt_text_or_ids() == [1, 2]
    assert parse_request(CompletionRequest, {"prompt": ["hi"]}).prompt_text_or_ids() == "hi"
    assert parse_request(CompletionRequest, {"prompt": [[3, 4]]}).prompt_text_or_ids() == [3, 4]
    assert parse_request(CompletionRequest, {"prompt": "x", "stop": "a"}).stop_strings() == ["a"]


def test_chat_request_validation() -> None:
    req = parse_request(
        ChatCompletionRequest,
        {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
            "max_completion_tokens": 3,
            "max_tokens": 9,
        },
    )
    assert req.messages[0].text() == "ab" and req.requested_max_tokens() == 3
    for bad in (
        {"messages": []},
        {"messages": [{"role": "wizard", "content": "x"}]},
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
        {"messages": "hello"},
    ):
        with pytest.raises(OpenAIError) as info:
            parse_request(ChatCompletionRequest, bad)
        assert info.value.status == 422 and info.value.param.startswith("messages")


def test_metrics_render_prometheus_text() -> None:
    """prometheus_client writes the exposition (values as floats: 2.0); its own parser reads every family back."""
    from prometheus_client.parser import text_string_to_metric_families

    metrics = Metrics(model='m"1', tp_size=2, max_batch_size=8, max_model_len=2048, allreduce="flashinfer-fusion")
    metrics.count_request("/v1/completions", 200)
    metrics.count_request("/v1/completions", 200)
    metrics.count_request("/v1/completions", 422)
    metrics.count_abort("client_disconnect")
    metrics.add_prompt_tokens(7)
    metrics.record_step(generated=3, running=3, queued=1)
    metrics.observe_first_token(0.3)
    metrics.observe_inter_token(0.02)
    metrics.observe_inter_token(0.04)
    metrics.observe_queue_time(0.0)
    text = metrics.render()
    assert 'tp_runtime_requests_total{endpoint="/v1/completions",status="200"} 2.0\n' in text
    assert 'tp_runtime_model_info{model="m\\"1"} 1.0\n' in text
    assert "# TYPE tp_runtime_requests_total counter" in text and "# TYPE tp_runtime_running_requests gauge" in text
    assert "_created" not in text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip
    assert samples[("tp_runtime_requests_total", (("endpoint", "/v1/completions"), ("status", "422")))] == 1
    assert samples[("tp_runtime_aborted_requests_total", (("reason", "client_disconnect"),))] == 1
    assert samples[("tp_runtime_prompt_tokens_total", ())] == 7
    assert samples[("tp_runtime_generation_tokens_total", ())] == 3
    assert samples[("tp_runtime_running_requests", ())] == 3 and samples[("tp_runtime_queued_requests", ())] == 1
    assert samples[("tp_runtime_allreduce_strategy", (("strategy", "flashinfer-fusion"),))] == 1
    assert samples[("tp_runtime_time_to_first_token_seconds_count", ())] == 1
    assert samples[("tp_runtime_time_to_first_token_seconds_bucket", (("le", "0.25"),))] == 0
    assert samples[("tp_runtime_time_to_first_token_seconds_bucket", (("le", "0.5"),))] == 1
    assert samples[("tp_runtime_inter_token_latency_seconds_count", ())] == 2
    assert abs(samples[("tp_runtime_inter_token_latency_seconds_sum", ())] - 0.06) < 1e-9
    assert samples[("tp_runtime_request_queue_time_seconds_count", ())] == 1
    assert metrics.generation_tokens == 3 and metrics.requests("/v1/completions", 200) == 2
    for line in text.splitlines():  # every sample line is "name{labels} value"
        if not line.startswith("#"):
            assert line.startswith("tp_runtime_") and float(line.rsplit(" ", 1)[1]) >= 0


@pytest.mark.parametrize(
    ("host", "bound"),
    [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"), ("::1", "::1"), ("127.0.0.5", "127.0.0.5")],
)
def test_loopback_hosts_are_accepted(host: str, bound: str) -> None:
    assert loopback_host(host) == bound


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", ""])
def test_other_hosts_are_refused(host: str) -> None:
    with pytest.raises(ServeConfigError, match="127.0.0.1, ::1 or localhost"):
        loopback_host(host)


def test_port_in_use_is_a_clear_error() -> None:
    first = bind_socket("127.0.0.1", 0)
    first.listen()
    port = first.getsockname()[1]
    try:
        with pytest.raises(OSError) as info:
            bind_socket("127.0.0.1", port)
        assert info.value.errno == errno.EADDRINUSE
        assert (
            info.value.strerror == f"127.0.0.1:{port} is already in use; stop the other server or pick another --port"
        )
    finally:
        first.close()
    again = bind_socket("127.0.0.1", port)  # free again
    again.close()


def test_url_brackets_ipv6() -> None:
    assert url_for("127.0.0.1", 80) == "http://127.0.0.1:80"
    assert url_for("::1", 80) == "http://[::1]:80"


def test_bound_socket_is_loopback_only() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1" and sock.family == socket.AF_INET
    finally:
        sock.close()


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    return parser.parse_args(list(argv))


def test_preflight_names_the_problem_before_any_model_is_loaded() -> None:
    assert serve_args().host == "127.0.0.1" and serve_args().port == 30000
    assert preflight_error(serve_args("--port", "0")) is None
    assert "not a loopback address" in preflight_error(serve_args("--host", "0.0.0.0"))
    assert "--max-queue 0 must be at least 1" in preflight_error(serve_args("--max-queue", "0"))
    assert "out of range" in preflight_error(serve_args("--port", "70000"))
    busy = bind_socket("127.0.0.1", 0)
    busy.listen()
    try:
        port = busy.getsockname()[1]
        assert preflight_error(serve_args("--port", str(port))) == (
            f"127.0.0.1:{port} is already in use; stop the other server or pick another --port"
        )
    finally:
        busy.close()
