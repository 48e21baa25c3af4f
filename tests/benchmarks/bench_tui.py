"""Time from process start to the first complete screen of the `advisor` TUI on a simulated profile.

"Complete" = the first plan's decisions are on screen and painted (the app's on_ready hook fires after the refresh
that shows them). The app runs headless at 80x24 in a fresh interpreter, as `advisor --profile b300-8 ...` would
start it (the CLI entry point is imported too). Reported as seconds and as a ratio to `python -c pass`, both
measured in this run. Goal: under 1 s here.

    python tests/benchmarks/bench_tui.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CHILD = r"""
import sys, time
import advisor.cli  # what `advisor` imports first
from advisor.context import Options
from advisor.tui.app import AdvisorApp

def ready(app):
    print(f"READY {time.time():.6f}", file=sys.stderr, flush=True)
    app.exit()

options = Options(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
AdvisorApp(options, on_ready=ready).run(headless=True, size=(80, 24))
"""


# Textual's own floor: a Header, one Static and a Footer, until its first paint.
MINIMAL = r"""
import sys, time
from textual.app import App
from textual.widgets import Footer, Header, Static

class Minimal(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()

    def on_mount(self):
        self.call_after_refresh(self.ready)

    def ready(self):
        print(f"READY {time.time():.6f}", file=sys.stderr, flush=True)
        self.exit()

Minimal().run(headless=True, size=(80, 24))
"""


def time_bare(runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def time_tui(runs: int, code: str = CHILD) -> tuple[float, float]:
    """(median seconds to the first complete screen, median seconds until the process has exited)."""
    ready, total = [], []
    for _ in range(runs):
        t0_wall, t0 = time.time(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        total.append(time.perf_counter() - t0)
        line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("READY ")), None)
        if proc.returncode != 0 or line is None:
            sys.exit(f"the app did not reach its first screen (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        ready.append(float(line.split()[1]) - t0_wall)
    return statistics.median(ready), statistics.median(total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    time_tui(1)  # warm the file cache (bytecode, profiles) so every measured run starts alike
    bare = time_bare(args.runs)
    first_screen, total = time_tui(args.runs)
    minimal, _ = time_tui(args.runs, MINIMAL)
    print(f"python -c pass:                      {bare * 1000:7.1f} ms")
    print(f"minimal Textual app, first paint:    {minimal * 1000:7.1f} ms  ({minimal / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> first screen:  {first_screen * 1000:7.1f} ms  ({first_screen / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> exited:        {total * 1000:7.1f} ms  ({total / bare:5.1f}x python -c pass)")
    verdict = "met" if first_screen < 1.0 else "NOT met"
    print(f"goal (first screen < 1 s): {verdict}  [median of {args.runs} runs, profile b300-8, 80x24 headless]")


if __name__ == "__main__":
    main()
