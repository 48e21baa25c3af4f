"""tests/gpu/run.sh in its CPU dry run (DRY_RUN=1): every step that can run without a GPU, with tiny shapes, must pass
and write at most 8 files; the GPU run is the same script with real sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
STEPS = ["environment", "probe", "check", "tui", "pytest", "runtime", "flashinfer"]


def test_usage_error_without_an_output_folder():
    run = subprocess.run(["bash", str(HERE / "run.sh")], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.startswith("usage:")


@pytest.mark.slow
def test_dry_run_passes_every_step(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "DRY_RUN": "1", "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(["bash", str(HERE / "run.sh"), str(out)], capture_output=True, text=True, timeout=560, env=env)
    summary = json.loads((out / "summary.json").read_text())
    assert run.returncode == 0, (run.stdout, json.dumps(summary["steps"], indent=1)[-3000:])
    assert summary["ok"] and summary["dry_run"]
    assert list(summary["steps"]) == STEPS
    assert {name: s["status"] for name, s in summary["steps"].items()} == dict.fromkeys(STEPS, "ok")
    files = sorted(p.name for p in out.iterdir())
    assert files == ["check.json", "log.txt", "probe.json", "runtime.json", "summary.json"]
    steps = summary["steps"]
    assert steps["probe"]["fields_checked"] == 18 and steps["probe"]["differing"] == []
    assert "skipped" in steps["pytest"]["result"]  # the gpu tests, on a machine without CUDA
    assert steps["runtime"]["float32_tokens_agree"] is True
    runtime = json.loads((out / "runtime.json").read_text())
    for kind in ("qwen3", "qwen3_moe"):
        model = runtime["models"][kind]
        assert model["float32"]["graphs_vs_transformers"]["equal"] and model["float32"]["static_steps"] > 0
        assert [row["batch"] for row in model["speed_bfloat16"]] == [1, 4]
    assert runtime["models"]["qwen3_moe"]["shape"]["num_experts"] == 64
    assert steps["flashinfer"]["flashinfer_active"] is False and "torch" in steps["flashinfer"]["results"]
