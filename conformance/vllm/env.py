"""One cached environment per vLLM release, under ~/.cache/tp-advisor/conformance/vllm-X/.

The release's wheel is unpacked without its compiled extensions (``site/``); the Python packages its config resolution
imports go to ``deps/`` with ``pip install --no-deps --target``, at the release's own pins where its metadata has them;
torch, transformers and the rest come from the running interpreter (CPU torch). Which packages are needed is found by
trying: run the resolver, install the module it misses, again, until it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

CACHE = Path(os.environ.get("TP_ADVISOR_CACHE", Path.home() / ".cache" / "tp-advisor")) / "conformance"
RESOLVER = Path(__file__).with_name("resolve.py")
# Import name -> distribution name, where they differ.
DISTRIBUTIONS = {
    "zmq": "pyzmq", "cpuinfo": "py-cpuinfo", "PIL": "pillow", "cv2": "opencv-python-headless", "yaml": "pyyaml",
    "google": "protobuf", "openai_harmony": "openai-harmony", "sentencepiece": "sentencepiece", "attr": "attrs",
    "jsonschema_specifications": "jsonschema-specifications", "dateutil": "python-dateutil",
    "pythonjsonlogger": "python-json-logger", "mistral_common": "mistral-common", "llguidance": "llguidance",
    "outlines_core": "outlines-core", "partial_json_parser": "partial-json-parser",
    "lmformatenforcer": "lm-format-enforcer", "compressed_tensors": "compressed-tensors",
    "prometheus_fastapi_instrumentator": "prometheus-fastapi-instrumentator", "pydantic_extra_types": "pydantic-extra-types",
}  # fmt: skip
MAX_INSTALLS = 60
# Never installed: GPU kernel packages whose absence the resolver relies on (without triton vLLM takes its placeholder,
# which resolve.py's fakes expect), and kernel modules whose PyPI namesake is another project ("quack" is not
# quack-kernels), and torchaudio, whose compiled library loads only under the torch it was built for (PyPI has none for
# the CPU torch the harness runs: the release's pin fails to load and stops every scenario), and vllm itself: a
# submodule the release lacks is the release's own (v0.15.1 names vllm.transformers_utils.configs.qwen3_asr, which its
# wheel does not ship), and a vllm from PyPI in deps/ would not mend it. A scenario whose model class imports one stays
# an error line of the golden.
NOT_INSTALLED = frozenset({"triton", "quack", "cutlass", "cuda", "deep_gemm", "flashinfer", "torchaudio", "vllm"})
# Before v0.15 the rotary embedding imports vllm_flash_attn's Triton kernel unguarded on CUDA
# (model_executor/layers/rotary_embedding/common.py, v0.12.0): without triton the registry cannot inspect any model
# class using RoPE, so those releases get the real triton (their first goldens were built with it).
TRITON_OPTIONAL_FROM = Version("0.15.0")


def never_installed(version: str) -> frozenset[str]:
    """The modules NOT_INSTALLED names, less triton for the releases that cannot start without it."""
    return NOT_INSTALLED - {"triton"} if Version(version) < TRITON_OPTIONAL_FROM else NOT_INSTALLED


# The harness runs the interpreter's transformers (5.x). A release whose pin excludes it (v0.12.0-v0.17.1 pin
# transformers<5) runs the newest listed release its pin admits, with the hub and tokenizers that one requires, as a
# fresh install of the release would. A pin no listed release meets keeps the interpreter's (v0.33.0's <5.21: docs).
PINNED_TRANSFORMERS = {"4.57.6": ("huggingface_hub>=0.34,<1.0", "tokenizers>=0.22,<=0.23")}
_MISSING = re.compile(r"No module named '([^'.]+)")


class EnvError(RuntimeError):
    """The environment could not be built; one line naming the fix."""


def release_dir(version: str) -> Path:
    return CACHE / f"vllm-{version}"


def pythonpath(version: str) -> str:
    root = release_dir(version)
    pinned = _pinned_transformers(version)
    return os.pathsep.join([*([str(pinned)] if pinned else []), str(root / "site"), str(root / "deps")])


def _pinned_transformers(version: str) -> Path | None:
    """The transformers a release's pin admits where it excludes the interpreter's (installed once, under the cache);
    None where the interpreter's is admitted or no listed one is."""
    pin = _pins(version).get("transformers") if (release_dir(version) / "site").exists() else None
    if pin is None:
        return None
    specifier = Requirement(pin).specifier
    if specifier.contains(metadata.version("transformers"), prereleases=True):
        return None
    admitted = [v for v in PINNED_TRANSFORMERS if specifier.contains(v)]
    if not admitted:
        return None
    chosen = max(admitted, key=Version)
    target = CACHE / f"transformers-{chosen}"
    if not (target / "transformers").is_dir():
        done = _pip("install", "--no-deps", "--target", str(target), f"transformers=={chosen}",
                    *PINNED_TRANSFORMERS[chosen])  # fmt: skip
        if done.returncode:
            raise EnvError(f"cannot install transformers=={chosen}: {done.stderr.strip().splitlines()[-1:]}")
    return target


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=1800)  # fmt: skip


