"""Probe this machine into Facts: NVML (GPUs, driver, topology), installed packages, host and environment.

Nothing here imports torch, flashinfer or textual; the NVML binding (pynvml) is imported when probe_live() runs, so a
machine without it still gets every other fact.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from advisor.facts import Driver, Facts, Package, ProbeError, Topology
from advisor.probe.environment import filter_environment, visible_gpus
from advisor.probe.host import probe_host
from advisor.probe.nvml import probe_nvml
from advisor.probe.packages import PythonProbeError, probe_packages, python_facts
from advisor.probe.system import probe_system

__all__ = ["probe_live", "PythonProbeError"]


def probe_live(python: str | None = None, environ: Mapping[str, str] | None = None, nvml: Any = None,
               sys_root: str = "/sys", proc_root: str = "/proc", shm_path: str = "/dev/shm") -> Facts:
    """Facts about this machine (source "live").

    ``python``: probe that interpreter's packages instead of this one's (raises PythonProbeError when it is not a
    working Python). ``environ``: the environment an engine would inherit (default os.environ). ``nvml``: the NVML
    binding (default: `pynvml` from nvidia-ml-py, imported here); tests pass a fake. ``sys_root``, ``proc_root``,
    ``shm_path``: where /sys, /proc and /dev/shm are read (tests pass a fake tree).
    """
    environ = os.environ if environ is None else environ
    errors: list[ProbeError] = []
    host = probe_host()
    if python is not None:
        version, executable, packages = python_facts(python)
        host = replace(host, python=version)
        own_packages = None
    else:
        executable = sys.executable
        packages = _guarded_packages(errors)
        own_packages = packages

    nvml_error = None
    if nvml is None:
        try:
            import pynvml as nvml
        except Exception as exc:  # noqa: BLE001 - no binding means no NVML facts, not a crash
            nvml_error = f"cannot import pynvml ({type(exc).__name__}: {exc}); pip install nvidia-ml-py"
    library = _nvml_library(own_packages, nvml) if nvml_error is None else None
    if nvml_error is not None:
        driver, gpus, topology = Driver(available=False, reason=nvml_error), (), Topology()
        errors.append(ProbeError("nvml.import", nvml_error))
    else:
        result = probe_nvml(nvml, library)
        driver, gpus, topology = result.driver, result.gpus, result.topology
        errors.extend(result.errors)

    gpus, system, system_errors = probe_system(gpus, sys_root, proc_root, shm_path)
    errors.extend(system_errors)
    visible, note = visible_gpus(environ.get("CUDA_VISIBLE_DEVICES"), gpus)
    return Facts(
        source="live",
        host=host,
        driver=driver,
        gpus=gpus,
        visible_gpus=visible,
        visible_gpus_note=note,
        topology=topology,
        system=system,
        packages=packages,
        environment=filter_environment(environ),
        python_executable=executable,
        python_here=executable is not None,
        errors=tuple(errors),
    )


def _guarded_packages(errors: list[ProbeError]) -> tuple[Package, ...]:
    try:
        return probe_packages()
    except Exception as exc:  # noqa: BLE001 - a package scan failure must not hide the GPU facts
        errors.append(ProbeError("packages", f"{type(exc).__name__}: {exc}"))
        return ()


def _nvml_library(packages: tuple[Package, ...] | None, nvml: Any) -> str | None:
    """Which binding answers: "nvidia-ml-py 13.615.71" (or the unofficial pynvml wrapper, or a test fake)."""
    if getattr(nvml, "__name__", "pynvml") != "pynvml" or not hasattr(nvml, "__file__"):
        return type(nvml).__name__ if not hasattr(nvml, "__name__") else nvml.__name__
    if packages is None:
        packages = _guarded_packages([])
    by_name = {p.name: p for p in packages}
    official, wrapper = by_name.get("nvidia-ml-py"), by_name.get("pynvml")
    if official and official.version:
        extra = f" (unofficial pynvml {wrapper.version} also installed)" if wrapper and wrapper.version else ""
        return f"nvidia-ml-py {official.version}{extra}"
    if wrapper and wrapper.version:
        return f"pynvml {wrapper.version} (unofficial wrapper; install nvidia-ml-py)"
    return "pynvml"
