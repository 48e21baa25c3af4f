"""What `advisor check --json` imports: the modules tests/benchmarks/bench_check.py found too costly for a command meant
to be called from scripts stay out of its path (each is imported lazily where a rarer path needs it).

- dataclasses (and inspect with it): advisor.records builds the frozen records without it;
- typing: modules name their annotations under ``TYPE_CHECKING = False`` / ``if TYPE_CHECKING:``;
- pathlib (and urllib.parse, ipaddress with it): profiles, the catalog and the model lookup use os.path;
- contextlib, importlib (and warnings with it): the memory rule catches ValueError itself, the engine registry imports an
  engine's module with __import__;
- unicodedata: advisor.sanitize loads it only for text that is not plain ASCII (these plans' JSON is);
- re (and enum with it), json, shlex: profiles and catalog entries are read by advisor.jsontext, the command line is
  quoted by launcher.shellquote, the JSON written by advisor.report.data with json's C string escaper;
- functools and collections: advisor.memo caches, collections.abc's names are annotations only (models.py reads Mapping
  from _collections_abc, which os has loaded);
- advisor.report.render: advisor.report reads the renderers' names from it on first use; the JSON needs none of them.

The interpreter runs with -S (no site-packages, no .pth files), so only this checkout's imports count: a virtualenv's
startup hooks may import pathlib or typing themselves. packaging (a dependency) is put on the path: comparing
flashinfer versions reads them with packaging.version (advisor.versions reads plain release numbers without it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import packaging
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING_HOME = os.path.dirname(os.path.dirname(packaging.__file__))
KEPT_OUT = ("dataclasses", "inspect", "typing", "pathlib", "urllib.parse", "ipaddress", "click", "rich", "contextlib",
            "importlib", "warnings", "unicodedata", "advisor.report.render", "re", "enum", "json", "shlex",
            "functools", "collections")


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--json", "--profile", "b300-8", "--model", "Qwen/Qwen3-VL-235B-A22B-Instruct", "--tp", "8"],
        ["check", "--json", "--profile", "h100-sxm-8", "--engine", "sglang", "--model", "Qwen/Qwen3-30B-A3B"],
    ],
)
def test_check_json_keeps_costly_modules_out(argv, tmp_path):
    code = (
        "import sys\n"
        f"sys.argv = ['advisor', *{argv!r}]\n"
        "from advisor.fastpath import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(' '.join(m for m in {KEPT_OUT!r} if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), PACKAGING_HOME]), "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.startswith("{") and proc.stderr == ""