def _unpack(version: str) -> None:
    root = release_dir(version)
    if (root / "site" / "vllm" / "__init__.py").exists():
        return
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        done = _pip("download", "--no-deps", f"vllm=={version}", "-d", str(wheels))
        if done.returncode:
            raise EnvError(f"cannot download vllm=={version}: {done.stderr.strip().splitlines()[-1:]}; check the version")
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as wheel:
        members = [m for m in wheel.namelist() if not re.search(r"\.so(\.\d+)*$", m)]
        wheel.extractall(root / "site", members)


def _pins(version: str) -> dict[str, str]:
    """Distribution (normalised) -> requirement text, from the release's METADATA (markers dropped)."""
    pins: dict[str, str] = {}
    for meta in (release_dir(version) / "site").glob("vllm-*.dist-info/METADATA"):
        for line in meta.read_text().splitlines():
            if line.startswith("Requires-Dist:") and "extra ==" not in line:
                req = line.split(":", 1)[1].split(";")[0].strip()
                name = re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0]
                pins[_norm(name)] = req.replace(" ", "")
    return pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _seed(deps: Path, version: str) -> None:
    """Start from the nearest release already built (its packages rarely differ and every trial start costs minutes);
    the resolver run then finds what this release misses, and a release's own pins are installed over the seed."""
    built = [p.parent for p in CACHE.glob("vllm-*/ready")]
    if not built:
        return
    target = Version(version)
    nearest = min(built, key=lambda root: abs(_minor(Version(root.name.removeprefix("vllm-"))) - _minor(target)))
    # triton belongs only to the releases before TRITON_OPTIONAL_FROM; a later one must not inherit it
    ignore = shutil.ignore_patterns("triton", "triton-*") if "triton" in never_installed(version) else None
    shutil.copytree(nearest / "deps", deps, copy_function=os.link, ignore=ignore)


def _minor(version: Version) -> int:
    return version.major * 1000 + version.minor


