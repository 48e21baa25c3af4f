"""The FastAPI application: OpenAI-compatible endpoints, /health and /metrics.

Handlers run on the asyncio loop and never touch the engine: they read the body (at most ``max_request_bytes``; a
larger declared Content-Length is answered 413 before any of it is read), decode, validate and tokenize it in a worker
thread (so a large prompt never holds up /health or other requests), hand the job to the scheduler (engine thread) and
read token events back from an asyncio.Queue fed with call_soon_threadsafe.

Memory: decoding and tokenizing cost many times the body's size (tokenizers take ~250 bytes per character), so
- a text prompt is refused (400 context_length_exceeded) when a cheap lower bound on its token count
  (Tokenizer.min_tokens: its UTF-8 bytes over the longest token's) already reaches the context; only prompts that
  may fit are tokenized, i.e. at most max_model_len x longest-token bytes of text;
- the bodies being decoded and tokenized at once hold at most ``max_inflight_bytes`` between them; a request that would
  go over is answered 503 (code server_busy, Retry-After) instead of waiting.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from launcher.runtime.engine import SamplingParams
from launcher.runtime.serve import protocol
from launcher.runtime.serve.limits import DEFAULT_MAX_INFLIGHT_BYTES, DEFAULT_MAX_REQUEST_BYTES
from launcher.runtime.serve.metrics import CONTENT_TYPE, Metrics
from launcher.runtime.serve.protocol import ChatCompletionRequest, CompletionRequest, OpenAIError
from launcher.runtime.serve.scheduler import Failed, NotServing, QueueFull, Scheduler
from launcher.runtime.serve.textstream import TextStream

ENDPOINTS = ("/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions")
DEFAULT_COMPLETION_MAX_TOKENS = 16  # as in the OpenAI completions API
CLIENT_CLOSED = 499  # status recorded when the client went away before the answer (nginx's convention)


@dataclass
class ServeState:
    scheduler: Scheduler
    tokenizer: Any
    metrics: Metrics
    model_name: str
    max_model_len: int
    vocab_size: int | None
    retry_after_s: int
    created: int
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES
    inflight_bytes: int = 0  # bodies now being decoded and tokenized (changed on the event loop only)
    read_timeout_s: float = 30.0  # for the whole body, from when the handler starts reading it (then 408)
    health_timeout_s: float = 10.0  # /health is 503 when the engine loop has not come round (every rank) in this time


class _Generation:
    """One submitted sequence seen from its handler: token events in, text deltas out."""

    def __init__(self, state: ServeState, prompt_ids: list[int], params: SamplingParams, stop: list[str]) -> None:
        self.state = state
        self.prompt_tokens = len(prompt_ids)
        self.completion_tokens = 0
        self.finish_reason: str | None = None
        self._done = False
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._text = TextStream(state.tokenizer.decode, stop=stop)

        def deliver(event: Any) -> None:
            loop.call_soon_threadsafe(self._events.put_nowait, event)

        try:
            self.seq_id = state.scheduler.submit(prompt_ids, params, deliver)
        except QueueFull as exc:
            raise OpenAIError(
                503,
                f"server busy: {exc}; retry after {state.retry_after_s}s",
                type="server_error",
                code="queue_full",
                headers={"Retry-After": str(state.retry_after_s)},
            ) from None
        except NotServing as exc:
            raise OpenAIError(503, str(exc), type="server_error", code="shutting_down") from None
        state.metrics.add_prompt_tokens(self.prompt_tokens)

    async def deltas(self) -> AsyncIterator[str]:
        while not self._done:
            event = await self._events.get()
            if isinstance(event, Failed):
                self._done = True
                kind = "server_error" if event.status >= 500 else "invalid_request_error"
                raise OpenAIError(event.status, event.message, type=kind)
            self.completion_tokens += 1
            # a "stop" finish carries the stop token (EOS or a stop id): it ends the text but is not part of it
            delta = "" if event.finish_reason == "stop" else self._text.push(event.token_id)
            if self._text.stopped:
                self.finish_reason = "stop"
                self._end(reason=None if event.finished else "stop_string")
            elif event.finished:
                delta += self._text.finish()
                self.finish_reason = event.finish_reason
                self._done = True
            if delta:
                yield delta

    def cancel(self) -> None:
        """The client is gone: free the engine slot."""
        self._end(reason="client_disconnect")

    def _end(self, reason: str | None) -> None:
        if self._done:
            return
        self._done = True
        if reason is not None:
            self.state.scheduler.abort(self.seq_id)
            self.state.metrics.count_abort(reason)


class _CountRequests:
    """ASGI middleware: count answered requests by endpoint and status for /metrics."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_and_watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        finally:
            path = scope["path"]
            path = "/v1/models/{model}" if path.startswith("/v1/models/") else path if path in ENDPOINTS else "other"
            self.metrics.count_request(path, status)


