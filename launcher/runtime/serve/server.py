"""`--mode serve`: options, socket binding, uvicorn on rank 0, the follower loop on the other ranks.

Exit codes: 0 after a graceful shutdown (SIGINT/SIGTERM), 1 when the port cannot be bound or the engine failed,
2 for a bad serve option (e.g. a host that is not a loopback address).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import ipaddress
import math
import signal
import socket
import sys
import time
from collections.abc import Callable, Generator
from typing import Any

from launcher.runtime.contract import READY_PREFIX
from launcher.runtime.serve.limits import DEFAULT_MAX_INFLIGHT_BYTES, DEFAULT_MAX_REQUEST_BYTES, INFLIGHT_REQUESTS

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
LOOPBACK_HINT = "use 127.0.0.1, ::1 or localhost"


SHUTDOWN_GRACE_S = 3.0  # after --shutdown-timeout, what requests still running get to send their 503


class ServeConfigError(ValueError):
    """A serve option that cannot work (e.g. a non-loopback --host); the message is one line with the fix."""


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds, 0 or more (inf and nan would only fail at SIGTERM)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds, 0 or more")
    return value


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("serve mode")
    group.add_argument(
        "--host", default="127.0.0.1", help="loopback address to listen on: 127.0.0.1 (default), ::1 or localhost"
    )
    group.add_argument("--port", type=int, default=30000, help="TCP port (default 30000; 0 picks a free one)")
    group.add_argument(
        "--served-model-name", default=None, help="model id clients must use (default: the --model value)"
    )
    group.add_argument(
        "--max-queue", type=int, default=256, help="requests allowed to wait for a batch slot before 503 (default 256)"
    )
    group.add_argument(
        "--retry-after", type=int, default=1, help="seconds suggested in Retry-After when the queue is full"
    )
    group.add_argument(
        "--shutdown-timeout",
        type=seconds,
        default=10.0,
        help="seconds in-flight requests get to finish on shutdown; those still running then get a JSON 503",
    )
    group.add_argument(
        "--read-timeout",
        type=seconds,
        default=30.0,
        help="seconds a client has to send a request's headers, and again its body; then 408 and the connection "
        "closes (default 30)",
    )
    group.add_argument(
        "--health-timeout",
        type=seconds,
        default=10.0,
        help="/health answers 503 when the engine loop has not come round through every rank in this time (default 10)",
    )
    group.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        help=f"largest request body accepted; larger ones get 413 before they are read (default {DEFAULT_MAX_REQUEST_BYTES})",
    )
    group.add_argument(
        "--max-inflight-bytes",
        type=int,
        default=None,
        help="request bytes being decoded and tokenized at once; a request that would go over gets 503 "
        f"(default 4 x --max-request-bytes = {DEFAULT_MAX_INFLIGHT_BYTES}; at least --max-request-bytes)",
    )
    group.add_argument("--access-log", action="store_true", help="log every HTTP request to stderr")


def loopback_host(host: str) -> str:
    """The address to bind, refusing anything reachable from other machines."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ServeConfigError(f"--host {host!r} is not an IP address; {LOOPBACK_HINT}") from None
    if not address.is_loopback:
        raise ServeConfigError(
            f"--host {host} is not a loopback address; the runtime serves only this machine: {LOOPBACK_HINT}"
        )
    return str(address)


def _check_options(args: argparse.Namespace) -> str:
    host = loopback_host(args.host)
    if not 0 <= args.port <= 65535:
        raise ServeConfigError(f"--port {args.port} is out of range; use 1-65535 (or 0 for any free port)")
    if args.max_queue < 1:
        raise ServeConfigError(f"--max-queue {args.max_queue} must be at least 1")
    if args.retry_after < 1:
        raise ServeConfigError(f"--retry-after {args.retry_after} must be at least 1")
    if args.max_request_bytes < 1:
        raise ServeConfigError(f"--max-request-bytes {args.max_request_bytes} must be at least 1")
    if args.max_inflight_bytes is None:
        args.max_inflight_bytes = INFLIGHT_REQUESTS * args.max_request_bytes
    if args.max_inflight_bytes < args.max_request_bytes:
        raise ServeConfigError(
            f"--max-inflight-bytes {args.max_inflight_bytes} must be at least --max-request-bytes "
            f"({args.max_request_bytes}), or the largest request could never be served"
        )
    if getattr(args, "read_timeout", 1.0) <= 0:
        raise ServeConfigError(f"--read-timeout {args.read_timeout} must be more than 0 seconds")
    for flag in ("shutdown_timeout", "health_timeout", "read_timeout"):
        value = getattr(args, flag, 0.0)
        if not (math.isfinite(value) and value >= 0):  # also for callers that built args without the parser
            raise ServeConfigError(f"--{flag.replace('_', '-')} {value} must be a finite number of seconds, 0 or more")
    return host


