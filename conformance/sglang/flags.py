"""Write advisor/rules/sglang/cli_flags.json: every option string each SGLang release's launch_server parser accepts.

    python -m conformance sglang-flags 0.5.7 0.5.8 ... 0.5.23

For each release the wheel (``pip download --no-deps``, cached under ~/.cache/tp-advisor/conformance/wheels/) is opened
as a zip, not installed, and ``ast`` reads sglang/srt/server_args.py: every option string of a ``.add_argument(...)``
call in ``ServerArgs.add_cli_args`` and ``prepare_server_args`` (the parser ``python -m sglang.launch_server`` builds).
Anything it cannot read as a literal (an f-string, a variable) or any other call handed the parser (from v0.5.14
``add_cli_args_from_dataclass(parser, ServerArgs)`` declares most flags from the dataclass fields) is reported as
unresolved, never skipped. A release with anything unresolved is then read by building its parser: the wheel unpacked
to a temporary folder, ``ServerArgs.add_cli_args(argparse.ArgumentParser())`` run under this interpreter (CPU torch)
with the packages the import needs in ~/.cache/tp-advisor/conformance/sglang-flags-deps/ (installed with ``pip install
--no-deps --target`` as the import misses them) and the CUDA-only packages stood in for as the runner does. The static
flags must all be among the built parser's, or the release fails; with ``--compare`` the parser is built for every
release, and where nothing was unresolved it must declare exactly the static flags.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "cli_flags.json"
CACHE = Path(os.environ.get("TP_ADVISOR_CONFORMANCE_CACHE", Path.home() / ".cache" / "tp-advisor" / "conformance"))
WHEELS = CACHE / "wheels"
DEPS = CACHE / "sglang-flags-deps"
SOURCE = "sglang/srt/server_args.py"
# argparse's own: every ArgumentParser accepts them (add_help=True).
ARGPARSE = ("-h", "--help")
# The functions whose add_argument calls build the launch_server parser (prepare_server_args builds it and calls
# ServerArgs.add_cli_args; no release's launch_server.py adds options of its own).
SCOPES = (("ServerArgs", "add_cli_args"), (None, "prepare_server_args"))
# Calls handed the parser that add no options.
INERT = {"add_argument", "add_argument_group", "add_mutually_exclusive_group", "parse_args", "parse_known_args",
         "ArgumentParser", "add_cli_args", "ConfigArgumentMerger", "set_defaults", "print_help", "error"}  # fmt: skip
CUDA_ONLY = ["torchvision", "sgl_kernel", "flashinfer", "deep_gemm", "deep_ep", "flash_mla"]
DISTRIBUTIONS = {"zmq": "pyzmq", "PIL": "pillow", "yaml": "pyyaml", "IPython": "ipython", "google": "protobuf",
                 "dateutil": "python-dateutil", "cv2": "opencv-python-headless", "attr": "attrs",
                 "tvm_ffi": "apache-tvm-ffi"}  # fmt: skip
MAX_INSTALLS = 40
ABOUT = ("Every option string `python -m sglang.launch_server` accepts, per release (argparse exits with 'unrecognized "
         "arguments' on any other; note argparse also takes an unambiguous prefix of a long option). Read from the "
         "release's wheel, sglang/srt/server_args.py (python/sglang/srt/server_args.py in the repository): up to "
         "v0.5.13 statically (ast: the literal option strings of parser.add_argument in ServerArgs.add_cli_args and "
         "prepare_server_args, with the --no-X of a BooleanOptionalAction, plus argparse's -h/--help); from v0.5.14, "
         "where add_cli_args_from_dataclass declares most options from the ServerArgs fields, by building the "
         "release's parser (ServerArgs.add_cli_args). "
         "Written by `python -m conformance sglang-flags X.Y.Z ...`.")  # fmt: skip


@dataclass
class Extraction:
    flags: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)  # "line N: source" for what was not read


def extract(source: str) -> Extraction:
    """The literal option strings of the add_argument calls in SCOPES, and what could not be read."""
    tree = ast.parse(source)
    found = Extraction(flags=set(ARGPARSE))
    scopes = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            scopes += [(node.name, f) for f in node.body if isinstance(f, ast.FunctionDef)]
        elif isinstance(node, ast.FunctionDef):
            scopes.append((None, node))
    functions = [f for owner, f in scopes if (owner, f.name) in SCOPES]
    if not any(f.name == "add_cli_args" for f in functions):
        found.unresolved.append("no ServerArgs.add_cli_args")
    for function in functions:
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name == "add_argument":
                # BooleanOptionalAction declares --no-X beside each --X
                action = next((k.value for k in call.keywords if k.arg == "action"), None)
                negated = getattr(action, "attr", getattr(action, "id", None)) == "BooleanOptionalAction"
                for arg in call.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.flags.add(arg.value)
                        if negated and arg.value.startswith("--"):
                            found.flags.add("--no-" + arg.value[2:])
                    else:
                        found.unresolved.append(f"line {call.lineno}: {ast.get_source_segment(source, call)}")
            elif name not in INERT and any(isinstance(a, ast.Name) and a.id == "parser" for a in call.args):
                found.unresolved.append(f"line {call.lineno}: {ast.get_source_segment(source, call)}")
    return found


def wheel(release: str) -> Path:
    WHEELS.mkdir(parents=True, exist_ok=True)
    found = sorted(WHEELS.glob(f"sglang-{release}-*.whl"))
    if not found:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                               "--no-deps", "--only-binary", ":all:", f"sglang=={release}", "-d", str(WHEELS)],
                              capture_output=True, text=True)  # fmt: skip
        found = sorted(WHEELS.glob(f"sglang-{release}-*.whl"))
        if done.returncode or not found:
            raise SystemExit(f"error: cannot download sglang=={release}; pass a released version (e.g. 0.5.14)")
    return found[0]


def static(release: str) -> Extraction:
    with zipfile.ZipFile(wheel(release)) as zf:
        return extract(zf.read(SOURCE).decode())


def dump() -> None:
    """Inside the subprocess: stand in for the CUDA-only packages, build the release's parser, print its options."""
    import argparse

    sys.path.insert(0, str(Path(__file__).parent))
    import runner

    runner.stand_in_for_cuda_packages(CUDA_ONLY)
    # This interpreter's transformers may already hold a config a release registers under the same name (v0.5.11's
    # qwen3_asr); the parser does not depend on which one wins.
    from transformers.models.auto import configuration_auto

    register = type(configuration_auto.CONFIG_MAPPING).register
    type(configuration_auto.CONFIG_MAPPING).register = lambda self, key, value, exist_ok=False: register(
        self, key, value, exist_ok=True
    )
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    print(json.dumps(sorted({option for action in parser._actions for option in action.option_strings})))


