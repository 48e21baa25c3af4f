"""``python -m conformance sglang X [Y ...]``: run SGLang release X's own ServerArgs resolution over the scenario grid.

The environment is cached under ~/.cache/tp-advisor/conformance/sglang/: one base venv with CPU torch 2.13.0 and the
packages argument resolution imports (shared by all releases), and per release a ``pip install --no-deps --target``
folder with that sglang wheel and the transformers it pins. The runner (runner.py) fakes the GPU where SGLang reads it
and writes one JSON line per scenario; the golden file tests/conformance/golden/sglang-X.jsonl joins them to the scenario.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

from conformance.sglang.grid import GPUS, scenarios

# The grids whose config directories with remote config code (auto_map) get a stand-in class (runner.py
# stand_in_remote_config): they resolve as for a user who has the checkpoint's code and passes --trust-remote-code, so
# the advisor's side plans them with that flag (compare.advisor_plan).
REMOTE_CODE_STAND_IN = ("named", "fuzz")
REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "conformance" / "configs"
GOLDEN = REPO / "tests" / "conformance" / "golden"
CACHE = (
    Path(os.environ.get("TP_ADVISOR_CONFORMANCE_CACHE", Path.home() / ".cache" / "tp-advisor" / "conformance"))
    / "sglang"
)
RUNNER = Path(__file__).with_name("runner.py")

TORCH = "torch==2.13.0+cpu"
# What ServerArgs resolution imports across v0.5.7..v0.5.23, found by running it (transformers is per release).
BASE_PACKAGES = (
    "numpy", "orjson", "tqdm", "psutil", "pybase64", "requests", "ipython", "triton", "packaging", "pydantic", "pillow",
    "aiohttp", "safetensors", "starlette", "msgspec", "pyzmq", "fastapi", "openai", "partial_json_parser", "dill",
    "sentencepiece", "apache-tvm-ffi", "loguru", "gguf", "regex", "tokenizers", "pyyaml", "filelock", "jinja2", "httpx", "einops",
)  # fmt: skip
# These would pull a transformers into the base venv; the release's own transformers serves them.
BASE_NO_DEPS = ("compressed-tensors", "xgrammar")


class HarnessError(Exception):
    """One line naming what failed and the fix."""


def _pip(python: Path, *args: str) -> None:
    cmd = [str(python), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        raise HarnessError(f"pip install {' '.join(args)} failed: {tail[0]}; check the package index is reachable")


def base_python() -> Path:
    base = CACHE / "base"
    python = base / "bin" / "python"
    marker = base / ".complete"
    if marker.exists():
        return python
    print(f"creating the base venv {base} (CPU torch and resolution imports)", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(base)
    constraints = CACHE / "constraints.txt"
    constraints.write_text(TORCH + "\n")  # nothing may replace the CPU build with a CUDA one
    _pip(python, TORCH)
    _pip(python, "-c", str(constraints), *BASE_PACKAGES)
    _pip(python, "--no-deps", *BASE_NO_DEPS)
    marker.write_text("ok\n")
    return python


# Distribution -> module of the CUDA-only packages a release may depend on (see runner.PLACEHOLDER_PACKAGES).
CUDA_ONLY = {
    "torchvision": "torchvision", "flashinfer_python": "flashinfer", "flashinfer-python": "flashinfer",
    "sgl-kernel": "sgl_kernel", "sglang-kernel": "sgl_kernel", "sgl-deep-gemm": "deep_gemm", "sgl-deep-ep": "deep_ep",
    "sgl-flash-mla": "flash_mla",
}  # fmt: skip


def _requires(wheel: Path) -> list[str]:
    """The wheel's unconditional Requires-Dist lines (no extras)."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return _requires_lines(zf.read(meta).decode())


def _requires_lines(metadata: str) -> list[str]:
    lines = metadata.splitlines()
    return [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Requires-Dist:") and "extra ==" not in ln]


def _placeholders(requires: list[str]) -> list[str]:
    names = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0] for r in requires}
    return sorted({module for dist, module in CUDA_ONLY.items() if dist in names})


