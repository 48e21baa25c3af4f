"""Wall time of the live probe as a ratio to `python -c pass`, both measured in one run.

    python tests/benchmarks/bench_probe.py [--repeat N]

Three figures, each the median of N interleaved runs (so machine noise hits all alike):
- `python -c pass`: a bare interpreter;
- a fresh process that imports advisor.probe.live and runs probe_live() (what `advisor probe` pays);
- probe_live() alone inside a warm process (the probe's own cost: NVML, the package scan, host, environment).
On a machine without an NVIDIA driver NVML answers at once with LibraryNotFound; on a GPU machine the NVML calls count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

PROBE = "from advisor.probe.live import probe_live; probe_live()"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # keep .pyc files, as an install has


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per measurement (median reported)")
    args = parser.parse_args()

    from advisor.probe.live import probe_live

    commands = {"python -c pass": [sys.executable, "-c", "pass"], "python -c '<probe_live()>'": [sys.executable, "-c", PROBE]}
    for argv in commands.values():  # warm the page cache and .pyc files
        timed(argv)
    probe_live()
    times: dict[str, list[float]] = {name: [] for name in commands}
    in_process: list[float] = []
    for _ in range(args.repeat):
        for name, argv in commands.items():
            times[name].append(timed(argv))
        start = time.perf_counter()
        facts = probe_live()
        in_process.append(time.perf_counter() - start)

    base = statistics.median(times["python -c pass"])
    print(f"machine: {len(facts.gpus)} GPUs, driver: {facts.driver.version or facts.driver.reason}, "
          f"{len(facts.packages)} watched packages, {args.repeat} runs each, medians")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:32s} {median * 1000:8.1f} ms   {median / base:5.2f}x python -c pass")
    inner = statistics.median(in_process)
    print(f"  {'probe_live() in a warm process':32s} {inner * 1000:8.1f} ms   {inner / base:5.2f}x python -c pass")


if __name__ == "__main__":
    main()
