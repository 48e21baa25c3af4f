"""Time from process start to the first complete screen of the `advisor` TUI on a simulated profile.

"Complete" = the first plan's decisions are on screen and painted (the app's on_ready hook fires after the refresh
that shows them: the status line, the decision rows, the highlighted decision's detail and the command line). The app
runs headless at 80x24 in a fresh interpreter, as `advisor --profile b300-8 ...` starts it on a terminal (the console
script's entry point is imported and reads the options; interactive.open_app's steps are taken one by one, the app
built with an on_ready hook instead of run_app).
Reported as seconds and as ratios to `python -c pass` and to a minimal Textual app's first paint, all measured in this
run, plus the CPU time each process used until its first screen (less sensitive to a busy machine).
Goal: under 1.5x the minimal app's first paint.

Bytecode: an installed package's modules are compiled once (pip does it at install time, an editable install on the
first run); with PYTHONDONTWRITEBYTECODE set (as in some CI shells) every start would compile the advisor's modules
again while Textual's come compiled from site-packages. The children therefore keep their bytecode in a temporary
PYTHONPYCACHEPREFIX, filled by the warm-up runs, the same for the app and the minimal one.

    python tests/benchmarks/bench_tui.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import sys, time
from advisor.entry import main  # what the `advisor` console script imports first
from advisor.fastpath import parse_app  # how it reads bare `advisor [options]` on a terminal (no click)
from advisor.context import Options
from advisor.collector import pause_collector

def ready(app):
    print(f"READY {time.time():.6f} {time.process_time():.6f}", file=sys.stderr, flush=True)
    app.exit()

params = parse_app(["--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8", "--engine", "sglang"])
options = Options.from_params(params)
pause_collector()  # what interactive.open_app does before it imports the app (run_app there runs it on the terminal)
from advisor.tui.app import AdvisorApp
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
        print(f"READY {time.time():.6f} {time.process_time():.6f}", file=sys.stderr, flush=True)
        self.exit()

Minimal().run(headless=True, size=(80, 24))
"""


def child_env(pycache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def time_bare(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
    return time.perf_counter() - t0


def time_tui(env: dict[str, str], code: str = CHILD) -> tuple[float, float, float]:
    """(seconds to the first complete screen, CPU seconds until then, seconds until the process has exited)."""
    t0_wall, t0 = time.time(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    total = time.perf_counter() - t0
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("READY ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"the app did not reach its first screen (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    _, ready_wall, ready_cpu = line.split()
    return float(ready_wall) - t0_wall, float(ready_cpu), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tui-pycache-") as pycache:
        env = child_env(pycache)
        time_tui(env), time_tui(env, MINIMAL)  # warm the caches (bytecode, files) so every measured run starts alike
        bares, screens, cpus, totals, minimals, minimal_cpus = [], [], [], [], [], []
        for _ in range(args.runs):  # interleaved, so a busy machine's noise hits all three alike
            bares.append(time_bare(env))
            first, cpu, end = time_tui(env)
            screens.append(first)
            cpus.append(cpu)
            totals.append(end)
            first, cpu, _ = time_tui(env, MINIMAL)
            minimals.append(first)
            minimal_cpus.append(cpu)
    bare, first_screen, total, minimal = (statistics.median(x) for x in (bares, screens, totals, minimals))
    cpu, minimal_cpu = statistics.median(cpus), statistics.median(minimal_cpus)
    ratios = [app / floor for app, floor in zip(screens, minimals, strict=True)]
    print(f"python -c pass:                      {bare * 1000:7.1f} ms")
    print(f"minimal Textual app, first paint:    {minimal * 1000:7.1f} ms  ({minimal / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> first screen:  {first_screen * 1000:7.1f} ms  ({first_screen / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> exited:        {total * 1000:7.1f} ms  ({total / bare:5.1f}x python -c pass)")
    print(f"CPU time to the first screen:        {cpu * 1000:7.1f} ms  (minimal app {minimal_cpu * 1000:.1f} ms: "
          f"{cpu / minimal_cpu:.2f}x)")  # fmt: skip
    ratio = statistics.median(ratios)
    verdict = "met" if ratio < 1.5 else "NOT met"
    print(f"advisor first screen / minimal app first paint: {ratio:.2f}x (median of the per-round ratios)")
    print(f"goal (< 1.5x the minimal app): {verdict}  [median of {args.runs} runs, profile b300-8, 80x24 headless]")


if __name__ == "__main__":
    main()
