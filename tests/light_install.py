"""The advisor installed without the runtime extra, offline: what `pip install tp-advisor` gives, for tests and benchmarks.

``build_dists`` builds the wheel and sdist with `python -m build --no-isolation` from a copy of the tracked tree.
``make_light_venv`` makes a fresh venv holding that wheel (installed by pip with --no-deps --no-index) plus the files of
its default dependencies, resolved from the wheel's own metadata and copied from this environment's installed copies.
So a module the advisor imports but does not declare (torch, say) is missing there, as after `pip install tp-advisor`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
# The environment a light-venv command runs in: nothing of this checkout or this venv leaks in.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COLUMNS")}


def build_dists(out: Path, scratch: Path) -> dict[str, Path]:
    """{"wheel": path, "sdist": path} in ``out``, built from a copy of the tracked tree in ``scratch`` (the build writes
    egg-info beside its sources)."""
    src = scratch / "tp-advisor"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in tracked)):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"python -m build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


def make_light_venv(venv: Path, wheel: Path, compile_bytecode: bool = False) -> set[str]:
    """A venv at ``venv`` with ``wheel`` and its default dependencies; the names of the distributions copied in."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True, env=CLEAN_ENV).stdout.strip())  # fmt: skip
    names = default_dependency_closure(wheel_requires(wheel))
    for name in names:
        copy_distribution(name, site)
    compile_flag = "--compile" if compile_bytecode else "--no-compile"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           compile_flag, "-q", str(wheel)], env=CLEAN_ENV, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"pip install of {wheel.name} failed:\n{proc.stdout}{proc.stderr}")
    if compile_bytecode:  # as pip does at install time for the dependencies it installs
        subprocess.run([str(python), "-m", "compileall", "-q", str(site)], check=True, env=CLEAN_ENV, timeout=600)
    return names


def wheel_requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    return [Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines() if line.startswith("Requires-Dist:")]


def default_dependency_closure(requires: list[Requirement]) -> set[str]:
    """The names of every distribution `pip install tp-advisor` pulls, followed through this environment's metadata."""
    seen: set[str] = set()
    todo = [(r, "") for r in requires]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonical(req.name)
        dist = metadata.distribution(name)
        for wanted_extra in ("", *sorted(req.extras)):
            key = f"{name}[{wanted_extra}]"
            if key in seen:
                continue
            seen.add(key)
            todo += [(Requirement(r), wanted_extra) for r in dist.requires or ()]
    return {key.split("[", 1)[0] for key in seen}


def copy_distribution(name: str, site: Path) -> None:
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


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