def _torch_matched(dist: str) -> str | None:
    """torchvision at the release matching the running torch (0.N+15 for torch 2.N: its compiled ops are built against
    one torch), not the release's CUDA pin; None for other distributions."""
    if dist != "torchvision":
        return None
    import torch

    major, minor = (int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    return f"torchvision=={major - 2}.{minor + 15}.*"


def _install(version: str, module: str, pins: dict[str, str], deps: Path, log) -> None:
    dist = DISTRIBUTIONS.get(module, module)
    requirement = _torch_matched(dist) or pins.get(_norm(dist), dist)
    log(f"vllm {version}: installing {requirement} (imports {module})")
    result = _pip("install", "--no-deps", "--target", str(deps), requirement)
    if result.returncode and requirement != dist:
        result = _pip("install", "--no-deps", "--target", str(deps), dist)
    if result.returncode:
        raise EnvError(f"cannot install {dist} for vllm {version}: {result.stderr.strip().splitlines()[-1:]}")


def missing_in(version: str, results: Path | None) -> list[str]:
    """Modules the scenarios of a resolver run could not import (their error lines)."""
    if results is None or not results.exists():
        return []
    return sorted(set(_MISSING.findall(results.read_text())) - never_installed(version))


def run_resolver(version: str, scenarios: Path, out: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=pythonpath(version), PYTHONNOUSERSITE="1")
    return subprocess.run([sys.executable, str(RESOLVER), str(scenarios), str(out)], capture_output=True, text=True,
                          env=env, timeout=timeout)  # fmt: skip


def resolve(version: str, scenarios: Path, out: Path) -> None:
    """run_resolver in an environment already built; an EnvError naming the resolver's last line where it fails."""
    done = run_resolver(version, scenarios, out)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise EnvError(f"vllm {version} resolver failed: {tail[0]}")


def ensure(version: str, probe: Path, log=print, out: Path | None = None) -> bool:
    """Unpack vllm==version and install what its config resolution imports, trying ``probe`` (a scenarios file).
    True when the environment was built by this call, which leaves the probe's results in ``out``."""
    _unpack(version)
    root = release_dir(version)
    deps = root / "deps"
    if (root / "ready").exists() and not missing_in(version, out):
        return False
    if not deps.exists():
        _seed(deps, version)
    deps.mkdir(exist_ok=True)
    pins = _pins(version)
    missing = missing_in(version, out)  # what an earlier run's scenarios could not import
    out = out or root / "probe.jsonl"
    for _ in range(MAX_INSTALLS):
        for module in missing:
            _install(version, module, pins, deps, log)
        done = run_resolver(version, probe, out)
        missing = [m for m in _MISSING.findall(done.stderr)[-1:] if m not in never_installed(version)]
        if done.returncode == 0:
            # A module only some scenarios import (a quantization method's) shows as those scenarios' errors.
            missing = missing_in(version, out)
            if not missing:
                (root / "ready").write_text("ok\n")
                return True
        if not missing:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise EnvError(f"vllm {version} resolver failed: {tail[0]}")
    raise EnvError(f"vllm {version} still misses modules after {MAX_INSTALLS} installs; see {root}")


def _lines_by_scenario(results: Path) -> dict[str, str]:
    lines = {}
    for line in results.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):  # a last line cut mid-write
            lines[json.loads(line)["scenario"]] = line
    return lines


def complete(version: str, inputs: list[dict], results: Path, log=print) -> None:
    """After a run of ``inputs`` into ``results``: while some scenarios failed on a module the environment lacks,
    install it and resolve those scenarios again (only those: a whole grid takes an hour), replacing their lines."""
    pins = _pins(version)
    deps = release_dir(version) / "deps"
    for _ in range(MAX_INSTALLS):
        missing = missing_in(version, results)
        if not missing:
            return
        for module in missing:
            _install(version, module, pins, deps, log)
        lines = _lines_by_scenario(results)
        again = [item for item in inputs if set(_MISSING.findall(lines.get(item["id"], ""))) & set(missing)]
        log(f"vllm {version}: resolving {len(again)} scenarios again after installing {', '.join(missing)}")
        retry_in, retry_out = results.with_suffix(".retry.json"), results.with_suffix(".retry.jsonl")
        retry_in.write_text(json.dumps(again))
        resolve(version, retry_in, retry_out)
        lines.update(_lines_by_scenario(retry_out))
        results.write_text("".join(line + "\n" for line in lines.values()))
    raise EnvError(f"vllm {version} still misses modules after {MAX_INSTALLS} installs; see {release_dir(version)}")


def ensure_importable(version: str, module: str, log=print) -> None:
    """Unpack vllm==version and install what ``import module`` misses under it, one module at a time (the KV-cache
    arithmetic of conformance.vllm.memory needs far less than the config resolution)."""
    _unpack(version)
    deps = release_dir(version) / "deps"
    if not deps.exists():
        _seed(deps, version)
    deps.mkdir(exist_ok=True)
    pins = _pins(version)
    environ = dict(os.environ, PYTHONPATH=pythonpath(version), PYTHONNOUSERSITE="1")
    tried: set[str] = set()
    for _ in range(MAX_INSTALLS):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=environ,
                              timeout=600)  # fmt: skip
        if done.returncode == 0:
            return
        missing = _MISSING.findall(done.stderr)
        if not missing:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise EnvError(f"vllm {version}: import {module} failed: {tail[0]}")
        if missing[-1] in tried:  # present but too old (a seeded copy lacks a submodule): replace it at the pin
            shutil.rmtree(deps / missing[-1], ignore_errors=True)
        tried.add(missing[-1])
        _install(version, missing[-1], pins, deps, log)
    raise EnvError(f"vllm {version} still misses modules after {MAX_INSTALLS} installs; see {release_dir(version)}")
