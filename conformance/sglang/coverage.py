"""``python -m conformance sglang-coverage X [Y ...]``: branch coverage of SGLang release X's own argument resolution over
the conformance grid (and the coverage grid, conformance/sglang/coverage_grid.py).

The same runner and environment as ``python -m conformance sglang`` (runner.py in the cached base venv, the release in
its --target folder, the GPU faked), run under ``coverage run --branch`` with coverage.py installed into the base venv;
measured are the resolution files (RESOLUTION_FILES) and reported the functions reached from ROOTS (and every handler
of arg_groups/model_overrides/, which a registry dispatches by architecture). Prints functions, branches taken/total and
the percentage per release, and writes tests/conformance/golden/sglang-coverage-X.json with every uncovered branch.
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
from conformance.coverage.functions import module_functions, resolution_functions
from conformance.coverage.measure import measure, read_report
from conformance.sglang import CACHE, RUNNER, HarnessError, _job, _pip, base_python, release_dir
from conformance.sglang.coverage_grid import coverage_scenarios
from conformance.sglang.flags import wheel

COVERAGE = "coverage>=7.10"  # per-file executed_branches/missing_branches in the JSON report
ROOTS = (
    ("sglang/srt/server_args.py", "ServerArgs.__post_init__"),
    ("sglang/srt/server_args.py", "ServerArgs.resolve_once"),
)
RESOLUTION_FILES = ("sglang/srt/server_args.py", "sglang/srt/configs/model_config.py")
RESOLUTION_DIRS = ("sglang/srt/arg_groups/",)
REGISTRY_DIR = "sglang/srt/arg_groups/model_overrides/"
ABOUT = ("Branch coverage of this SGLang release's argument resolution (ServerArgs.__post_init__ / resolve_once and what "
         "they call in server_args.py, arg_groups/ and configs/model_config.py, plus every arg_groups/model_overrides/ "
         "handler) over the conformance and coverage grids, measured by coverage.py (branch=True) with the GPU faked. "
         "Written by `python -m conformance sglang-coverage X`; uncovered branches are explained in docs/coverage.md.")  # fmt: skip


def in_scope(path: str) -> bool:
    return path in RESOLUTION_FILES or path.startswith(RESOLUTION_DIRS)


def functions(release: str):
    with zipfile.ZipFile(wheel(release)) as zf:
        registry = [n for n in zf.namelist() if n.startswith(REGISTRY_DIR) and n.endswith(".py")]
        roots = [*ROOTS, *module_functions(zf, sorted(registry), "sglang/")]
        return resolution_functions(zf, roots, in_scope, "sglang/")


def ensure_coverage(python: Path) -> None:
    if subprocess.run([str(python), "-c", "import coverage"], capture_output=True).returncode != 0:
        print(f"installing {COVERAGE} into {python.parents[1]}", file=sys.stderr)
        _pip(python, COVERAGE)


def run(release: str, limit: int | None = None) -> tuple[dict, int, float]:
    """(measured result, scenarios, seconds) for one release."""
    start = time.monotonic()
    python = base_python()
    ensure_coverage(python)
    target = release_dir(release)
    found = functions(release)
    main_items, config_items = coverage_scenarios(limit)
    job, by_id = _job(release, None, items=main_items)
    if config_items:  # grid "named": the runner puts os.environ back after each (a model step may set SGLANG_*)
        config_job, config_ids = _job(release, None, grid="named", items=config_items)
        job["groups"] += config_job["groups"]
        by_id.update(config_ids)
    items = [*main_items, *config_items]
    files = sorted({str(target / f.path) for f in found})
    with tempfile.TemporaryDirectory() as tmp:
        job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "out.jsonl"
        data, report = Path(tmp) / ".coverage", Path(tmp) / "coverage.json"
        job_file.write_text(json.dumps(job))
        env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}  # as generate() runs the runner
        env.update(PYTHONPATH=str(target), SGLANG_LOGGING_CONFIG_PATH="")
        include = ",".join(
            [*(str(target / f) for f in RESOLUTION_FILES), *(f"{target / d}/*" for d in RESOLUTION_DIRS)]
        )
        log = CACHE / f"coverage-{release}.log"
        with open(log, "w") as err:
            done = subprocess.run([str(python), "-m", "coverage", "run", "--branch", f"--data-file={data}",
                                   f"--include={include}", str(RUNNER), str(job_file), str(out_file)],
                                  env=env, stdout=err, stderr=subprocess.STDOUT, cwd=tmp)  # fmt: skip
        results = out_file.read_text().splitlines() if out_file.exists() else []
        if done.returncode != 0 or len(results) != len(by_id):
            raise HarnessError(
                f"the sglang {release} runner stopped after {len(results)}/{len(by_id)} scenarios; see {log}"
            )
        # The conformance goldens reject about one in ten of the main grid; most failing there is a broken setup (the
        # config scenarios are not counted: a release refuses many architectures it does not serve).
        main_ids = {sc["id"] for sc in main_items}
        rows = [json.loads(line) for line in results]
        errors = [r["error"] for r in rows if r.get("error") and r.get("id") in main_ids]
        if len(errors) * 2 > len(main_ids):
            raise HarnessError(
                f"sglang {release}: {len(errors)}/{len(main_ids)} scenarios failed ({errors[0]}); see {log}"
            )
        done = subprocess.run([str(python), "-m", "coverage", "json", f"--data-file={data}", "-o", str(report), "-q",
                               *files], capture_output=True, text=True, cwd=tmp)  # fmt: skip
        if done.returncode != 0:
            raise HarnessError(f"coverage json failed for sglang {release}: {done.stderr.strip()[-300:]}")
        files_report = read_report(json.loads(report.read_text()), target)
    sources = {f.path: (target / f.path).read_text() for f in found}
    return measure(found, files_report, sources), len(items), time.monotonic() - start


def main(argv: list[str]) -> int:
    return coverage_main(argv, "sglang", "0.5.23", run, HarnessError, ABOUT, __doc__)
