"""Time from process start to the first complete screen of the `advisor` TUI on a simulated profile, side by side
with a bare Textual app that composes the same stock widgets.

"Complete" = the first plan's decisions are on screen and painted (the app's on_ready hook fires after the refresh
that shows them: the status line, the decision rows, the highlighted decision's detail and the command line). The app
runs headless at 80x24 in a fresh interpreter, as `advisor --profile b300-8 ...` starts it on a terminal (the CLI's
module is imported, the app built with an on_ready hook instead of run_app).
The floor is a plain Textual app with the main screen's widgets and no advisor code: a Header, a TabbedContent with
three panes, a form of ten Labels, five compact Inputs and five compact Selects, a Label and two Buttons, Statics, a
DataTable with the plan's rows, a scrolling Static and a Footer, until its first paint.
Reported as seconds, as ratios to `python -c pass` and to the floor, all measured in this run, plus the CPU time each
process used until its first screen (less sensitive to a busy machine).
Goal: at most 1.5x the floor.

Bytecode: an installed package's modules are compiled once (pip does it at install time, an editable install on the
first run); with PYTHONDONTWRITEBYTECODE set (as in some CI shells) every start would compile the advisor's modules
again while Textual's come compiled from site-packages. The children therefore keep their bytecode in a temporary
PYTHONPYCACHEPREFIX, filled by the warm-up runs, the same for the app and the floor.

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
import advisor.cli  # what the `advisor` console script imports
from advisor.context import Options

def ready(app):
    print(f"READY {time.time():.6f} {time.process_time():.6f}", file=sys.stderr, flush=True)
    app.exit()

options = Options(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
from advisor.tui.app import AdvisorApp
AdvisorApp(options, on_ready=ready).run(headless=True, size=(80, 24))
"""


# Textual's own floor: the main screen's stock widgets, with fixed text, until the first paint.
FLOOR = r"""
import sys, time
from textual.app import App
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Footer, Header, Input, Label, Select, Static, TabbedContent, TabPane

ROWS = [("●", "FlashInfer allreduce fusion", "auto"), ("●", "custom allreduce", "v2"),
        ("●", "attention backend", "trtllm_mha"), ("●", "MoE runner backend", "flashinfer_trtllm"),
        ("●", "memory defaults", "16384, 512, 0.89"), ("i", "tp 8 exceeds the KV heads", "info")]

class Floor(App):
    CSS = "#form { grid-size: 2; grid-columns: 8 1fr; height: auto; }"
    BINDINGS = [("r", "bell", "Re-probe"), ("l", "bell", "Launch"), ("e", "bell", "Export"), ("p", "bell", "Profile"),
                ("q", "quit", "Quit"), ("question_mark", "bell", "Help")]

    def compose(self):
        yield Header()
        with TabbedContent(initial="plan"):
            with TabPane("Plan", id="plan"), Horizontal():
                with Vertical():
                    with Grid(id="form"):
                        for i in range(5):
                            yield Label(f"field {i}")
                            yield Input(str(i), compact=True)
                            yield Label(f"choice {i}")
                            yield Select([("one", 1), ("two", 2), ("three", 3)], value=1, compact=True)
                    with Vertical():
                        with Horizontal():
                            yield Label("Command")
                            yield Button("Copy", compact=True)
                            yield Button("Launch", variant="primary", compact=True)
                        yield Static("$ python -m sglang.launch_server --model-path Qwen/Qwen3-VL --tp-size 8")
                with Vertical():
                    yield Static("sglang 0.5.18 · tp 8 · Qwen/Qwen3-VL-235B-A22B-Instruct")
                    yield DataTable(cursor_type="row", zebra_stripes=False)
                    with VerticalScroll():
                        yield Static("FlashInfer allreduce + residual + RMSNorm fusion\n● auto-enabled\nvalue: auto")
            yield TabPane("Layouts", id="layouts")
            yield TabPane("Machine", id="machine")
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns(" ", "decision", "value")
        table.add_rows(ROWS)
        table.focus()
        self.call_after_refresh(self.ready)

    def ready(self):
        print(f"READY {time.time():.6f} {time.process_time():.6f}", file=sys.stderr, flush=True)
        self.exit()

Floor().run(headless=True, size=(80, 24))
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
        time_tui(env), time_tui(env, FLOOR)  # warm the caches (bytecode, files) so every measured run starts alike
        bares, screens, cpus, totals, floors, floor_cpus = [], [], [], [], [], []
        for _ in range(args.runs):  # interleaved, so a busy machine's noise hits all three alike
            bares.append(time_bare(env))
            first, cpu, end = time_tui(env)
            screens.append(first)
            cpus.append(cpu)
            totals.append(end)
            first, cpu, _ = time_tui(env, FLOOR)
            floors.append(first)
            floor_cpus.append(cpu)
    bare, first_screen, total, floor = (statistics.median(x) for x in (bares, screens, totals, floors))
    cpu, floor_cpu = statistics.median(cpus), statistics.median(floor_cpus)
    ratios = [app / floor for app, floor in zip(screens, floors, strict=True)]
    print(f"python -c pass:                          {bare * 1000:7.1f} ms")
    print(f"same stock widgets, bare, first paint:   {floor * 1000:7.1f} ms  ({floor / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> first screen:      {first_screen * 1000:7.1f} ms  ({first_screen / bare:5.1f}x python -c pass)")
    print(f"advisor TUI, start -> exited:            {total * 1000:7.1f} ms  ({total / bare:5.1f}x python -c pass)")
    print(f"CPU time to the first screen:            {cpu * 1000:7.1f} ms  (bare widgets {floor_cpu * 1000:.1f} ms: "
          f"{cpu / floor_cpu:.2f}x)")  # fmt: skip
    ratio = statistics.median(ratios)
    verdict = "met" if ratio <= 1.5 else "NOT met"
    print(f"advisor first screen / bare stock widgets' first paint: {ratio:.2f}x (median of the per-round ratios)")
    print(f"goal (at most 1.5x): {verdict}  [median of {args.runs} runs, profile b300-8, 80x24 headless]")

if __name__ == "__main__":
    main()