class _AsciiJSONResponse(JSONResponse):
    """Error bodies echo client input (a model name, a parameter): written as ASCII JSON, so no string a client can
    send (a lone surrogate included) makes the error itself fail to encode."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _error_response(exc: OpenAIError) -> JSONResponse:
    return _AsciiJSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


def _too_large(limit: int) -> OpenAIError:
    return OpenAIError(
        413,
        f"the request body exceeds this server's limit of {limit} bytes (--max-request-bytes); send a shorter prompt",
        code="request_too_large",
    )


async def _read_body(request: Request, limit: int, timeout_s: float = 30.0) -> bytes:
    """The raw body, refused with 413 as soon as it is known to exceed ``limit`` bytes: from its Content-Length before
    any of it is read, else once that many bytes arrived; 408 when it has not all arrived within ``timeout_s``. A
    client that hangs up midway gets 499 (nobody reads it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except ClientDisconnect:
        raise OpenAIError(CLIENT_CLOSED, "the client closed the connection before the body was complete") from None
    except TimeoutError:
        raise OpenAIError(408, f"the request body did not arrive within {timeout_s:g}s (--read-timeout)",
                          code="request_timeout", headers={"Connection": "close"}) from None  # fmt: skip
    return b"".join(chunks)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _decode_json(raw: bytes) -> Any:
    """The decoded body. Everything JSON decoding refuses is the client's 400: malformed JSON, invalid UTF-8, nesting
    deeper than the decoder's recursion, and numbers Python will not convert (integers over sys.int_info's digit
    limit raise a plain ValueError). Strings must be Unicode text: a lone surrogate escape (\\ud800) is valid JSON
    syntax but no tokenizer can encode it (nor UTF-8 write it back), so it is refused here too."""
    if not raw.strip():
        raise OpenAIError(400, "the request body is empty; send a JSON object", code="invalid_json")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OpenAIError(400, f"malformed JSON in the request body: {exc}", code="invalid_json") from None
    except RecursionError:
        raise OpenAIError(400, "the request body nests too deeply to be a request; send a flat JSON object",
                          code="invalid_json") from None  # fmt: skip
    except ValueError as exc:  # int('1' * 5000): "Exceeds the limit (4300 digits) for integer string conversion"
        raise OpenAIError(400, f"a number in the request body cannot be read: {exc}", code="invalid_json") from None
    if _has_lone_surrogate(body):
        raise OpenAIError(400, "a string in the request body holds a lone UTF-16 surrogate escape (\\ud800-\\udfff); "
                          "send valid Unicode text", code="invalid_unicode")  # fmt: skip
    return body


def _has_lone_surrogate(body: Any) -> bool:
    """Whether any string (key or value) in a decoded JSON value holds a surrogate code point (json.loads pairs the
    valid ones into one character, so any left are lone). Iterative: decoded bodies can nest deeply."""
    stack = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return True
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


async def _wait_for_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _sse(payload: dict[str, Any] | str) -> str:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)}\n\n"


