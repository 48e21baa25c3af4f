"""python -m conformance {sglang,sglang-args,sglang-flags,sglang-memory,sglang-architectures,sglang-configs,sglang-config-keys,sglang-quantization,vllm-quantization,sglang-coverage,vllm,vllm-flags,vllm-architectures,vllm-coverage,coverage-docs,report} ...: see each harness's --help."""

from __future__ import annotations

import importlib
import sys

USAGE = "usage: python -m conformance {sglang,sglang-args,sglang-flags,sglang-memory,sglang-architectures,sglang-configs,sglang-config-keys,sglang-quantization,vllm-quantization,sglang-coverage,vllm,vllm-flags,vllm-architectures,vllm-coverage,coverage-docs,report} ARGS (e.g. python -m conformance sglang 0.5.14)"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "sglang":
        from conformance.sglang import main as run
    elif command == "sglang-args":
        from conformance.sglang.cli_args import main as run
    elif command == "sglang-flags":
        from conformance.sglang.flags import main as run
    elif command == "sglang-memory":
        from conformance.sglang.memory import main as run
    elif command == "vllm-flags":
        from conformance.vllm.flags import main as run
    elif command == "sglang-architectures":
        from conformance.sglang.architectures import main as run
    elif command == "sglang-quantization":
        from conformance.sglang.quantization import main as run
    elif command == "vllm-quantization":
        from conformance.vllm.quantization import main as run
    elif command == "sglang-config-keys":
        from conformance.sglang.config_keys import main as run
    elif command == "sglang-configs":
        from conformance.sglang.config_writer import main as run
    elif command == "vllm-architectures":
        from conformance.vllm.architectures import main as run
    elif command == "sglang-coverage":
        from conformance.sglang.coverage import main as run
    elif command == "vllm-coverage":
        from conformance.vllm.coverage import main as run
    elif command == "coverage-docs":
        from conformance.coverage.docs import main as run
    elif command == "report":
        from conformance.sglang.report import main as run
    elif command == "vllm":
        try:
            run = importlib.import_module("conformance.vllm").main
        except ModuleNotFoundError as exc:
            if exc.name not in ("conformance.vllm",):
                raise
            print("error: the vLLM harness (conformance/vllm/) is not in this checkout; merge the vllm branch", file=sys.stderr)
            return 2
    else:
        print(f"error: unknown harness {command!r}; {USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
