"""The HTTP/1.1 connection layer under the app: uvicorn's h11 protocol with two changes.

- Requests h11 refuses before the app sees them are answered in JSON like every other error, not uvicorn's plain-text
  400: a Content-Length too large for h11 to read (more than 20 digits) is 413 request_too_large, any other
  malformed request 400 invalid_request.
- A header read deadline: a connection has `timeout_s` seconds from its first byte (or from the end of the previous
  response) to finish sending a request's headers; otherwise it gets 408 request_timeout and is closed. uvicorn's
  own keep-alive timeout only covers an idle connection, so a client sending a byte now and then held it forever.
  The body has the same deadline in the app (app._read_body).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*([0-9]+)[ \t]*\r\n", re.IGNORECASE)
_HEAD_KEPT = 64 * 1024  # bytes of a request head kept to explain a refusal (h11 refuses heads over 16 KiB itself)


def raw_json_response(status: int, reason: str, message: str, code: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n")  # fmt: skip
    return head.encode("ascii") + body.encode("ascii")


def protocol_class(timeout_s: float, max_request_bytes: int) -> type[H11Protocol]:
    class Protocol(H11Protocol):
        _head = b""
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and len(self._head) < _HEAD_KEPT:
                self._head += data[: _HEAD_KEPT - len(self._head)]
            self._arm()
            super().data_received(data)
            self._disarm_once_headers_are_in()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._head = b""
            self._disarm_once_headers_are_in()  # a pipelined request may already be in
            if self.conn.their_state is h11.IDLE:
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is None and self.conn.their_state is h11.IDLE:
                self._deadline = self.loop.call_later(timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _disarm_once_headers_are_in(self) -> None:
            if self.conn.their_state is not h11.IDLE:
                self._disarm()
                self._head = b""

        def _too_slow(self) -> None:
            self._deadline = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            message = f"the request headers did not arrive within {timeout_s:g}s"
            self.transport.write(raw_json_response(408, "Request Timeout", message, "request_timeout"))
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._disarm()
            declared = _CONTENT_LENGTH.search(self._head)
            digits = declared.group(1).lstrip(b"0") if declared else b""
            if len(digits) > 18 or (digits and int(digits) > max_request_bytes):  # 18 digits: no int() of a huge one
                answer = raw_json_response(
                    413, "Content Too Large",
                    f"the request body exceeds this server's limit of {max_request_bytes} bytes (--max-request-bytes); "
                    "send a shorter prompt",
                    "request_too_large",
                )  # fmt: skip
            else:
                answer = raw_json_response(400, "Bad Request", "malformed HTTP request", "invalid_request")
            self.transport.write(answer)
            self.transport.close()

    return Protocol


def uvicorn_options(timeout_s: float, max_request_bytes: int) -> dict[str, Any]:
    return {"http": protocol_class(timeout_s, max_request_bytes), "timeout_keep_alive": max(1, min(5, int(timeout_s)))}
