"""Write advisor/rules/sglang/cli_args.json: the engine arguments the advisor reads, as each SGLang release's own
parser declares them (choices, or the value's type).

    python -m conformance sglang-args 0.5.7 0.5.8 ... 0.5.23

Each release runs in its cached conformance environment (the one `python -m conformance sglang X` builds), with the GPU
faked as for the goldens; ``dump`` below runs inside it and prints one JSON object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.version import Version

ARGUMENTS = ("--attention-backend", "--moe-runner-backend", "--moe-a2a-backend", "--flashinfer-allreduce-fusion-backend",
             "--mem-fraction-static", "--chunked-prefill-size", "--cuda-graph-max-bs", "--cuda-graph-max-bs-decode",
             "--page-size", "--tp-size", "--ep-size", "--expert-parallel-size", "--ep",
             "--dtype", "--speculative-algorithm", "--speculative-num-steps", "--speculative-eagle-topk",
             "--speculative-num-draft-tokens", "--max-running-requests")  # fmt: skip
OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "cli_args.json"
ABOUT = ("The engine arguments the advisor reads, as each SGLang release's own parser declares them "
         "(ServerArgs.add_cli_args, python/sglang/srt/server_args.py): a list is the argument's choices, 'int' / "
         "'float' its type, 'str' any text; {'resolved_names': [...]}: any text on the command line, but resolution "
         "refuses a name (in any case) outside the list (--speculative-algorithm from v0.5.12, "
         "SpeculativeAlgorithm.from_string in python/sglang/srt/speculative/spec_info.py). "
         "Written by `python -m conformance sglang-args X.Y.Z ...`.")  # fmt: skip


def dump(job_path: str) -> None:
    """Inside a release's environment: fake the GPU as the runner does, build the release's parser, print the specs."""
    import argparse

    sys.path.insert(0, str(Path(__file__).parent))
    import runner

    job = json.loads(Path(job_path).read_text())
    group = job["groups"][0]
    runner.fake_gpu(group["gpu"], group["torch_cuda"])
    runner.stand_in_for_cuda_packages(job["placeholders"])
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    specs = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option in ARGUMENTS:
                specs[option] = list(action.choices) if action.choices else getattr(action.type, "__name__", "str")
    if specs.get("--speculative-algorithm") == "str":
        specs["--speculative-algorithm"] = {"resolved_names": speculative_names()}
    print(json.dumps(dict(sorted(specs.items()))))


def speculative_names() -> list[str]:
    """The names this release's resolution accepts for --speculative-algorithm (upper-cased first): its builtin
    SpeculativeAlgorithm members and the NEXTN alias it maps to EAGLE (plugin-registered names aside)."""
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return sorted({member.name for member in SpeculativeAlgorithm if member.name != "NONE"} | {"NEXTN"})


def main(argv: list[str]) -> int:
    from conformance.sglang import _job, base_python, release_dir

    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"about": ABOUT, "releases": {}}
    python = base_python()
    for release in (r.lstrip("v") for r in argv):
        job, _ = _job(release, 1)
        with tempfile.TemporaryDirectory() as tmp:
            job_file = Path(tmp) / "job.json"
            job_file.write_text(json.dumps(job))
            env = {**os.environ, "PYTHONPATH": str(release_dir(release)), "SGLANG_LOGGING_CONFIG_PATH": ""}
            done = subprocess.run([str(python), __file__, "--dump", str(job_file)], env=env, capture_output=True,
                                  text=True, cwd=tmp)  # fmt: skip
        if done.returncode:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            print(f"error: sglang {release}: {tail[0]}", file=sys.stderr)
            return 1
        data["releases"][release] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"sglang {release}: {len(data['releases'][release])} arguments", flush=True)
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda item: Version(item[0])))
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        dump(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