def preflight_error(args: argparse.Namespace) -> str | None:
    """A one-line problem with the serve options or the port, or None. Cheap: call it before loading the model so
    a busy port or a public host fails in a second, not after the weights are read. run_serve checks again."""
    try:
        host = _check_options(args)
        if args.port:
            bind_socket(host, args.port).close()
    except ServeConfigError as exc:
        return str(exc)
    except OSError as exc:
        return exc.strerror
    return None


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise OSError(
                exc.errno, f"{host}:{port} is already in use; stop the other server or pick another --port"
            ) from None
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _uvicorn_server(
    app: Any, args: argparse.Namespace, on_ready: Callable[[], None], on_deadline: Callable[[], None] = lambda: None
) -> Any:
    """uvicorn with our shutdown: requests get --shutdown-timeout seconds to finish; then ``on_deadline`` (the
    scheduler answering what still runs with a JSON 503) and SHUTDOWN_GRACE_S more for those answers to go out, before
    uvicorn would cancel the handlers (a plain-text 500 and a CancelledError traceback)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            timer = asyncio.get_running_loop().call_later(args.shutdown_timeout, on_deadline)
            try:
                await super().shutdown(sockets=sockets)
            finally:
                timer.cancel()

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                on_ready()

        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            # uvicorn re-raises the captured signal after shutdown, which would kill this process before it tells
            # the other ranks to stop; shut down gracefully and return instead.
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    from launcher.runtime.serve.http import uvicorn_options

    config = uvicorn.Config(
        app,
        **uvicorn_options(getattr(args, "read_timeout", 30.0), args.max_request_bytes),
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=args.access_log,
        timeout_graceful_shutdown=args.shutdown_timeout + SHUTDOWN_GRACE_S,
    )
    return Server(config)


def run_serve(
    engine: Any, tokenizer: Any, args: argparse.Namespace, rank: int, world_size: int, group: Any = None
) -> int:
    """Run on every rank: rank 0 serves HTTP and schedules; the others follow. Returns the process exit code."""
    from launcher.runtime.serve.scheduler import Commands, ControlChannel, Scheduler, follow

    try:
        host = _check_options(args)
    except ServeConfigError as exc:
        if rank == 0:
            print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE  # every rank sees the same options, so all of them stop here

    channel = ControlChannel(group) if world_size > 1 else None
    if rank != 0:
        # torchrun forwards SIGINT/SIGTERM to every worker; rank 0 decides when to stop and tells us.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: None)
        return follow(engine, channel)

    try:
        sock = bind_socket(host, args.port)
    except OSError as exc:
        print(f"error: {exc.strerror}", file=sys.stderr, flush=True)
        if channel is not None:
            channel.publish(Commands(shutdown=True))
        return EXIT_FAILURE
    port = sock.getsockname()[1]

    from launcher.runtime.serve.app import ServeState, build_app
    from launcher.runtime.serve.metrics import Metrics

    model_name = args.served_model_name or getattr(args, "model", None) or "demo"
    model = getattr(engine, "model", None)
    # what actually runs (the communicator may have fallen back, e.g. fusion requested on CPU), else what was asked
    allreduce = getattr(getattr(model, "comm", None), "strategy", None) or getattr(args, "allreduce", None) or "torch"
    metrics = Metrics(
        model=model_name,
        tp_size=world_size,
        max_batch_size=engine.max_batch_size,
        max_model_len=engine.max_model_len,
        allreduce=str(allreduce),
    )
    server_box: list[Any] = []

    def stop_server() -> None:
        if server_box:
            server_box[0].should_exit = True

    scheduler = Scheduler(engine, metrics, max_queue=args.max_queue, channel=channel, on_fatal=stop_server)
    state = ServeState(
        scheduler=scheduler,
        tokenizer=tokenizer,
        metrics=metrics,
        model_name=model_name,
        max_model_len=engine.max_model_len,
        vocab_size=getattr(getattr(model, "config", None), "vocab_size", None),
        retry_after_s=args.retry_after,
        created=int(time.time()),
        max_request_bytes=args.max_request_bytes,
        max_inflight_bytes=args.max_inflight_bytes,
        read_timeout_s=getattr(args, "read_timeout", 30.0),
        health_timeout_s=getattr(args, "health_timeout", 10.0),
    )

    def announce() -> None:
        print(f"{READY_PREFIX}{url_for(host, port)}", flush=True)

    server = _uvicorn_server(build_app(state), args, announce, on_deadline=scheduler.request_stop)
    server_box.append(server)
    scheduler.start()
    startup_failed = False
    try:
        server.run(sockets=[sock])
    except SystemExit:  # uvicorn gives up on startup failures this way (after logging why)
        startup_failed = True
    finally:
        scheduler.stop(timeout=args.shutdown_timeout + 5)
        sock.close()
    return EXIT_FAILURE if startup_failed or scheduler.error is not None else EXIT_OK
