"""Write advisor/rules/vllm/quant_methods.json: the quantization methods each vLLM release knows (the
``QuantizationMethods`` Literal of vllm/model_executor/layers/quantization/__init__.py, whose arguments are
QUANTIZATION_METHODS), read with ast from the release's wheel.

    python -m conformance.vllm.quant_methods 0.12.0 0.33.0 ...

ModelConfig._verify_quantization refuses a checkpoint whose quantization_config names a method outside that list
("Unknown quantization method: ... Must be one of [...]") unless a method's override_quantization_method claims it
first; ``claimed`` holds, per release, every string those overrides compare against (a superset of the names they
claim). advisor/rules/vllm/quantization.py reads the file.
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from pathlib import Path

from conformance.vllm.architectures import wheel

FILE = "vllm/model_executor/layers/quantization/__init__.py"
OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "quant_methods.json"


def methods(release: str) -> list[str]:
    """The QuantizationMethods Literal's arguments, in the release's order."""
    with zipfile.ZipFile(wheel(release)) as whl:
        tree = ast.parse(whl.read(FILE).decode())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if getattr(target, "id", None) == "QuantizationMethods" and isinstance(node.value, ast.Subscript):
            args = node.value.slice
            return [e.value for e in (args.elts if isinstance(args, ast.Tuple) else [args])]
    raise ValueError(f"vllm {release}: no QuantizationMethods in {FILE}")


PACKAGE = "vllm/model_executor/layers/quantization/"
OVERRIDE = "override_quantization_method"
MAX_NAME = 40  # method names are short words; the docstrings and messages the overrides hold are left out


def claimed(release: str) -> list[str]:
    """Every string an override_quantization_method of the release's quantization package compares against: the names
    a method claims for itself beyond the list (INC's auto-round, a GPTQ config read as gptq_marlin, ...)."""
    found: set[str] = set()
    with zipfile.ZipFile(wheel(release)) as whl:
        for name in whl.namelist():
            if not (name.startswith(PACKAGE) and name.endswith(".py")):
                continue
            for node in ast.walk(ast.parse(whl.read(name).decode())):
                if isinstance(node, ast.FunctionDef) and node.name == OVERRIDE:
                    found |= {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                              and c.value and " " not in c.value and len(c.value) <= MAX_NAME}  # fmt: skip
    return sorted(found)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m conformance.vllm.quant_methods X.Y.Z [...]", file=sys.stderr)
        return 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"file": FILE, "releases": {}, "claimed": {}}
    data.setdefault("claimed", {})
    for release in argv:
        data["releases"][release] = methods(release)
        data["claimed"][release] = claimed(release)
    for key in ("releases", "claimed"):
        data[key] = dict(sorted(data[key].items(), key=lambda kv: tuple(int(p) for p in kv[0].split("."))))
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT} ({len(data['releases'])} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
