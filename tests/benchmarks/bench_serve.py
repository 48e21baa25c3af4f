"""Serving throughput: output tokens/s at concurrency 8 vs concurrency 1, measured side by side on one server.

    python tests/benchmarks/bench_serve.py [--model demo] [--tp 1] [--max-tokens 32] [--requests-per-client 4]

Starts `python -m launcher.runtime --mode serve` (under torchrun when --tp > 1), waits for its `ready:` line, sends the
same kind of request (fixed max_tokens, ignore_eos, greedy) first one at a time, then from 8 concurrent clients, and
prints tokens/s for both and their ratio (medians over alternating rounds). The goal is >= 3x: continuous batching decodes the 8 sequences together.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import psutil

REPO = Path(__file__).resolve().parents[2]
READY = re.compile(r"^ready: (http://\S+)$")


def start_server(model: str, tp: int, max_batch: int) -> tuple[subprocess.Popen, str]:
    runtime = ["-m", "launcher.runtime", "--model", model, "--mode", "serve", "--port", "0"]
    runtime += ["--max-batch-size", str(max_batch), "--tp-size", str(tp)]
    if tp > 1:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1"]
        argv += ["--nproc-per-node", str(tp), *runtime]
    else:
        argv = [sys.executable, *runtime]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        match = READY.match(line.strip())
        if match:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # keep draining
            return proc, match.group(1)
    raise SystemExit("server exited before it was ready:\n" + "".join(lines[-30:]))


def kill_tree(proc: subprocess.Popen) -> None:
    try:
        procs = psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=10)


async def run_load(url: str, model: str, concurrency: int, requests: int, max_tokens: int) -> tuple[int, float]:
    """(completion tokens, seconds) for `requests` requests sent by `concurrency` clients."""
    api = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=600)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    tokens = 0

    async def client() -> None:
        nonlocal tokens
        while not queue.empty():
            i = queue.get_nowait()
            done = await api.completions.create(
                model=model,
                prompt=f"Request {i}: tensor parallelism splits every layer across GPUs",
                max_tokens=max_tokens,
                temperature=0,
                extra_body={"ignore_eos": True},
            )
            tokens += done.usage.completion_tokens

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    await api.close()
    return tokens, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="demo")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--requests-per-client", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    proc, url = start_server(args.model, args.tp, max_batch=args.concurrency)
    try:
        served = openai.OpenAI(base_url=f"{url}/v1", api_key="unused").models.list().data[0].id
        asyncio.run(run_load(url, served, 2, 2, 4))  # warm-up
        # Alternate the two loads for a few rounds so that noise from other processes hits both alike.
        rates: dict[int, list[float]] = {1: [], args.concurrency: []}
        for round_ in range(1, args.rounds + 1):
            for concurrency in (1, args.concurrency):
                requests = concurrency * args.requests_per_client
                tokens, seconds = asyncio.run(run_load(url, served, concurrency, requests, args.max_tokens))
                rates[concurrency].append(tokens / seconds)
                print(
                    f"round {round_} concurrency {concurrency:>2}: {requests:>3} requests, {tokens:>5} output tokens"
                    f" in {seconds:6.2f}s -> {tokens / seconds:8.1f} tokens/s",
                    flush=True,
                )
        single, batched = statistics.median(rates[1]), statistics.median(rates[args.concurrency])
        ratio = batched / single
        verdict = "meets" if ratio >= 3 else "misses"
        print(
            f"median tokens/s: concurrency 1 {single:.1f}, concurrency {args.concurrency} {batched:.1f}; "
            f"ratio {ratio:.2f}x ({verdict} the >= 3x goal)"
        )
        return 0
    finally:
        kill_tree(proc)


if __name__ == "__main__":
    sys.exit(main())