def build_app(state: ServeState) -> FastAPI:
    app = FastAPI(title="tp-advisor bundled runtime", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_CountRequests, metrics=state.metrics)

    @app.exception_handler(OpenAIError)
    async def _openai_error(_: Request, exc: OpenAIError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "server_error" if exc.status_code >= 500 else "invalid_request_error"
        code = "not_found" if exc.status_code == 404 else None
        return _error_response(OpenAIError(exc.status_code, str(exc.detail), type=kind, code=code))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        message = f"internal error: {type(exc).__name__}: {exc}"
        return _error_response(OpenAIError(500, message, type="server_error"))

    @app.get("/health")
    async def health() -> Response:
        """ok only when the engine loop comes round within health_timeout_s: one iteration that goes through every
        rank (a collective on the control group), so a stopped or stuck rank shows here as 503, not as ok."""
        scheduler = state.scheduler
        if scheduler.error is not None:
            return JSONResponse({"status": "error", "error": str(scheduler.error)}, status_code=503)
        if scheduler.stopping:
            return JSONResponse({"status": "shutting_down"}, status_code=503)
        seen = scheduler.probe()
        deadline = asyncio.get_running_loop().time() + state.health_timeout_s
        while scheduler.turns <= seen:
            if scheduler.error is not None:
                return JSONResponse({"status": "error", "error": str(scheduler.error)}, status_code=503)
            if asyncio.get_running_loop().time() >= deadline:
                message = (f"the engine loop has not come round in {state.health_timeout_s:g}s: a rank is stopped, "
                           "stuck or very slow")  # fmt: skip
                return JSONResponse({"status": "stalled", "error": message}, status_code=503)
            await asyncio.sleep(0.01)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics() -> Response:
        state.metrics.queued = state.scheduler.queued()
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    def model_card() -> dict[str, Any]:
        return {
            "id": state.model_name,
            "object": "model",
            "created": state.created,
            "owned_by": "tp-advisor",
            "max_model_len": state.max_model_len,
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model:path}")
    async def model(model: str) -> dict[str, Any]:
        _check_model(state, model)
        return model_card()

    def prepare_completion(raw: bytes) -> tuple[CompletionRequest, list[int], SamplingParams]:
        req: CompletionRequest = protocol.parse_request(CompletionRequest, _decode_json(raw))
        _check_model(state, req.model)
        prompt_ids = _prompt_ids(state, req.prompt_text_or_ids())
        return req, prompt_ids, _sampling_params(state, req, prompt_ids, req.max_tokens, DEFAULT_COMPLETION_MAX_TOKENS)

    def prepare_chat(raw: bytes) -> tuple[ChatCompletionRequest, list[int], SamplingParams]:
        req: ChatCompletionRequest = protocol.parse_request(ChatCompletionRequest, _decode_json(raw))
        _check_model(state, req.model)
        prompt_ids = _prompt_ids(state, _chat_prompt_ids(state, req))
        return req, prompt_ids, _sampling_params(state, req, prompt_ids, req.requested_max_tokens(), None)

    async def _submit(
        request: Request, prepare: Callable[[bytes], tuple], id_prefix: str
    ) -> tuple[CompletionRequest | ChatCompletionRequest, _Generation, str]:
        """Read the body, parse and tokenize it with ``prepare`` (CPU-heavy: off the event loop) and submit the
        sequence: the request, its generation and the response id."""
        raw = await _read_body(request, state.max_request_bytes, state.read_timeout_s)
        if state.inflight_bytes + len(raw) > state.max_inflight_bytes:
            raise OpenAIError(
                503,
                f"server busy: {state.inflight_bytes} bytes of requests are being prepared (--max-inflight-bytes "
                f"{state.max_inflight_bytes}); retry after {state.retry_after_s}s",
                type="server_error",
                code="server_busy",
                headers={"Retry-After": str(state.retry_after_s)},
            )
        state.inflight_bytes += len(raw)
        try:
            req, prompt_ids, params = await run_in_threadpool(prepare, raw)
        finally:
            state.inflight_bytes -= len(raw)
        del raw
        return req, _Generation(state, prompt_ids, params, req.stop_strings()), protocol.new_id(id_prefix)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        req, gen, rid = await _submit(request, prepare_completion, "cmpl")

        def chunk(text: str, fin: str | None) -> dict[str, Any]:
            return protocol.completion_chunk(rid, state.model_name, text, fin)

        return await _answer(request, req, gen, rid, chunk, protocol.completion_response)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        req, gen, rid = await _submit(request, prepare_chat, "chatcmpl")

        def chunk(text: str, fin: str | None) -> dict[str, Any]:
            return protocol.chat_chunk(rid, state.model_name, {"content": text} if text or not fin else {}, fin)

        # the first chunk announces the assistant role, as OpenAI does
        opening = protocol.chat_chunk(rid, state.model_name, {"role": "assistant", "content": ""}, None)
        return await _answer(request, req, gen, rid, chunk, protocol.chat_response, opening)

    async def _answer(
        request: Request,
        req: CompletionRequest | ChatCompletionRequest,
        gen: _Generation,
        rid: str,
        chunk: Callable[[str, str | None], dict[str, Any]],
        response: Callable[..., dict[str, Any]],
        opening: dict[str, Any] | None = None,
    ) -> Response:
        """One endpoint's answer: an SSE stream of chunks, or the whole response (499 if the client left first)."""
        if req.stream:
            return _stream(gen, req, chunk, rid, opening)
        text = await _collect(gen, request)
        if text is None:
            return Response(status_code=CLIENT_CLOSED)
        body = response(rid, state.model_name, text, gen.finish_reason, gen.prompt_tokens, gen.completion_tokens)
        return JSONResponse(body)

    def _stream(
        gen: _Generation,
        req: CompletionRequest | ChatCompletionRequest,
        chunk: Callable[[str, str | None], dict[str, Any]],
        rid: str,
        opening: dict[str, Any] | None,
    ) -> StreamingResponse:
        async def events() -> AsyncIterator[str]:
            try:
                if opening is not None:
                    yield _sse(opening)
                async for delta in gen.deltas():
                    yield _sse(chunk(delta, None))
                final = chunk("", gen.finish_reason)
                yield _sse(final)
                if req.wants_usage_chunk():
                    usage = protocol.usage_chunk(
                        rid, state.model_name, final["object"], gen.prompt_tokens, gen.completion_tokens
                    )
                    yield _sse(usage)
            except OpenAIError as exc:
                yield _sse(exc.body())
            finally:
                gen.cancel()  # no-op when finished; frees the slot when the client went away mid-stream
            yield _sse("[DONE]")

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    return app


async def _collect(gen: _Generation, request: Request) -> str | None:
    """The whole completion text, or None when the client disconnected first (the sequence is then aborted)."""
    parts: list[str] = []

    async def consume() -> None:
        async for delta in gen.deltas():
            parts.append(delta)

    consumer = asyncio.create_task(consume())
    watcher = asyncio.create_task(_wait_for_disconnect(request))
    try:
        await asyncio.wait({consumer, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if consumer.done():
            consumer.result()  # re-raises OpenAIError from a failed sequence
            return "".join(parts)
        return None
    finally:
        watcher.cancel()
        consumer.cancel()
        gen.cancel()


def _check_model(state: ServeState, model: str | None) -> None:
    if model is not None and model != state.model_name:
        raise OpenAIError(
            404,
            f"the model '{model}' does not exist; this server serves '{state.model_name}'",
            param="model",
            code="model_not_found",
        )


def _chat_prompt_ids(state: ServeState, req: ChatCompletionRequest) -> list[int]:
    """The model's chat template when it has one, else the tokenizer's documented plain format
    ("role: content" lines, then "assistant:")."""
    messages = [{"role": m.role, "content": m.text()} for m in req.messages]
    try:
        return list(state.tokenizer.encode_chat(messages, check=lambda text: _check_length_bound(state, text, "messages")))
    except OpenAIError:
        raise
    except Exception as exc:  # templates reject conversations with raise_exception(...)
        raise OpenAIError(400, f"the chat template rejected the messages: {exc}", param="messages") from None


def _too_long(state: ServeState, tokens: str, param: str) -> OpenAIError:
    return OpenAIError(
        400,
        f"the prompt has {tokens} tokens; this model's maximum context length is {state.max_model_len} tokens "
        "(prompt plus completion); shorten the prompt",
        param=param,
        code="context_length_exceeded",
    )


def _check_length_bound(state: ServeState, text: str, param: str) -> None:
    """Refuse, before tokenizing it, a text that has at least max_model_len tokens by the tokenizer's cheap lower
    bound (it never refuses a prompt that would fit: see Tokenizer.min_tokens)."""
    min_tokens = getattr(state.tokenizer, "min_tokens", None)
    if min_tokens is not None and (bound := min_tokens(text)) >= state.max_model_len:
        raise _too_long(state, f"at least {bound}", param)


def _prompt_ids(state: ServeState, prompt: str | list[int]) -> list[int]:
    if isinstance(prompt, str):
        _check_length_bound(state, prompt, "prompt")
        ids = list(state.tokenizer.encode(prompt))
    else:
        if len(prompt) >= state.max_model_len:
            raise _too_long(state, str(len(prompt)), "prompt")
        ids = list(prompt)
        if state.vocab_size is not None and any(not 0 <= t < state.vocab_size for t in ids):
            raise OpenAIError(
                422, f"prompt: token ids must lie in [0, {state.vocab_size})", param="prompt", code="invalid_token_id"
            )
    if not ids:
        raise OpenAIError(400, "the prompt is empty", param="prompt", code="empty_prompt")
    if len(ids) >= state.max_model_len:
        raise _too_long(state, str(len(ids)), "prompt")
    return ids


def _sampling_params(
    state: ServeState, req: Any, prompt_ids: list[int], max_tokens: int | None, default_max_tokens: int | None
) -> SamplingParams:
    room = state.max_model_len - len(prompt_ids)
    if max_tokens is None:
        max_tokens = room if default_max_tokens is None else min(default_max_tokens, room)
    elif max_tokens > room:
        raise OpenAIError(
            400,
            f"max_tokens={max_tokens} plus the prompt's {len(prompt_ids)} tokens exceeds this model's maximum context "
            f"length of {state.max_model_len} tokens; ask for at most {room}",
            param="max_tokens",
            code="context_length_exceeded",
        )
    # The engine stops at the model's EOS ids itself unless ignore_eos.
    return SamplingParams(
        max_tokens=max_tokens,
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        seed=req.seed,
        ignore_eos=req.ignore_eos,
    )
