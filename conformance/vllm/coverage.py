"""``python -m conformance vllm-coverage X [Y ...]``: branch coverage of vLLM release X's own engine-config resolution over
the conformance grid (and the coverage grid, conformance/vllm/coverage_grid.py).

The same resolver and environment as ``python -m conformance vllm`` (resolve.py under this interpreter with the
release's cached site/ and deps/, the CUDA platform faked), run under ``coverage run --branch`` (coverage.py from this
interpreter: the ``conformance`` extra); measured are the resolution files (RESOLUTION_FILES) and reported the functions
reached from ROOTS: ``EngineArgs.create_engine_config``, ``VllmConfig.__post_init__`` and the CUDA platform's
``check_and_update_config``, and the methods of the same classes they call. Prints functions, branches taken/total and
the percentage per release, and writes tests/conformance/golden/vllm-coverage-X.json with every uncovered branch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from conformance.coverage.command import coverage_main
from conformance.coverage.functions import resolution_functions
from conformance.coverage.measure import measure, read_report
from conformance.vllm import arch_grid, env, grid
from conformance.vllm.architectures import wheel
from conformance.vllm.coverage_grid import coverage_scenarios

ROOTS = (("vllm/engine/arg_utils.py", "EngineArgs.create_engine_config"), ("vllm/config/vllm.py", "VllmConfig.__post_init__"),
         ("vllm/platforms/cuda.py", "CudaPlatformBase.check_and_update_config"))  # fmt: skip
RESOLUTION_FILES = ("vllm/engine/arg_utils.py", "vllm/config/vllm.py", "vllm/platforms/cuda.py")
ABOUT = ("Branch coverage of this vLLM release's engine-config resolution (EngineArgs.create_engine_config, "
         "VllmConfig.__post_init__, CudaPlatformBase.check_and_update_config and the methods of those classes they "
         "call, in engine/arg_utils.py, config/vllm.py and platforms/cuda.py) over the conformance and coverage grids, "
         "measured by coverage.py (branch=True) on the faked CUDA platform. Written by `python -m conformance "
         "vllm-coverage X`; uncovered branches are explained in docs/coverage.md.")  # fmt: skip


def functions(release: str):
    with zipfile.ZipFile(wheel(release)) as zf:
        return resolution_functions(zf, ROOTS, lambda path: path in RESOLUTION_FILES, "vllm/")


def _coverage_run(release: str, inputs: Path, results: Path, data: Path) -> subprocess.CompletedProcess:
    site = env.release_dir(release) / "site"
    include = ",".join(str(site / f) for f in RESOLUTION_FILES)
    environ = dict(os.environ, PYTHONPATH=env.pythonpath(release), PYTHONNOUSERSITE="1")
    return subprocess.run([sys.executable, "-m", "coverage", "run", "--branch", f"--data-file={data}",
                           f"--include={include}", str(env.RESOLVER), str(inputs), str(results)],
                          capture_output=True, text=True, env=environ, timeout=3600)  # fmt: skip


def _main_grid_misses(results: Path, main_items: list[dict]) -> bool:
    """Whether a scenario of the conformance grid or the extras could not import a module (the config scenarios'
    misses are results: a model class that imports a kernel package the release does not pin)."""
    if not results.exists():
        return False
    ids = {sc["id"] for sc in main_items}
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return any(r.get("scenario") in ids and env._MISSING.search(r.get("error") or "") for r in rows)


def run(release: str, limit: int | None = None) -> tuple[dict, int, float]:
    start = time.monotonic()
    found = functions(release)
    main_items, config_items = coverage_scenarios(release, limit)
    items = [*main_items, *config_items]
    site = env.release_dir(release) / "site"
    with tempfile.TemporaryDirectory(prefix=f"vllm-coverage-{release}-") as tmp:
        inputs, results = Path(tmp) / "scenarios.json", Path(tmp) / "results.jsonl"
        data, report = Path(tmp) / ".coverage", Path(tmp) / "coverage.json"
        inputs.write_text(json.dumps(grid.resolver_input(env.CACHE, main_items)
                                     + arch_grid.resolver_input(env.CACHE, config_items)))  # fmt: skip
        done = _coverage_run(release, inputs, results, data)
        if done.returncode or _main_grid_misses(results, main_items):  # the environment misses a module: build it
            probe, probed = Path(tmp) / "probe.json", Path(tmp) / "probe.jsonl"  # on the main grid: a named config's
            probe.write_text(json.dumps(grid.resolver_input(env.CACHE, main_items)))  # model may import what no pin has
            env.ensure(release, probe, out=probed, log=lambda m: print(m, file=sys.stderr))
            done = _coverage_run(release, inputs, results, data)
        if done.returncode:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise env.EnvError(f"vllm {release} resolver failed under coverage: {tail[0]}")
        # The conformance goldens reject few; most of the main grid failing means a broken environment (the config
        # scenarios are not counted: vLLM refuses some configs, as the architectures golden records).
        main_ids = {sc["id"] for sc in main_items}
        rows = [json.loads(line) for line in results.read_text().splitlines()]
        errors = [r["error"] for r in rows if r.get("error") and r.get("scenario") in main_ids]
        if len(errors) * 2 > len(main_ids):
            raise env.EnvError(
                f"vllm {release}: {len(errors)}/{len(main_ids)} scenarios failed under coverage ({errors[0]})"
            )
        done = subprocess.run([sys.executable, "-m", "coverage", "json", f"--data-file={data}", "-o", str(report), "-q",
                               *(str(site / f) for f in RESOLUTION_FILES)], capture_output=True, text=True)  # fmt: skip
        if done.returncode:
            raise env.EnvError(f"coverage json failed for vllm {release}: {done.stderr.strip()[-300:]}")
        files = read_report(json.loads(report.read_text()), site)
    sources = {f.path: (site / f.path).read_text() for f in found}
    return measure(found, files, sources), len(items), time.monotonic() - start


def main(argv: list[str]) -> int:
    return coverage_main(argv, "vllm", "0.33.0", run, env.EnvError, ABOUT, __doc__)
