"""Write advisor/rules/vllm/cli_flags.json: every option string each vLLM release's `vllm serve` parser accepts.

    python -m conformance vllm-flags 0.12.0 0.14.1 ... 0.33.0

For each release the parser is built by the release's own code, not read from its source: in the release's cached
environment (on the CUDA platform the config resolver fakes, conformance/vllm/resolve.py) (conformance/vllm/env.py: the wheel unpacked to ~/.cache/tp-advisor/conformance/vllm-X/site, the packages
its imports need installed into deps/ as the import misses them), this file runs ``make_arg_parser(
FlexibleArgumentParser())`` (vllm/entrypoints/openai/cli_args.py up to v0.3x, vllm/entrypoints/common/cli_args.py
where it moved; ``vllm serve`` builds its subparser the same way in vllm/entrypoints/cli/serve.py) and prints every
option string of every action, and the parser's ``allow_abbrev``. The parser is built, not read with ``ast``, because
make_arg_parser declares the front-end options with f-strings over the FrontendArgs dataclass fields, and EngineArgs
.add_cli_args takes the help and choices of every option from the config dataclasses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "cli_flags.json"
MODULES = (
    "vllm.entrypoints.openai.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.entrypoints.common.cli_args",
)
MAX_INSTALLS = 60
ABOUT = ("Every option string `vllm serve` accepts, per release (argparse exits with 'unrecognized arguments' on any "
         "other), and whether its parser takes an unambiguous prefix of a long option (allow_abbrev; no release sets "
         "it, so argparse's default True holds). Built by running each release's own parser, make_arg_parser("
         "FlexibleArgumentParser()) from vllm/entrypoints/openai/cli_args.py (vllm/entrypoints/launchers/ or common/cli_args.py in "
         "later releases), in the release's cached environment. FlexibleArgumentParser.parse_args "
         "(vllm/utils/argparse_utils.py) also turns underscores in a flag's name into dashes and reads "
         "--option.key=value as a JSON field of --option. Written by `python -m conformance vllm-flags X.Y.Z ...`.")  # fmt: skip


def dump() -> None:
    """Inside the release's environment: build the serve parser and print its option strings as JSON. The CUDA
    platform is faked as the config resolver fakes it (resolve.py): the parser's defaults build a DeviceConfig, which
    infers the device type from the platform."""
    import importlib

    sys.path.insert(0, str(Path(__file__).parent))
    import resolve

    for name, value in (("VLLM_NO_USAGE_STATS", "1"), ("VLLM_TARGET_DEVICE", "cuda"), ("HF_HUB_OFFLINE", "1")):
        os.environ.setdefault(name, value)
    resolve._stub_extensions()
    import torch

    resolve._fake_torch_cuda(torch)
    resolve._fake_cuda_allocations(torch)
    resolve._stub_ops(torch)
    resolve._fake_platform()
    resolve._fake_device_count()

    module = None
    for name in MODULES:
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as exc:
            if not name.startswith(exc.name or "?"):  # a dependency is missing, not the module: the caller installs it
                raise
    if module is None:
        raise SystemExit(f"error: none of {', '.join(MODULES)} in this release")
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    parser = module.make_arg_parser(FlexibleArgumentParser())
    options = sorted({option for action in parser._actions for option in action.option_strings})
    print(json.dumps({"allow_abbrev": parser.allow_abbrev, "options": options}))


def built(release: str, log=print) -> dict:
    """The release's parser, built in its environment (installing what the import misses)."""
    from conformance.vllm import env

    env._unpack(release)
    deps = env.release_dir(release) / "deps"
    deps.mkdir(parents=True, exist_ok=True)
    pins = env._pins(release)
    run_env = dict(os.environ, PYTHONPATH=env.pythonpath(release), PYTHONNOUSERSITE="1")
    for _ in range(MAX_INSTALLS):
        done = subprocess.run([sys.executable, __file__, "--dump"], env=run_env, capture_output=True, text=True,
                              cwd=env.release_dir(release), timeout=900)  # fmt: skip
        if done.returncode == 0:
            return json.loads(done.stdout.strip().splitlines()[-1])
        missing = re.findall(r"No module named '([^'.]+)", done.stderr)
        if not missing:
            raise SystemExit(f"error: vllm {release}: building the parser failed: {done.stderr.strip()[-400:]}")
        env._install(release, missing[-1], pins, deps, log)
    raise SystemExit(f"error: vllm {release}: still missing modules after {MAX_INSTALLS} installs")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    from conformance import release_json  # here, not at the top: `--dump` runs this file without the repository

    data = release_json.load(OUT, ABOUT)
    for release in (r.lstrip("v") for r in argv):
        parser = built(release)
        release_json.store(OUT, data, release, parser)
        print(f"vllm {release}: {len(parser['options'])} options, allow_abbrev={parser['allow_abbrev']}", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        dump()
    else:
        sys.exit(main(sys.argv[1:]))