def dynamic(release: str) -> set[str]:
    """The option strings of the release's own parser, built under this interpreter."""
    DEPS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel(release)) as zf:
            zf.extractall(tmp, [m for m in zf.namelist() if not re.search(r"\.so(\.\d+)*$", m)])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(DEPS)]), "SGLANG_LOGGING_CONFIG_PATH": ""}
        for _ in range(MAX_INSTALLS):
            done = subprocess.run(
                [sys.executable, __file__, "--dump"], env=env, capture_output=True, text=True, cwd=tmp
            )
            if done.returncode == 0:
                return set(json.loads(done.stdout.strip().splitlines()[-1]))
            missing = re.findall(r"No module named '([^'.]+)", done.stderr)
            if not missing or missing[-1] in CUDA_ONLY:
                raise SystemExit(f"error: sglang {release}: building the parser failed: {done.stderr.strip()[-400:]}")
            install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                      "--no-deps", "--target", str(DEPS), DISTRIBUTIONS.get(missing[-1], missing[-1])],
                                     capture_output=True, text=True)  # fmt: skip
            if install.returncode:
                raise SystemExit(
                    f"error: sglang {release}: cannot install {missing[-1]}: {install.stderr.strip()[-300:]}"
                )
    raise SystemExit(f"error: sglang {release}: still missing modules after {MAX_INSTALLS} installs")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    from conformance import release_json  # here, not at the top: `--dump` runs this file without the repository

    compare = "--compare" in argv  # build the parser even where the static read is complete, and report the diff
    data = release_json.load(OUT, ABOUT)
    for release in (r.lstrip("v") for r in argv if r != "--compare"):
        read = static(release)
        flags = read.flags
        how = "static"
        if read.unresolved or compare:
            built = dynamic(release)
            if not read.flags <= built:
                print(f"error: sglang {release}: read but not in the built parser: {sorted(read.flags - built)}",
                      file=sys.stderr)  # fmt: skip
                return 1
            if not read.unresolved and built != read.flags:
                print(f"error: sglang {release}: built parser has more: {sorted(built - read.flags)}", file=sys.stderr)
                return 1
            flags, how = built, f"built ({len(read.flags)} static, {len(read.unresolved)} unresolved: " + "; ".join(
                u.splitlines()[0] for u in read.unresolved) + ")"  # fmt: skip
        release_json.store(OUT, data, release, sorted(flags))
        print(f"sglang {release}: {len(flags)} options, {how}", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        dump()
    else:
        sys.exit(main(sys.argv[1:]))
