"""The host: hostname, OS, Python, CPU count, each learned on its own."""

from __future__ import annotations

import os
import sys

from advisor.facts import Host


def probe_host() -> Host:
    unknown: dict[str, str] = {}
    values: dict[str, object] = {}
    for name, read in (
        ("hostname", lambda: os.uname().nodename),
        ("os", _os_text),
        ("python", lambda: "{}.{}.{}".format(*sys.version_info[:3])),
        ("cpu_count", os.cpu_count),
    ):
        try:
            values[name] = read()
        except Exception as exc:  # noqa: BLE001 - a host field we cannot read is unknown, not fatal
            unknown[name] = f"{type(exc).__name__}: {exc}"
    return Host(**values, unknown=unknown)


def _os_text() -> str:
    """Like platform.platform() without the libc part: "Linux-6.8.0-87-generic-x86_64"."""
    uname = os.uname()
    return f"{uname.sysname}-{uname.release}-{uname.machine}"
