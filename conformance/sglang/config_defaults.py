"""``python -m conformance sglang-config-defaults X.Y.Z [...]``: read which config classes of a release fill in a key
the advisor's rules read when config.json leaves it out (config_defaults_reader.py, in the release's venv), into
advisor/rules/sglang/config_defaults.json. The rules read a config.json that omits the key through this table, so an
architecture the release does not name still gets its model_type's class default (HY-V4's learned sinks, EXAONE 4's
sliding-window pattern, a multimodal class's default text_config)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.sglang import HarnessError, _placeholders, _requires_lines, base_python, release_dir

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "config_defaults.json"
ABOUT = ("Per release: the model_types whose config class (the release's own, or its pinned transformers') gives a "
         "config.json that leaves the key out learnable_sink true, a sliding_window_pattern or index_topk that is not None, or a "
         "default text sub-config (get_hf_text_config returns another object); text_kv_widths: for those, the key the "
         "sub-config sits under and its (head_dim, v_head_dim, swa_head_dim, swa_v_head_dim) where top-level keys do not "
         "reach it. model_types: every model_type get_config finds a config class for; transformers: the version read. Written by python -m conformance sglang-config-defaults X.Y.Z.")  # fmt: skip


def read(release: str) -> dict[str, list[str]]:
    target = release_dir(release)
    metadata = next(target.glob(f"sglang-{release}.dist-info/METADATA")).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "out.json"
        job_file.write_text(json.dumps({"placeholders": _placeholders(_requires_lines(metadata))}))
        env = {**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{Path(__file__).parent}"}
        done = subprocess.run([str(base_python()), "-m", "config_defaults_reader", str(job_file), str(out_file)],
                              env=env, cwd=tmp, capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            raise HarnessError(f"reading sglang {release}'s config classes failed: {tail[0]}")
        return json.loads(out_file.read_text())


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m conformance sglang-config-defaults X.Y.Z [...]")
        return 0 if argv else 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"about": ABOUT, "releases": {}}
    for release in (r.lstrip("v") for r in argv):
        try:
            data["releases"][release] = read(release)
        except HarnessError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"sglang {release}: " + ", ".join(f"{k} {v if isinstance(v, str) else len(v)}"
                                                for k, v in data["releases"][release].items()))
    data["about"] = ABOUT
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0
