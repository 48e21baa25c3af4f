"""Server memory under hostile load: peak RSS with four concurrent maximum-size requests.

    python tests/benchmarks/bench_serve_memory.py [--model demo] [--concurrency 4] [--bound-mib 1024]

Starts `python -m launcher.runtime --mode serve` (tp 1) with the default --max-request-bytes (8 MiB), samples the RSS
of its process tree every 10 ms, and sends rounds of `--concurrency` simultaneous requests whose bodies are just under
8 MiB: a text prompt, a chat message, a token-id list, and the largest text prompt that still fits the context (it is
tokenized and generated). Prints the baseline, each round's peak and the growth, and checks the peak against the bound
(exit 1 when over).

The bound: before issue 30 one 7.9 MB prompt was tokenized in full (~2 GB, 14 s CPU) and four took the server from
0.4 to 8 GB. Now a text prompt is refused by a cheap token bound before tokenizing, and at most --max-inflight-bytes
(4 x 8 MiB) of bodies are decoded at once; what remains is the bodies themselves and their JSON decoding (a token-id
list costs ~40 bytes per id as Python ints). The stated bound, default 1 GiB over the idle server's RSS, leaves room
for the allocator's slack on top of that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import kill_tree, start_server  # noqa: E402

BODY = 8 * 1024 * 1024 - 4096  # just under the default --max-request-bytes


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += proc.memory_info().rss
    return total


class PeakRSS:
    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.root))
            time.sleep(0.01)

    def __enter__(self) -> PeakRSS:
        self.peak = tree_rss(self.root)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def largest_fitting_text(model: str, max_model_len: int) -> str:
    """The longest prefix of the filler text whose tokens (with BOS) leave room for one completion token."""
    from launcher.runtime import demo
    from launcher.runtime.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_dir(demo.ensure_demo_model() if model == "demo" else model)
    text = "lorem ipsum dolor sit amet " * max_model_len
    low, high = 1, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if len(tokenizer.encode(text[:mid])) < max_model_len - 1:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def bodies(model: str, max_model_len: int) -> dict[str, tuple[str, bytes]]:
    words = ("lorem ipsum dolor sit amet " * (BODY // 27))[: BODY - 64]
    ids = ",".join(["1234"] * ((BODY - 64) // 5))
    fits = largest_fitting_text(model, max_model_len)
    return {
        "text prompt 8 MiB": ("/v1/completions", json.dumps({"prompt": words, "max_tokens": 1}).encode()),
        "chat message 8 MiB": ("/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": words}], "max_tokens": 1}).encode()),  # fmt: skip
        "token-id list 8 MiB": ("/v1/completions", f'{{"prompt": [{ids}], "max_tokens": 1}}'.encode()),
        "largest prompt that fits": ("/v1/completions", json.dumps({"prompt": fits, "max_tokens": 1}).encode()),
    }


async def burst(url: str, path: str, body: bytes, concurrency: int) -> list[int]:
    async with httpx.AsyncClient(timeout=600) as http:
        headers = {"Content-Type": "application/json"}
        responses = await asyncio.gather(*(http.post(url + path, content=body, headers=headers) for _ in range(concurrency)))  # fmt: skip
    return [r.status_code for r in responses]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="demo")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--bound-mib", type=int, default=1024, help="allowed growth over the idle RSS (default 1024)")
    args = parser.parse_args()

    proc, url = start_server(args.model, 1, max_batch=args.concurrency)
    try:
        max_model_len = httpx.get(f"{url}/v1/models").json()["data"][0]["max_model_len"]
        time.sleep(1)
        idle = tree_rss(psutil.Process(proc.pid))
        print(f"idle server: {idle / 2**20:.0f} MiB RSS (max_model_len {max_model_len})", flush=True)
        worst = idle
        for name, (path, body) in bodies(args.model, max_model_len).items():
            with PeakRSS(proc.pid) as peak:
                started = time.perf_counter()
                statuses = asyncio.run(burst(url, path, body, args.concurrency))
                took = time.perf_counter() - started
            worst = max(worst, peak.peak)
            print(f"{args.concurrency} x {name} ({len(body) / 2**20:.1f} MiB body): statuses {sorted(statuses)}, "
                  f"{took:.1f}s, peak {peak.peak / 2**20:.0f} MiB (+{(peak.peak - idle) / 2**20:.0f})", flush=True)  # fmt: skip
        growth = (worst - idle) / 2**20
        verdict = "within" if growth <= args.bound_mib else "OVER"
        print(f"peak RSS {worst / 2**20:.0f} MiB: +{growth:.0f} MiB over idle, {verdict} the bound of +{args.bound_mib} MiB")
        return 0 if growth <= args.bound_mib else 1
    finally:
        kill_tree(proc)


if __name__ == "__main__":
    sys.exit(main())
