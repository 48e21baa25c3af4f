"""vLLM conformance: vLLM's own engine-config resolution, release by release, recorded as goldens.

    python -m conformance.vllm 0.33.0 [0.30.0 ...] [--out DIR] [--limit N] [--jobs N] [--grid models|architectures]
                               [--missing] [--configs GLOB ...]
    python -m conformance.vllm 0.33.0 --grid fuzz [--count N] [--seed S] [--rerun] [--write-golden IDS.json]

For each release: a cached environment (conformance.vllm.env), the scenario grid (conformance.vllm.grid) resolved by
vLLM itself on a faked CUDA platform (conformance/vllm/resolve.py), written to DIR/vllm-X.jsonl (default
tests/conformance/golden; vllm-architectures-X.jsonl for the architectures grid, conformance.vllm.arch_grid), one line
per scenario: the scenario, then every resolved field, then the relevant log lines. --missing resolves only the
scenarios the stored golden lacks (configs added to the grid) and keeps its other lines; a scenario no longer in the
grid (its config removed) leaves the golden. Each scenario is resolved on its own (resolve.py restores the process
environment after each), so a kept line is what a full run writes. --configs limits the run to the config
directories whose name matches a pattern (fnmatch; with --missing the golden keeps every other line it has).
Exit codes: 0 written, 1 a release could not be resolved, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from fnmatch import fnmatch
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "golden"


GRIDS = ("models", "architectures", "fuzz")  # fuzz: conformance/vllm/fuzz.py
PROBE_SCENARIOS = 20  # scenarios, spread over the grid, that a new release's environment is built on


def golden_path(version: str, out: Path = GOLDEN_DIR, grid: str = "models") -> Path:
    return out / (f"vllm-{version}.jsonl" if grid == "models" else f"vllm-{grid}-{version}.jsonl")


def stored_results(path: Path) -> dict[str, dict]:
    """Scenario id -> the stored golden's line as the resolver wrote it (its scenario as the id)."""
    from conformance.vllm.grid import scenario_id

    out = {}
    for line in path.read_text().splitlines() if path.exists() else ():
        record = json.loads(line)
        s = record.pop("scenario")
        record.pop("vllm")
        sid = scenario_id(s["profile"], s["model"], s["tp"], tuple(s["overrides"]))
        out[sid] = {"scenario": sid, **record}
    return out


def run_release(version: str, out: Path, limit: int | None = None, log=print, grid_name: str = "models",
                missing: bool = False, configs: tuple[str, ...] = ()) -> Path:  # fmt: skip
    from conformance.vllm import arch_grid, env
    from conformance.vllm import grid as models_grid

    grid = arch_grid if grid_name == "architectures" else models_grid
    items = grid.scenarios()[:limit] if limit else grid.scenarios()
    kept = stored_results(golden_path(version, out, grid_name)) if missing else {}
    to_resolve = [s for s in items if s["id"] not in kept
                  and (not configs or any(fnmatch(Path(s["model"]).name, c) for c in configs))]  # fmt: skip
    root = env.release_dir(version)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"vllm-{version}-") as tmp:
        inputs = Path(tmp) / "scenarios.json"
        scenario_inputs = grid.resolver_input(env.CACHE, to_resolve)
        inputs.write_text(json.dumps(scenario_inputs))
        results = Path(tmp) / "results.jsonl"
        if not to_resolve:
            results.write_text("")
            return write_golden(version, items, results, out, grid_name, kept)
        # A new environment is built on a sample of the scenarios (each failed start costs minutes); the whole run
        # then goes once, and scenarios that miss a module only they import are resolved again after installing it.
        if not (root / "ready").exists():
            probe = Path(tmp) / "probe.json"
            probe.write_text(json.dumps(scenario_inputs[:: max(1, len(scenario_inputs) // PROBE_SCENARIOS)]))
            env.ensure(version, probe, log=log, out=Path(tmp) / "probe.jsonl")
        env.resolve(version, inputs, results)
        env.complete(version, scenario_inputs, results, log=log)
        return write_golden(version, items, results, out, grid_name, kept)


def write_golden(version: str, items: list[dict], results: Path, out: Path = GOLDEN_DIR, grid: str = "models",
                 kept: dict[str, dict] | None = None) -> Path:  # fmt: skip
    """The golden from the resolver's results (and ``kept`` lines), in grid order; scenarios without a result (a run
    cut short) are left out."""
    by_id = dict(kept or {})
    for line in results.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a last line cut mid-write
            record = json.loads(line)
            by_id[record["scenario"]] = record
    path = golden_path(version, out, grid)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for item in items:
            if item["id"] not in by_id:
                continue
            result = dict(by_id[item["id"]])
            result.pop("scenario")
            scenario = {k: item[k] for k in ("profile", "model", "tp", "overrides")}
            f.write(json.dumps({"vllm": version, "scenario": scenario, **result}, sort_keys=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    from conformance.vllm.env import EnvError

    parser = argparse.ArgumentParser(prog="python -m conformance.vllm", description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="+", help="vLLM releases, e.g. 0.33.0")
    parser.add_argument("--out", type=Path, default=GOLDEN_DIR, help="directory of the goldens")
    parser.add_argument("--limit", type=int, default=None, help="only the first N scenarios (a quick try)")
    parser.add_argument("--grid", choices=GRIDS, default="models", help="the scenario grid (default: models)")
    parser.add_argument("--jobs", type=int, default=1, help="releases resolved at once")
    parser.add_argument("--count", type=int, default=300, help="fuzz: number of scenarios (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="fuzz: the seed (default 0)")
    parser.add_argument("--rerun", action="store_true", help="fuzz: resolve again even if the results are cached")
    parser.add_argument("--write-golden", metavar="IDS.json", type=Path, default=None,
                        help="fuzz: store these scenario ids (a disagreements file) as the fuzz golden")  # fmt: skip
    parser.add_argument("--configs", nargs="+", default=(), metavar="GLOB",
                        help="only the config directories matching these patterns (e.g. 'vllm-*')")  # fmt: skip
    parser.add_argument("--missing", action="store_true",
                        help="resolve only the scenarios the stored golden lacks; keep its other lines")  # fmt: skip
    args = parser.parse_args(argv)
    if args.grid == "fuzz":
        from conformance.vllm import fuzz

        return max(fuzz.main(v, args.count, args.seed, args.rerun, args.write_golden) for v in args.versions)

    def one(version: str) -> str:
        start = time.monotonic()
        try:
            path = run_release(version, args.out, args.limit, grid_name=args.grid, missing=args.missing,
                               configs=tuple(args.configs))  # fmt: skip
        except EnvError as exc:
            return f"error: {exc}"
        return f"vllm {version}: wrote {path} in {time.monotonic() - start:.0f} s"

    failed = False
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for message in pool.map(one, args.versions):
            print(message, file=sys.stderr if message.startswith("error") else sys.stdout, flush=True)
            failed |= message.startswith("error")
    return 1 if failed else 0
