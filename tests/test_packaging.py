"""The wheel and sdist (what `pip install tp-advisor` gets), and the advisor installed without the runtime extra.

Offline: the distributions are built with `python -m build --no-isolation` (setuptools from the test extra), and the
advisor-only environment is a fresh venv holding the wheel (installed by pip with --no-deps --no-index) plus the files of
the default dependencies, resolved from the wheel's own metadata and copied from this environment's installed copies.
So a module the advisor imports but does not declare (torch, say) is missing there, as it would be after
`pip install tp-advisor`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
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
    """{"wheel": path, "sdist": path}, built from a copy of the tracked tree (the build writes egg-info beside it)."""
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "tp-advisor"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in tracked)):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


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
    requires = _wheel_requires(dists["wheel"])
    default = {r.name for r in requires if r.marker is None}
    runtime = {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": "runtime"})}
    assert default >= {"click", "rich", "textual", "nvidia-ml-py"}
    assert not default & set(RUNTIME_ONLY)
    assert runtime >= set(RUNTIME_ONLY)


def test_advisor_alone_runs_check_without_torch(dists: dict[str, Path], tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COLUMNS")}
    installed = _default_dependency_closure(_wheel_requires(dists["wheel"]))
    assert not installed & set(RUNTIME_ONLY)
    for name in installed:
        _copy_distribution(name, site)
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "--no-compile", "-q", str(dists["wheel"])], env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr

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
    if "GPUs         none" in live.stdout:  # a machine without GPUs: next steps, the runtime's install first
        steps = live.stdout.split("Next steps (no GPU here)", 1)[1]
        assert "pip install 'tp-advisor[runtime]'\n  advisor launch --mode generate" in steps

    launch = run("launch", "--mode", "generate")
    assert launch.returncode == 1
    assert launch.stderr.strip().splitlines()[-1].startswith("error: the bundled runtime needs torch")
    assert "pip install 'tp-advisor[runtime]'" in launch.stderr
    assert "Traceback" not in launch.stderr


def _wheel_requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    return [Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines() if line.startswith("Requires-Dist:")]


def _default_dependency_closure(requires: list[Requirement]) -> set[str]:
    """The names of every distribution `pip install tp-advisor` pulls, followed through this environment's metadata."""
    seen: set[str] = set()
    todo = [(r, "") for r in requires]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = _canonical(req.name)
        dist = metadata.distribution(name)
        for wanted_extra in ("", *sorted(req.extras)):
            key = f"{name}[{wanted_extra}]"
            if key in seen:
                continue
            seen.add(key)
            todo += [(Requirement(r), wanted_extra) for r in dist.requires or ()]
    return {key.split("[", 1)[0] for key in seen}


def _copy_distribution(name: str, site: Path) -> None:
    """Copy an installed distribution's files (its RECORD) into ``site``; scripts outside site-packages are skipped."""
    dist = metadata.distribution(name)
    for file in dist.files or ():
        if file.parts[0] == ".." or file.suffix == ".pyc":
            continue
        source = Path(dist.locate_file(file))
        if source.is_file():
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
