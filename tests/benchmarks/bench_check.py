"""Wall time of `advisor check --json` as ratios to a bare interpreter and to `import torch`, measured in one run.

    python tests/benchmarks/bench_check.py [--repeat N] [--here]

Goals: under 3x `python -c pass` with the light install (`pip install tp-advisor`, no runtime extra), and under 0.1x
`python -c "import torch"`. By default the script builds that install offline in a temporary venv
(tests/light_install.py: the wheel plus its default dependencies, bytecode compiled as pip does) and times its
`python -c pass` and `advisor`; `--here` times this environment instead. `import torch` always runs in this
environment. Each command runs N times (interleaved, so machine noise hits all of them alike) after one untimed warm-up
run each (`import torch` included); the median is reported, for wall time (what the goal is about) and for the
children's CPU time (user + sys, which a busy shared machine distorts less).

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
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from advisor_command import advisor_argv  # noqa: E402
from light_install import CLEAN_ENV, build_dists, make_light_venv  # noqa: E402

CHECK_ARGS = ["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The light venv sees nothing of this checkout (no PYTHONPATH), so it runs the installed wheel.
LIGHT_ENV = {k: v for k, v in CLEAN_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): CPU time is what a busy machine distorts least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env or ENV)
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
    parser.add_argument("--here", action="store_true", help="time this environment, not a fresh light install")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        if args.here:
            python, advisor, env, where = [sys.executable], advisor_argv(), ENV, "this environment"
        else:
            dists = build_dists(Path(tmp) / "dist", Path(tmp) / "src")
            venv = Path(tmp) / "venv"
            installed = make_light_venv(venv, dists["wheel"], compile_bytecode=True)
            python, advisor, env = [str(venv / "bin" / "python")], [str(venv / "bin" / "advisor")], LIGHT_ENV
            where = f"light install: tp-advisor + {len(installed)} distributions, no torch"
        measure(args, python, advisor, env, where)


def measure(args: argparse.Namespace, python: list[str], advisor: list[str], env: dict[str, str], where: str) -> None:
    check_name = "advisor " + " ".join(CHECK_ARGS)
    commands = {
        "python -c pass": [*python, "-c", "pass"],
        "python -c 'import click'": [*python, "-c", "import click"],
        check_name: [*advisor, *CHECK_ARGS],
    }
    torch_name = "python -c 'import torch'"
    torch_cmd = [sys.executable, "-c", "import torch"]  # this environment's torch, as the reference
    for argv in commands.values():  # warm the page cache and .pyc files
        timed(argv, env)
    timed(torch_cmd, ENV)  # torch's too: `import torch` is never timed cold
    wall: dict[str, list[float]] = {name: [] for name in [*commands, torch_name]}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    for i in range(args.repeat):
        runs = [(name, argv, env) for name, argv in commands.items()]
        if i < args.torch_repeat:
            runs.append((torch_name, torch_cmd, ENV))
        for name, argv, run_env in runs:
            w, c = timed(argv, run_env)
            wall[name].append(w)
            cpu[name].append(c)

    print(f"-- {where}")
    for label, series in (("wall", wall), ("cpu", cpu)):
        median = {name: statistics.median(t) for name, t in series.items() if t}
        print(f"-- {label} time (median of {args.repeat}; import torch: {args.torch_repeat})")
        for name, value in median.items():
            print(f"{value * 1000:9.1f} ms  {name}")
        bare, check = median["python -c pass"], median[check_name]
        print(f"check / bare interpreter: {check / bare:.2f}x  (goal < 3x)")
        if torch_name in median:
            print(f"check / import torch:     {check / median[torch_name]:.3f}x  (goal < 0.1x)")


if __name__ == "__main__":
    main()
