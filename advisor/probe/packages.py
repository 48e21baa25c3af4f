"""Installed packages of the watch list, from dist-info metadata and package files read as text (never imported).

For this interpreter the scan runs in-process; for another one (`--python PATH`) the same scan's source runs in that
interpreter (argv list, no shell, a timeout) and answers with one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from advisor.facts import Package
from advisor.probe import package_scan

SCAN_SOURCE = Path(package_scan.__file__)


class PythonProbeError(Exception):
    """Another interpreter could not be probed; the message is one line with the fix."""


def probe_packages(path: list[str] | None = None) -> tuple[Package, ...]:
    """The watched distributions on ``path`` (default: this interpreter's sys.path)."""
    return tuple(_package(item) for item in package_scan.scan(path))


def probe_python(executable: str, timeout: float = 20) -> tuple[Package, ...]:
    """The watched distributions of another interpreter, by running the scan inside it."""
    return python_facts(executable, timeout)[2]


def python_facts(executable: str, timeout: float = 20) -> tuple[str, str, tuple[Package, ...]]:
    """(Python version, sys.executable, packages) of the interpreter at ``executable``."""
    fix = "pass --python the path of a Python >= 3.8 interpreter, e.g. /opt/venv/bin/python"
    exe = os.path.expanduser(executable)
    if os.sep not in exe and not (os.altsep and os.altsep in exe):
        found = shutil.which(exe)  # a bare name such as "python3.12" is looked up on PATH, as a shell would
        if found is None:
            raise PythonProbeError(f"--python {executable}: not found on PATH; {fix}")
        exe = found
    if not os.path.exists(exe):
        raise PythonProbeError(f"--python {executable}: no such file; {fix}")
    if os.path.isdir(exe):
        raise PythonProbeError(f"--python {executable}: is a directory; {fix}")
    exe = os.path.abspath(exe)  # it runs from its own directory: a path relative to ours would name nothing there
    source = SCAN_SOURCE.read_text(encoding="utf-8") + "\nmain()\n"
    try:
        # Its own session, so a timeout can kill whatever it started too (a child holding the pipes would hang us).
        proc = subprocess.Popen(
            [exe, "-c", source],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            cwd=os.path.dirname(os.path.abspath(exe)) or "/",  # not ours: our checkout must not shadow its packages
            start_new_session=True,
        )
    except OSError as exc:
        raise PythonProbeError(f"--python {executable}: cannot run it ({exc.strerror or exc}); {fix}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        raise PythonProbeError(f"--python {executable}: no answer within {timeout:g} s; {fix}") from None
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    payload = _payload(done.stdout)
    if payload is None:
        said = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["nothing"])[-1][:160]
        status = f"exit status {done.returncode}" if done.returncode else "exit status 0"
        raise PythonProbeError(f"--python {executable}: not a working Python ({status}, said: {said}); {fix}")
    try:
        packages = tuple(_package(item) for item in payload["packages"])
        return _text(payload, "python", required=True), _text(payload, "executable", required=True), packages
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise PythonProbeError(f"--python {executable}: unexpected answer ({exc}); {fix}") from None


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.communicate()


def _payload(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(package_scan.MARKER):
            try:
                data = json.loads(line[len(package_scan.MARKER) :])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _text(item: dict[str, Any], key: str, required: bool = False) -> Any:
    """``item[key]`` when it is a string (or missing/None where that is allowed); a ValueError naming it otherwise:
    another interpreter's answer is data, and a wrong type must not reach the rules."""
    value = item[key] if required else item.get(key)
    if value is None and not required or isinstance(value, str):
        return value
    raise ValueError(f"{key} is {type(value).__name__}, not text")


def _package(item: dict[str, Any]) -> Package:
    if not isinstance(item, dict):
        raise ValueError(f"a package is {type(item).__name__}, not an object")
    installed, unknown = item.get("installed", True), item.get("unknown") or {}
    if not isinstance(installed, bool) or not isinstance(unknown, dict):
        raise ValueError(f"package {item.get('name')!r}: installed/unknown of the wrong type")
    return Package(
        name=_text(item, "name", required=True),
        installed=installed,
        version=_text(item, "version"),
        local_label=_text(item, "local_label"),
        location=_text(item, "location"),
        module_version=_text(item, "module_version"),
        cuda=_text(item, "cuda"),
        unknown={str(k): str(v) for k, v in unknown.items()},
    )
