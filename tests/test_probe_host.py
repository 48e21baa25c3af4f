"""Host facts match what the standard library reports, and a failing field is unknown, not fatal."""

from __future__ import annotations

import os
import platform
import socket

from advisor.probe import host


def test_host_facts():
    facts = host.probe_host()
    assert facts.hostname == socket.gethostname()
    assert facts.python == platform.python_version()
    assert facts.cpu_count == os.cpu_count()
    assert facts.os.startswith(platform.system() + "-" + platform.release())
    assert facts.unknown == {}


def test_a_failing_field_is_unknown(monkeypatch):
    def broken():
        raise OSError("no cpus today")

    monkeypatch.setattr(host.os, "cpu_count", broken)
    facts = host.probe_host()
    assert facts.cpu_count is None and facts.unknown == {"cpu_count": "OSError: no cpus today"}
    assert facts.hostname
