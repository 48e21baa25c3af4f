"""The wheel and sdist (what `pip install tp-advisor` gets), and the advisor installed without the runtime extra.

Offline: tests/light_install.py builds the distributions without build isolation and makes the advisor-only venv from
the wheel and copies of its default dependencies.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from light_install import CLEAN_ENV, build_dists, make_light_venv, wheel_requires

from launcher.engines import CPU_TORCH_INSTALL

PACKAGE_DATA = (
    "advisor/probe/profiles/h100-sxm-8.json",
    "advisor/probe/profiles/cpu-only.json",
    "advisor/catalog/Qwen--Qwen3-30B-A3B.json",
    "advisor/catalog/demo.json",
    "advisor/schema/plan.schema.json",
    "advisor/tui/advisor.tcss",
)
COMPLETIONS = ("advisor.bash", "_advisor", "advisor.fish")
RUNTIME_ONLY = ("torch", "flashinfer-python", "safetensors", "tokenizers", "fastapi", "uvicorn", "jinja2")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_dists(tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("src"))


def test_wheel_and_sdist_hold_package_data_completions_and_license(dists: dict[str, Path]) -> None:
    wheel = set(zipfile.ZipFile(dists["wheel"]).namelist())
    for rel in PACKAGE_DATA:
        assert rel in wheel
    data = "tp_advisor-0.1.0.data/data/share/"
    assert f"{data}bash-completion/completions/advisor.bash" in wheel
    assert f"{data}zsh/site-functions/_advisor" in wheel
    assert f"{data}fish/vendor_completions.d/advisor.fish" in wheel
    assert "tp_advisor-0.1.0.dist-info/licenses/LICENSE" in wheel
    assert not any(name.startswith("tests/") for name in wheel)

    with tarfile.open(dists["sdist"]) as tar:
        sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    for rel in (*PACKAGE_DATA, "LICENSE", "README.md", "pyproject.toml", *(f"completions/{c}" for c in COMPLETIONS)):
        assert rel in sdist


def test_twine_check_passes(dists: dict[str, Path]) -> None:
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dists["wheel"]), str(dists["sdist"])],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_default_dependencies_leave_the_runtime_to_its_extra(dists: dict[str, Path]) -> None:
    requires = wheel_requires(dists["wheel"])
    default = {r.name for r in requires if r.marker is None}
    runtime = {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": "runtime"})}
    assert default >= {"click", "rich", "textual", "nvidia-ml-py"}
    assert not default & set(RUNTIME_ONLY)
    assert runtime >= set(RUNTIME_ONLY)


def test_advisor_alone_runs_check_without_torch(dists: dict[str, Path], tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    installed = make_light_venv(venv, dists["wheel"])
    assert not installed & set(RUNTIME_ONLY)
    python = venv / "bin" / "python"
    env = dict(CLEAN_ENV)
    env["HF_HOME"] = str(tmp_path / "hf")  # the model comes from the bundled catalog, whatever this machine cached
    advisor = str(venv / "bin" / "advisor")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([advisor, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    absent = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert absent.stdout.strip() == "None"
    check = run("check", "--json", "--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B")
    assert check.returncode == 0, check.stderr
    plan = json.loads(check.stdout)
    assert plan["engine"]["name"] == "sglang" and plan["intent"]["tp"] == 8
    live = run("check")  # the live probe of this machine, whatever it holds
    assert live.returncode in (0, 1), live.stderr
    no_gpus = "GPUs         none" in live.stdout
    if no_gpus:  # a machine without GPUs: next steps, the runtime's install first (CPU torch, then the extra)
        steps = live.stdout.split("Next steps (no GPU here)", 1)[1]
        assert f"{CPU_TORCH_INSTALL}\n  pip install 'tp-advisor[runtime]'\n  advisor launch --mode generate" in steps

    launch = run("launch", "--mode", "generate")
    assert launch.returncode == 1
    assert launch.stderr.strip().splitlines()[-1].startswith("error: the bundled runtime needs torch")
    assert "pip install 'tp-advisor[runtime]'" in launch.stderr  # installed from a wheel: the name, not a directory
    assert (CPU_TORCH_INSTALL in launch.stderr) == no_gpus
    assert "Traceback" not in launch.stderr