def _pinned_transformers(wheel_dir: Path, release: str) -> list[str]:
    """transformers (and, for 4.x, a huggingface_hub below 1.0) as the release's wheel pins it."""
    lines = ["Requires-Dist: " + r for r in _requires(next(wheel_dir.glob(f"sglang-{release}-*.whl")))]
    pins = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Requires-Dist: transformers==")]
    out = pins[:1] or ["transformers"]
    if out[0].startswith("transformers==4."):
        out += ["huggingface_hub<1", "tokenizers<0.23"]
    elif out[0] == "transformers":
        pass
    elif tuple(int(x) for x in out[0].split("==")[1].split(".")[:2]) < (5, 19):
        out += ["huggingface_hub>=1,<2", "tokenizers<=0.23.0"]  # the base venv's newer ones fail its version check
    return out


def release_dir(release: str) -> Path:
    target = CACHE / "releases" / release
    if (target / ".complete").exists():
        return target
    python = base_python()
    print(f"installing sglang=={release} into {target}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        download = [str(python), "-m", "pip", "download", "-q", "--no-deps", f"sglang=={release}", "-d", tmp]
        if subprocess.run(download, capture_output=True).returncode != 0:
            raise HarnessError(f"sglang=={release} is not on the package index; pass a released version (e.g. 0.5.14)")
        wheel = next(Path(tmp).glob("*.whl"))
        _pip(python, "--no-deps", "--target", str(target), str(wheel), *_pinned_transformers(Path(tmp), release))
    (target / ".complete").write_text("ok\n")
    return target


# the grid of grid.py; config_grid.py's variants (golden sglang-configs-X.jsonl) and its named grid (sglang-named-X.jsonl)
GRIDS = ("main", "configs", "named")


def grid_scenarios(grid: str, limit: int | None) -> list[dict]:
    if grid == "configs":
        from conformance.sglang.config_grid import scenarios as config_scenarios

        return config_scenarios(limit)
    if grid == "named":
        from conformance.sglang.config_grid import named_scenarios

        return named_scenarios(limit)
    return scenarios(limit)


def golden_path(release: str, grid: str = "main") -> Path:
    return GOLDEN / (f"sglang-{release}.jsonl" if grid == "main" else f"sglang-{grid}-{release}.jsonl")


def _job(
    release: str, limit: int | None, grid: str = "main", items: list[dict] | None = None
) -> tuple[dict, dict[str, dict]]:
    """The runner's job for these scenarios (default: the grid's)."""
    groups: dict[str, dict] = {}
    by_id: dict[str, dict] = {}
    for sc in grid_scenarios(grid, limit) if items is None else items:
        gpu = GPUS[sc["gpu"]]
        # The speculative scenarios run in groups of their own after every plain group, with os.environ put back after
        # each, so they cannot change what the plain scenarios resolve. The configs and named grids put it back after
        # every scenario: a model step that sets SGLANG_* (Beam, Muse Spark: SGLANG_ENABLE_POST_CAPTURE_KV_SIZING)
        # would otherwise change every later model's resolution.
        speculative = "speculative" in sc
        key = f"{sc['gpu']}/speculative" if speculative else sc["gpu"]
        group = groups.setdefault(key, {"gpu": gpu["fake"], "torch_cuda": gpu["torch_cuda"], "scenarios": [],
                                        "isolate_env": speculative or grid != "main",
                                        "remote_code_stand_in": grid in REMOTE_CODE_STAND_IN})  # fmt: skip
        config_dir = sc.get("config_dir") or str(CONFIGS / sc["model"])  # the fuzz grid writes its own folders
        draft_dir = str(CONFIGS / sc["draft"]) if sc.get("draft") else None
        group["scenarios"].append({"id": sc["id"], "config_dir": config_dir, "draft_dir": draft_dir,
                                   "argv": sc_argv(sc, config_dir, draft_dir)})  # fmt: skip
        by_id[sc["id"]] = sc
    metadata = next(release_dir(release).glob(f"sglang-{release}.dist-info/METADATA")).read_text()
    placeholders = _placeholders(_requires_lines(metadata))
    return {"groups": list(groups.values()), "placeholders": placeholders}, by_id


def sc_argv(sc: dict, config_dir: str, draft_dir: str | None = None) -> list[str]:
    argv = ["--model-path", config_dir, "--tp-size", str(sc["tp"]), "--load-format", "dummy"]
    if sc["nnodes"] > 1:
        argv += ["--nnodes", str(sc["nnodes"]), "--node-rank", "0", "--dist-init-addr", "127.0.0.1:50000"]
    if sc["dp_attention"]:
        argv += ["--enable-dp-attention", "--dp-size", str(sc["dp_size"])]
    if sc["a2a"] != "none":
        argv += ["--moe-a2a-backend", sc["a2a"]]
    argv += sc.get("speculative", [])
    if draft_dir is not None:
        argv += ["--speculative-draft-model-path", draft_dir]
    return argv


def run_job(release: str, job: dict, expected: int, log_name: str | None = None) -> list[dict]:
    """Run the runner over ``job`` in the release's venv; its result lines (one per scenario). The runner's output goes
    to CACHE/``log_name`` (default runner-X.log)."""
    python = base_python()
    target = release_dir(release)
    with tempfile.TemporaryDirectory() as tmp:
        job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "out.jsonl"
        job_file.write_text(json.dumps(job))
        env = {**os.environ, "PYTHONPATH": str(target), "SGLANG_LOGGING_CONFIG_PATH": ""}
        env.pop("CUDA_VISIBLE_DEVICES", None)
        log = CACHE / (log_name or f"runner-{release}.log")
        with open(log, "w") as err:
            done = subprocess.run([str(python), str(RUNNER), str(job_file), str(out_file)], env=env, stdout=err,
                                  stderr=subprocess.STDOUT, cwd=tmp)  # fmt: skip
        results = [json.loads(line) for line in out_file.read_text().splitlines()] if out_file.exists() else []
    if done.returncode != 0 or len(results) != expected:
        raise HarnessError(f"the sglang {release} runner stopped after {len(results)}/{expected} scenarios; see {log}")
    return results


def stored_lines(path: Path) -> list[str]:
    """The stored golden's lines (none when there is no golden yet)."""
    return path.read_text().splitlines() if path.exists() else []


def generate(release: str, limit: int | None = None, grid: str = "main", missing: bool = False
             ) -> tuple[Path, float, int, int]:  # fmt: skip
    """Run the release over the grid and write its golden file; (path, seconds, scenarios, rejected). ``missing``:
    resolve only the scenarios the stored golden lacks, keeping its lines as they are and adding the new ones after."""
    start = time.monotonic()
    path = golden_path(release, grid)
    kept = stored_lines(path) if missing else []
    stored = {json.loads(line)["id"] for line in kept}
    items = [sc for sc in grid_scenarios(grid, limit) if sc["id"] not in stored]
    job, by_id = _job(release, limit, grid, items)
    results = run_job(release, job, len(by_id)) if items else []
    GOLDEN.mkdir(parents=True, exist_ok=True)
    rejected = 0
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in kept)
        for result in results:
            sc = by_id[result["id"]]
            line = {"id": sc["id"], "scenario": {k: v for k, v in sc.items() if k != "id"}}
            if "error" in result:
                rejected += 1
                line["error"] = result["error"]
            else:
                line["fields"] = result["fields"]
            line["log"] = sorted(set(result["log"]))
            f.write(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n")
    return path, time.monotonic() - start, len(results), rejected


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance sglang", description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="+", metavar="X.Y.Z", help="SGLang releases, e.g. 0.5.14 0.5.23")
    parser.add_argument("--limit", type=int, default=None, help="run only the first N scenarios (a quick try)")
    parser.add_argument("--grid", choices=GRIDS, default="main",
                        help="main: grid.py's models; configs: config_grid.py's unnamed and config-keyed variants; named: "
                             "every architecture the release names with a transformers config class")  # fmt: skip
    parser.add_argument("--missing", action="store_true",
                        help="resolve only the scenarios the stored golden lacks (a config added to the grid); keep "
                             "its other lines")  # fmt: skip
    args = parser.parse_args(argv)
    failed = 0
    for release in args.releases:
        release = release.lstrip("v")
        try:
            path, seconds, count, rejected = generate(release, args.limit, args.grid, args.missing)
        except HarnessError as exc:
            print(f"error: {exc}", file=sys.stderr)  # the next release may still run
            failed += 1
            continue
        print(
            f"sglang {release}: {count} scenarios ({rejected} rejected by SGLang) in {seconds:.0f} s -> {path}",
            flush=True,
        )
    return 1 if failed else 0
