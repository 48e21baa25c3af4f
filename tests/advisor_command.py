"""How tests and benchmarks start the real `advisor` entry point."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def advisor_argv() -> list[str]:
    """The console script when installed (as a user runs it), else `python -m advisor`."""
    script = Path(sys.executable).with_name("advisor")
    if script.exists():
        return [str(script)]
    found = shutil.which("advisor")
    return [found] if found else [sys.executable, "-m", "advisor"]
