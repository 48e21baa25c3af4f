"""Write advisor/rules/vllm/quantization.json: the quantization methods each vLLM release knows, the least GPU capability
each needs, the deprecated ones, and the checkpoint names its detection steps read.

    python -m conformance vllm-quantization 0.12.0 ... 0.33.0

Read from each release's wheel with ``ast`` (never imported), the way conformance/sglang/quantization.py reads SGLang's:
vllm/model_executor/layers/quantization/__init__.py's QuantizationMethods (the names ModelConfig._verify_quantization
accepts, "Unknown quantization method"), DEPRECATED_QUANTIZATION_METHODS (refused without
--allow-deprecated-quantization) and get_quantization_config's method_to_config (each method's config class, whose
get_min_capability VllmConfig._get_quantization_config compares with the GPU's: "is not supported for the current GPU",
and whose get_supported_act_dtypes it holds the model's dtype to: "is not supported for quantization method").
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

from conformance.release_json import load, store
from conformance.sglang.quantization import _classes, _dict_keys, _method, detected, min_capability
from conformance.vllm.architectures import wheel

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "quantization.json"
PACKAGE = "vllm/model_executor/layers/quantization/"
ABOUT = ("Per vLLM release: the quantization methods it accepts (model_executor/layers/quantization/__init__.py "
         "QuantizationMethods), each with the least GPU capability its config class's get_min_capability returns (null: "
         "not a constant or no class), `act_dtypes`: the model dtypes its config class's get_supported_act_dtypes "
         "lists (methods whose list is not a constant left out), `deprecated` (DEPRECATED_QUANTIZATION_METHODS) and "
         "`detected`: the checkpoint quant_method names its override_quantization_method steps compare against. Written by `python -m "
         "conformance vllm-quantization X.Y.Z ...`; see docs/vllm.md.")  # fmt: skip


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


# torch dtype attributes -> the names --dtype and config.json use
TORCH_DTYPES = {
    "bfloat16": "bfloat16",
    "half": "float16",
    "float16": "float16",
    "float": "float32",
    "float32": "float32",
}


def act_dtypes(name: str, classes: dict, depth: int = 0) -> list[str] | None:
    """The model dtypes class ``name``'s get_supported_act_dtypes returns as a constant list of torch dtypes (following
    ``return Other.get_supported_act_dtypes()`` and bases; FP8 entries dropped: no model dtype); None: not a constant."""
    if name not in classes or depth > 5:
        return None
    cls, _ = classes[name]
    fn = _method(cls, "get_supported_act_dtypes")
    if fn is None:
        bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
        return next((d for b in bases if (d := act_dtypes(b, classes, depth + 1)) is not None), None)
    returns = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        return None
    value = returns[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name):
        return act_dtypes(value.func.value.id, classes, depth + 1)
    if not isinstance(value, ast.List) or not value.elts:
        return None
    names = []
    for elt in value.elts:
        if not (isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name) and elt.value.id == "torch"):
            return None
        if elt.attr in TORCH_DTYPES:
            names.append(TORCH_DTYPES[elt.attr])
        elif not elt.attr.startswith("float8"):
            return None
    return sorted(set(names))


def read(zf: zipfile.ZipFile) -> dict:
    tree = ast.parse(zf.read(PACKAGE + "__init__.py").decode())
    names: list[str] = []
    deprecated: list[str] = []
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        ids = {t.id for t in targets if isinstance(t, ast.Name)}
        if "QuantizationMethods" in ids and node.value is not None:
            names = _strings(node.value)
        elif "DEPRECATED_QUANTIZATION_METHODS" in ids and node.value is not None:
            deprecated = _strings(node.value)
    config_of: dict[str, str] = {}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_quantization_config"):
        for assign in (n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))):
            config_of.update(_dict_keys(assign.value) if assign.value is not None else {})
    classes = _classes(zf, PACKAGE)
    methods = {name: min_capability(config_of[name], classes) if name in config_of else None for name in sorted(names)}
    dtypes = {name: found for name in sorted(names) if name in config_of
              and (found := act_dtypes(config_of[name], classes)) is not None}  # fmt: skip
    return {"methods": methods, "act_dtypes": dtypes, "deprecated": sorted(deprecated),
            "detected": sorted(detected(classes) - set(methods))}  # fmt: skip


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    bad = [r for r in argv if not re.fullmatch(r"\d+(\.\d+)*", r.lstrip("v"))]
    if bad:
        print(f"error: {bad[0]!r} is not a release; pass versions such as 0.33.0", file=sys.stderr)
        return 2
    data = load(OUT, ABOUT)
    for release in (r.lstrip("v") for r in argv):
        with zipfile.ZipFile(wheel(release)) as zf:
            entry = read(zf)
        store(OUT, data, release, entry)
        print(f"vllm {release}: {len(entry['methods'])} methods, {len(entry['deprecated'])} deprecated", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
