"""How tests and benchmarks start the real `advisor` entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def advisor_argv() -> list[str]:
    """The console script when installed (as a user runs it), else `python -m advisor`."""
    script = Path(sys.executable).with_name("advisor")
    if script.exists():
        return [str(script)]
    found = shutil.which("advisor")
    return [found] if found else [sys.executable, "-m", "advisor"]


def offline_env(tmp_path: Path, *unset: str) -> dict[str, str]:
    """This environment, offline, with an empty Hugging Face cache under ``tmp_path`` (model lookups are deterministic)
    and no colour; the ``unset`` variables removed."""
    env = dict(os.environ)
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", NO_COLOR="1")
    for name in ("HF_HUB_CACHE", *unset):
        env.pop(name, None)
    return env


def run_advisor(args: list[str], env: dict[str, str], *, pre: Sequence[str] = (), **kwargs) -> subprocess.CompletedProcess:
    """`advisor ARGS` (after ``pre``, e.g. a wrapper command) with text output, captured unless ``stdout`` is given."""
    if "stdout" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run([*pre, *advisor_argv(), *args], env=env, text=True, timeout=60, **kwargs)
