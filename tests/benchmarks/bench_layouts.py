"""Wall time of `advisor layouts` and `advisor diff` as ratios to `python -c pass` and to `advisor check`, in one run.

    python tests/benchmarks/bench_layouts.py [--repeat N]

Goal: both answer in about the time `advisor check` takes. `layouts` plans every candidate layout (7 on an
8-GPU machine with an MoE model) and `diff` every modelled release between the two it compares (0.5.7 -> 0.5.18: 12),
so the facts and the model are loaded once and only the rules run per plan. Commands run interleaved, N times each; the
median is reported for wall time and for the children's CPU time (which a busy shared machine distorts less).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from advisor_command import advisor_argv  # noqa: E402
from bench_check import timed  # noqa: E402

SCENARIO = ["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--engine", "sglang"]
COMMANDS = {
    "check": ["check", "--json", *SCENARIO, "--tp", "8"],
    "layouts": ["layouts", "--json", *SCENARIO],
    "diff": ["diff", "--json", *SCENARIO, "--tp", "8", "--from", "0.5.7", "--to", "0.5.18"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per command (median reported)")
    args = parser.parse_args()

    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    commands.update({name: [*advisor_argv(), *argv] for name, argv in COMMANDS.items()})
    for argv in commands.values():  # warm the page cache and .pyc files
        timed(argv)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, argv in commands.items():
            w, c = timed(argv)
            wall[name].append(w)
            cpu[name].append(c)

    for label, series in (("wall", wall), ("cpu", cpu)):
        median = {name: statistics.median(t) for name, t in series.items()}
        print(f"-- {label} time (median of {args.repeat})")
        for name, value in median.items():
            shown = name if name.startswith("python") else "advisor " + " ".join(COMMANDS[name])
            print(f"{value * 1000:9.1f} ms  {shown}")
        bare, check = median["python -c pass"], median["check"]
        for name in ("check", "layouts", "diff"):
            print(f"{name:8} / bare interpreter: {median[name] / bare:5.2f}x   / check: {median[name] / check:4.2f}x")


if __name__ == "__main__":
    main()
