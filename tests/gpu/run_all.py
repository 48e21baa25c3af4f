"""Every GPU check of tests/gpu in one run, results in OUT (at most 8 files); started by tests/gpu/run.sh.

Steps, each in its own process with a time limit taken from one overall deadline (a step that overruns is killed and
marked "timeout"; summary.json is rewritten after every step, so a cut-short run still reports what it did):
1. environment: torch, CUDA, the GPU, the packages that travelled as wheels;
2. probe: `advisor probe --json` against `nvidia-smi -q -x`, `topo -m`, `nvlink -s` and the compute_cap query
   (smi_compare.py); any differing field fails the step;
3. check: `advisor check --json` (the bundled runtime's plan on this machine) and the plain report (into log.txt);
4. tui: the app headless (tui_smoke.py);
5. pytest: the tests marked gpu (test_on_gpu.py: probe vs nvidia-smi, captured graphs vs eager, FlashInfer norm);
6. runtime: the bundled runtime against transformers (runtime_vs_hf.py): float32 tokens, bf16 speed at batch 1/8/32;
7. flashinfer: `--mode bench --allreduce flashinfer-fusion --compare` at tp 1 on the dense checkpoint.
With --dry-run everything runs on CPU with tiny shapes; the probe step then compares the recorded nvidia-smi output in
tests/gpu/data (there is no nvidia-smi) and flashinfer falls back to torch (reported, not a failure).

Files: summary.json, log.txt, probe.json, nvidia-smi.xml, topo.txt, nvlink.txt, check.json, runtime.json.
usage: python tests/gpu/run_all.py OUT [--dry-run] [--budget SECONDS]
Exit 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = HERE / "data"
MAX_FILES = 8
# seconds each step may take at most (the overall deadline may cut them shorter)
STEP_LIMITS = {"environment": 30, "probe": 40, "check": 40, "tui": 60, "pytest": 90, "runtime": 300, "flashinfer": 120}
RESERVE_S = 5  # left at the end to write the summary


class Run:
    def __init__(self, out: Path, dry_run: bool, budget: float):
        self.out, self.dry_run = out, dry_run
        self.deadline = time.monotonic() + budget
        self.work = Path(tempfile.mkdtemp(prefix="tp-advisor-gpu-"))
        self.summary: dict = {"dry_run": dry_run, "budget_s": budget, "steps": {}}
        self.log = (out / "log.txt").open("a", encoding="utf-8")
        self.env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def remaining(self, step: str) -> float:
        return max(1.0, min(STEP_LIMITS[step], self.deadline - time.monotonic() - RESERVE_S))

    def sh(self, step: str, args: list[str], stdout: Path | None = None, timeout: float | None = None) -> tuple[int, str]:
        """Run a command; its stdout goes to `stdout` (else is returned), everything is logged. rc 124 on timeout."""
        limit = timeout if timeout is not None else self.remaining(step)
        self.log.write(f"\n===== [{step}] $ {' '.join(args)}  (limit {limit:.0f} s)\n")
        self.log.flush()
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=limit, env=self.env, cwd=REPO)
            rc, text, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            rc, text, err = 124, _text(exc.stdout), _text(exc.stderr) + f"\n(killed after {limit:.0f} s)"
        except OSError as exc:
            rc, text, err = 127, "", f"{exc}"
        if stdout is not None:
            stdout.write_text(text)
        self.log.write(text if stdout is None else f"(stdout written to {stdout.name}, {len(text)} chars)\n")
        self.log.write(err)
        self.log.flush()
        return rc, text

    def record(self, step: str, status: str, started: float, **detail) -> None:
        self.summary["steps"][step] = {"status": status, "seconds": round(time.monotonic() - started, 1), **detail}
        self.write_summary()

    def write_summary(self) -> None:
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=1, default=str))

    def python(self, *args: str) -> list[str]:
        return [sys.executable, *args]


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


# -- steps --------------------------------------------------------------------------------------------------------
def step_environment(run: Run) -> None:
    started = time.monotonic()
    code = (
        "import json, os, shutil, importlib.metadata as md, torch\n"
        "def v(n):\n"
        "    try: return md.version(n)\n"
        "    except md.PackageNotFoundError: return None\n"
        "cuda = torch.cuda.is_available()\n"
        "print(json.dumps({'torch': torch.__version__, 'torch_cuda': torch.version.cuda, 'cuda_available': cuda,\n"
        "  'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],\n"
        "  'capability': list(torch.cuda.get_device_capability(0)) if cuda else None,\n"
        "  'nvcc': shutil.which('nvcc'), 'CUDA_HOME': os.environ.get('CUDA_HOME'),  # flashinfer JIT needs nvcc\n"
        "  'packages': {n: v(n) for n in ('transformers', 'flashinfer-python', 'apache-tvm-ffi',\n"
        "    'nvidia-cudnn-frontend', 'textual', 'fastapi', 'uvicorn', 'pydantic', 'nvidia-ml-py', 'pytest')}}))\n"
    )
    rc, text = run.sh("environment", run.python("-c", code))
    info = json.loads(text) if rc == 0 and text.strip() else {}
    ok = rc == 0 and (run.dry_run or info.get("cuda_available"))
    run.record("environment", "ok" if ok else "failed", started, rc=rc, **info)


def step_probe(run: Run) -> None:
    started = time.monotonic()
    probe = run.out / "probe.json"
    rc, _ = run.sh("probe", run.python("-m", "advisor", "probe", "--json"), stdout=probe)
    if rc != 0:
        run.record("probe", "failed", started, rc=rc, detail="advisor probe --json failed (see log.txt)")
        return
    smi = shutil.which("nvidia-smi")
    if smi is None:
        if not run.dry_run:
            run.record("probe", "failed", started, detail="nvidia-smi not found on the GPU machine")
            return
        # dry run: the comparison itself, on recorded nvidia-smi output and the probe of that machine
        files = {"probe": DATA / "h200-2.probe.json", "xml": DATA / "h200-2.smi.xml", "topo": DATA / "h200-2.topo.txt",
                 "nvlink": DATA / "h200-2.nvlink.txt", "cap": DATA / "h200-2.compute_cap.csv"}
        source = "recorded tests/gpu/data/h200-2.* (dry run: no nvidia-smi here)"
    else:
        files = {"probe": probe, "xml": run.out / "nvidia-smi.xml", "topo": run.out / "topo.txt",
                 "nvlink": run.out / "nvlink.txt", "cap": run.work / "compute_cap.csv"}
        run.sh("probe", [smi, "-q", "-x"], stdout=files["xml"])
        run.sh("probe", [smi, "topo", "-m"], stdout=files["topo"])
        run.sh("probe", [smi, "nvlink", "-s"], stdout=files["nvlink"])
        run.sh("probe", [smi, "--query-gpu=index,compute_cap", "--format=csv,noheader"], stdout=files["cap"])
        source = "this machine"
    result = run.work / "smi_compare.json"
    args = [str(files["probe"]), str(files["xml"]), str(files["topo"]), "--nvlink", str(files["nvlink"]),
            "--compute-cap", str(files["cap"]), "--json", str(result)]
    rc, _ = run.sh("probe", run.python(str(HERE / "smi_compare.py"), *args))
    comparison = json.loads(result.read_text()) if result.exists() else None
    detail = {"compared": source, "rc": rc}
    if comparison is not None:
        detail["differing"] = [c for c in comparison["checks"] if not c["ok"]]
        detail["fields_checked"] = len(comparison["checks"])
        detail["unchecked"] = comparison["unchecked"]
    if files["cap"].exists():
        detail["compute_cap_csv"] = files["cap"].read_text()
    run.record("probe", "ok" if rc == 0 else "failed", started, **detail)


def step_check(run: Run) -> None:
    started = time.monotonic()
    rc, _ = run.sh("check", run.python("-m", "advisor", "check", "--json"), stdout=run.out / "check.json")
    text_rc, _ = run.sh("check", run.python("-m", "advisor", "check"))
    detail: dict = {"rc_json": rc, "rc_text": text_rc}
    try:
        plan = json.loads((run.out / "check.json").read_text())
        detail["gpus"] = [g["name"] for g in plan["facts"]["gpus"]]
        detail["intent"] = {k: plan["intent"][k] for k in ("engine", "tp", "dtype")}
        detail["decisions"] = {d["id"]: d["state"] for d in plan["decisions"]}
        detail["problems"] = [p["id"] for p in plan["problems"]]
    except (OSError, ValueError, KeyError, TypeError) as err:
        detail["error"] = f"check.json unreadable: {err}"
    # exit 0 (no error) or 1 (the plan has errors) both describe this machine; 2 or a crash does not
    ok = rc in (0, 1) and text_rc in (0, 1) and "error" not in detail
    run.record("check", "ok" if ok else "failed", started, **detail)


def step_tui(run: Run) -> None:
    started = time.monotonic()
    args = [str(HERE / "tui_smoke.py")] + ([] if run.dry_run else ["--expect-gpu"])
    rc, text = run.sh("tui", run.python(*args))
    lines = text.strip().splitlines()
    try:
        detail = json.loads(lines[-1]) if lines else {}
    except ValueError:
        detail = {"output": lines[-1][:500]}
    run.record("tui", "ok" if rc == 0 else "failed", started, rc=rc, **detail)


def step_pytest(run: Run) -> None:
    """The tests marked gpu (tests/gpu/test_on_gpu.py); on CPU they are skipped, which the dry run checks."""
    started = time.monotonic()
    args = ["-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", str(HERE)]
    rc, text = run.sh("pytest", run.python(*args))
    tail = text.strip().splitlines()[-1:] if text.strip() else []
    status = "timeout" if rc == 124 else "ok" if rc == 0 else "failed"
    run.record("pytest", status, started, rc=rc, result=tail[0] if tail else None)


def step_runtime(run: Run) -> None:
    started = time.monotonic()
    args = [str(HERE / "runtime_vs_hf.py"), "--out", str(run.out / "runtime.json"), "--models", str(run.work / "models")]
    args += ["--device", "cpu", "--tiny"] if run.dry_run else ["--device", "cuda"]
    rc, text = run.sh("runtime", run.python(*args))
    detail: dict = {"rc": rc}
    try:
        report = json.loads((run.out / "runtime.json").read_text())
        detail["float32_tokens_agree"] = report.get("float32_tokens_agree")
        detail["copy_bandwidth_GBps"] = round(report["copy_bandwidth_bytes_per_s"] / 1e9, 1)
        for kind, result in report.get("models", {}).items():
            detail[kind] = {
                "float32": {k: v["equal"] for k, v in result.get("float32", {}).items() if isinstance(v, dict)},
                "bf16_tokens_agreeing": result.get("bfloat16", {}).get("graphs_vs_transformers"),
                "decode_tok_s": {
                    row["batch"]: {name: round(row[name]["decode_tokens_per_s"], 1)
                                   for name in ("runtime_cuda_graphs", "runtime_eager", "transformers")}
                    for row in result.get("speed_bfloat16", [])
                },
                "prefill_tok_s": {
                    row["batch"]: {name: round(row[name]["prefill_tokens_per_s"], 1)
                                   for name in ("runtime_cuda_graphs", "runtime_eager", "transformers")}
                    for row in result.get("speed_bfloat16", [])
                },
                "batch1_bound_over_measured": result.get("batch1_bound_over_measured"),
            }
    except (OSError, ValueError, KeyError) as err:
        detail["error"] = f"runtime.json unreadable: {err}"
    status = "timeout" if rc == 124 else "ok" if rc == 0 else "failed"
    run.record("runtime", status, started, **detail)


def step_flashinfer(run: Run) -> None:
    started = time.monotonic()
    model = run.work / "models" / "qwen3"
    if not (model / "config.json").exists():
        run.record("flashinfer", "skipped", started, detail="no dense checkpoint (the runtime step did not build it)")
        return
    lengths = (8, 4) if run.dry_run else (128, 32)
    shape = ["--input-len", str(lengths[0]), "--output-len", str(lengths[1]), "--max-model-len", str(sum(lengths))]
    args = ["-m", "launcher.runtime", "--model", str(model), "--mode", "bench", "--allreduce", "flashinfer-fusion",
            "--compare", "--batch-size", "8", "--max-batch-size", "8", "--json", *shape]
    args += ["--device", "cpu"] if run.dry_run else ["--device", "cuda", "--dtype", "bfloat16"]
    rc, text = run.sh("flashinfer", run.python(*args))
    lines = text.strip().splitlines()
    detail: dict = {"rc": rc, "report": lines[:6]}
    with contextlib.suppress(ValueError, IndexError):  # no JSON line: the bench failed, its output is in the log
        detail["results"] = json.loads(lines[-1])
    active = any("allreduce strategy flashinfer-fusion" in line for line in lines)
    detail["flashinfer_active"] = active
    ok = rc == 0 and "results" in detail and (active or run.dry_run)
    run.record("flashinfer", "ok" if ok else "timeout" if rc == 124 else "failed", started, **detail)


STEPS = (step_environment, step_probe, step_check, step_tui, step_pytest, step_runtime, step_flashinfer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="CPU only, tiny shapes, recorded nvidia-smi output")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for all steps together")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    run = Run(args.out, args.dry_run, args.budget)
    try:
        for step in STEPS:
            if run.deadline - time.monotonic() < RESERVE_S + 1:
                run.summary["steps"][step.__name__[5:]] = {"status": "timeout", "detail": "no time left"}
                continue
            step(run)
    finally:
        run.log.close()
        shutil.rmtree(run.work, ignore_errors=True)
        files = sorted(p.name for p in args.out.iterdir())
        run.summary["files"] = files
        run.summary["ok"] = all(s["status"] == "ok" for s in run.summary["steps"].values()) and len(files) <= MAX_FILES
        run.write_summary()
    statuses = ", ".join(f"{name} {s['status']}" for name, s in run.summary["steps"].items())
    print(f"{'ok' if run.summary['ok'] else 'FAILED'}: {statuses}; results in {args.out}", flush=True)
    return 0 if run.summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
