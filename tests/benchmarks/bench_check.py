"""Wall time of `advisor check --json` as ratios to a bare interpreter and to `import torch`, measured in one run.

    python tests/benchmarks/bench_check.py [--repeat N]

Goal (issue 4): under 6x `python -c pass` and under 0.1x `python -c "import torch"`. Each command runs N times
(interleaved, so machine noise hits all of them alike) after one untimed warm-up run each (`import torch` included); the
median is reported, for wall time (what the goal is about) and for the children's CPU time (user + sys, which a busy
shared machine distorts less).

Bytecode: the commands run with PYTHONDONTWRITEBYTECODE unset, so the warm-up run writes the .pyc files that an installed
package has (pip compiles them at install time); otherwise every run would recompile advisor's modules from source.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from advisor_command import advisor_argv  # noqa: E402

CHECK_ARGS = ["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): CPU time is what a busy machine distorts least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1 = the plan found errors, still a complete run
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per command (median reported)")
    parser.add_argument("--torch-repeat", type=int, default=3, help="runs of `import torch` (slow)")
    args = parser.parse_args()

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import click'": [sys.executable, "-c", "import click"],
        "advisor " + " ".join(CHECK_ARGS): [*advisor_argv(), *CHECK_ARGS],
    }
    torch_cmd = [sys.executable, "-c", "import torch"]
    for argv in [*commands.values(), torch_cmd]:  # warm the page cache and .pyc files, torch's too: never time a cold run
        timed(argv)
    torch_name = "python -c 'import torch'"
    wall: dict[str, list[float]] = {name: [] for name in [*commands, torch_name]}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    for i in range(args.repeat):
        runs = list(commands.items()) + ([(torch_name, torch_cmd)] if i < args.torch_repeat else [])
        for name, argv in runs:
            w, c = timed(argv)
            wall[name].append(w)
            cpu[name].append(c)

    check_name = "advisor " + " ".join(CHECK_ARGS)
    for label, series in (("wall", wall), ("cpu", cpu)):
        median = {name: statistics.median(t) for name, t in series.items()}
        print(f"-- {label} time (median of {args.repeat}; import torch: {args.torch_repeat})")
        for name, value in median.items():
            print(f"{value * 1000:9.1f} ms  {name}")
        bare, torch, check = median["python -c pass"], median[torch_name], median[check_name]
        print(f"check / bare interpreter: {check / bare:.2f}x  (goal < 6x)")
        print(f"check / import torch:     {check / torch:.3f}x  (goal < 0.1x)")

if __name__ == "__main__":
    main()
