"""``python -m conformance sglang-configs write | write-named X.Y.Z``: write the config grid's and the named grid's
config.json files (config_grid.py holds the recipes and the grids; named_sources.py where each named config comes
from). The release's own config classes are instantiated in its venv (named_config_writer.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from conformance.sglang import _placeholders, _requires_lines, base_python, release_dir
from conformance.sglang.config_grid import CONFIGS, NAMED_PREFIX, write, write_named


def main(argv: list[str]) -> int:
    if argv[:1] == ["write-named"] and len(argv) == 2:
        paths = write_named(argv[1].lstrip("v")) + write_named_sources(argv[1].lstrip("v"))
    elif argv == ["write"]:
        paths = write()
    else:
        print("usage: python -m conformance sglang-configs write | write-named X.Y.Z", file=sys.stderr)
        return 2
    for path in paths:
        print(path.relative_to(CONFIGS.parents[2]))
    return 0


def write_named_sources(release: str) -> list[Path]:
    """The named configs of named_sources.SOURCES (architectures transformers has no class for), each with its source
    in ``_written_by``: transformers' classes here, the release's own config classes in its venv, public checkpoints'
    fields, then the draft and variant names from their base family's config."""
    from conformance.sglang.named_sources import SOURCES

    written: dict[str, dict] = {}
    for arch, (kind, source, keys) in SOURCES.items():
        if kind == "transformers":
            written[arch] = _transformers_config(source, keys)
    for arch, config in _sglang_configs(release, {a: s for a, (k, s, _) in SOURCES.items() if k == "sglang"}).items():
        for key, value in SOURCES[arch][2].items():  # a sub-config's keys are set inside it
            both = isinstance(value, dict) and isinstance(config.get(key), dict)
            config[key] = {**config[key], **value} if both else value
        written[arch] = config
    for arch, (kind, fields, where) in SOURCES.items():
        if kind == "published":
            written[arch] = {**fields, "_written_by": f"published fields: {where}"}
    out = [_write_named_config(arch, config) for arch, config in written.items()]
    pending = {a: (s, k) for a, (kind, s, k) in SOURCES.items() if kind == "rename"}
    while pending:  # a rename may start from another named config of this list: write its base first
        ready = [a for a, (base, _) in pending.items() if (CONFIGS / base / "config.json").is_file()]
        if not ready:
            raise SystemExit(f"no base config for {sorted(pending)}")
        for arch in ready:
            base, keys = pending.pop(arch)
            config = json.loads((CONFIGS / base / "config.json").read_text())
            origin = config.pop("_written_by", f"tests/conformance/configs/{base}/config.json")
            config.update(keys)
            config["_written_by"] = f"{origin}; architectures renamed (a {arch} checkpoint is its family's config)"
            out.append(_write_named_config(arch, config))
    return out


def _write_named_config(arch: str, config: dict) -> Path:
    config["architectures"] = [arch]
    path = CONFIGS / (NAMED_PREFIX + arch) / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1, sort_keys=True, default=str) + "\n")
    return path


def _transformers_config(model_type: str, keys: dict) -> dict:
    import transformers
    from transformers import AutoConfig

    kwargs = {}
    for name, value in keys.items():  # sub-configs named by model_type become transformers' defaults of that type
        if isinstance(value, dict) and set(value) == {"model_type"}:
            value = AutoConfig.for_model(value["model_type"]).to_dict()
        kwargs[name] = value
    config = AutoConfig.for_model(model_type, **kwargs).to_dict()
    config["_written_by"] = f"transformers {transformers.__version__} AutoConfig.for_model({model_type!r})"
    return config


def _sglang_configs(release: str, classes: dict[str, str]) -> dict[str, dict]:
    """{architecture: the release's config class instantiated with its defaults}, run in the release's venv."""
    import subprocess
    import tempfile

    target = release_dir(release)
    metadata = next(target.glob(f"sglang-{release}.dist-info/METADATA")).read_text()
    job = {"classes": classes, "placeholders": _placeholders(_requires_lines(metadata)), "release": release}
    with tempfile.TemporaryDirectory() as tmp:
        job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "out.json"
        job_file.write_text(json.dumps(job))
        env = {**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{Path(__file__).parent}"}
        subprocess.run([str(base_python()), "-m", "named_config_writer", str(job_file), str(out_file)], env=env,
                       cwd=tmp, check=True)  # fmt: skip
        return json.loads(out_file.read_text())
