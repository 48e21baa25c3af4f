"""Importing facts and the probe, and probing this machine, loads neither torch, flashinfer nor textual."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
import advisor.facts, advisor.probe.live, advisor.probe.profiles, advisor.probe.packages, advisor.probe.environment
advisor.probe.profiles.load_profile("b300-8")
facts = advisor.probe.live.probe_live()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "flashinfer", "textual", "rich", "triton", "transformers"))
print(json.dumps({"heavy": heavy, "packages": [p.name for p in facts.packages], "driver": facts.driver.available}))
"""


def test_probe_imports_nothing_heavy():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["heavy"] == []
    assert "torch" in result["packages"]  # torch was found without being imported
