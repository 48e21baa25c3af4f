"""`advisor check --json` against the toolkit it is written with and against `import torch`, side by side in one run.

    python tests/benchmarks/bench_check.py [--repeat N] [--torch-repeat N] [--here]

`advisor check --json` is a command for scripts. It is measured on a simulated 8-GPU machine with a catalog model
(CHECK_ARGS) against two references:

- the conventional toolkit it uses, `python -c "import click, dataclasses, typing, json, shlex, functools, enum,
  pathlib"`: goal at most 2.5x;
- `python -c "import torch"`, what `python -m sglang.check_env` and `vllm collect-env` pay before they say anything:
  goal under 0.1x.

By default the script builds the light install offline in a temporary venv (tests/light_install.py: the wheel plus its
default dependencies, bytecode compiled as pip does) and times its `python` and `advisor` there; `--here` times this
environment instead. `import torch` always runs in this environment (the light install has no torch). The commands run
interleaved (so machine noise hits all of them alike), after one untimed warm-up run each; the medians are reported for
wall time (what the goals are about) and for the children's CPU time (user + sys, which a busy machine distorts less).

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

CHECK_ARGS = ["check", "--json", "--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"]
TOOLKIT = "import click, dataclasses, typing, json, shlex, functools, enum, pathlib"
TOOLKIT_GOAL = 2.5  # check / toolkit: at most
TORCH_GOAL = 0.1  # check / import torch: under

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The light venv sees nothing of this checkout (no PYTHONPATH), so it runs the installed wheel.
LIGHT_ENV = {k: v for k, v in CLEAN_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1 = the plan found errors, still a complete run
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs of the check and the toolkit (median reported)")
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
    toolkit_name = f'python -c "{TOOLKIT}"'
    torch_name = 'python -c "import torch"'
    commands = {
        toolkit_name: ([*python, "-c", TOOLKIT], env),
        check_name: ([*advisor, *CHECK_ARGS], env),
        torch_name: ([sys.executable, "-c", "import torch"], ENV),  # this environment's torch, as the reference
    }
    for argv, run_env in commands.values():  # warm the page cache and the .pyc files; nothing is timed cold
        timed(argv, run_env)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(args.repeat):
        for name, (argv, run_env) in commands.items():
            if name == torch_name and i >= args.torch_repeat:
                continue
            w, c = timed(argv, run_env)
            wall[name].append(w)
            cpu[name].append(c)

    print(f"-- {where}")
    for label, series in (("wall", wall), ("cpu", cpu)):
        median = {name: statistics.median(t) for name, t in series.items() if t}
        print(f"-- {label} time (median of {args.repeat}; import torch: {min(args.repeat, args.torch_repeat)})")
        for name, value in median.items():
            print(f"{value * 1000:9.1f} ms  {name}")
        check = median[check_name]
        print(f"{label}: check / toolkit:      {check / median[toolkit_name]:.2f}x  (goal <= {TOOLKIT_GOAL}x)")
        if torch_name in median:
            print(f"{label}: check / import torch: {check / median[torch_name]:.3f}x  (goal < {TORCH_GOAL}x)")


if __name__ == "__main__":
    main()
