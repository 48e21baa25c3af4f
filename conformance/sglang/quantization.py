"""Write advisor/rules/sglang/quantization.json: the quantization methods each SGLang release knows on CUDA, the least GPU
capability each needs, and the checkpoint names its detection steps read.

    python -m conformance sglang-quantization 0.5.7 ... 0.5.23

Read from each release's wheel with ``ast`` (never imported):

- sglang/srt/layers/quantization/__init__.py: the keys of BASE_QUANTIZATION_METHODS (the registry
  ModelConfig._verify_quantization checks, "Unknown quantization method"), with the ``.update({...})`` blocks under an
  ``if`` that holds on CUDA (its test names is_cuda), each key with the class it maps to;
- each class's get_min_capability (a constant return, or another class's get_min_capability), which the model loader
  compares with the GPU's capability (model_loader/loader.py _get_quantization_config: "is not supported for the current
  GPU");
- ``detected``: every string compared with a quant_method inside the classes' override_quantization_method and the
  helpers they call in the same module (``is_gptq_marlin_compatible``: ``quant_method != "gptq"``): a checkpoint name the
  release may turn into a registered method before the check (gptq -> gptq_marlin where Marlin takes it).
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

from conformance.release_json import load, store
from conformance.sglang.flags import wheel

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "quantization.json"
PACKAGE = "sglang/srt/layers/quantization/"
REGISTRY = ("BASE_QUANTIZATION_METHODS", "QUANTIZATION_METHODS")
ABOUT = ("Per SGLang release: the quantization methods its registry (layers/quantization/__init__.py "
         "BASE_QUANTIZATION_METHODS, with the blocks added on CUDA) knows, each with the least GPU capability its config "
         "class's get_min_capability returns (null: not a constant), and `detected`: the checkpoint quant_method names "
         "its override_quantization_method steps compare against. Written by `python -m conformance "
         "sglang-quantization X.Y.Z ...` from the release's wheel; see docs/sglang.md.")  # fmt: skip


def _dict_keys(node: ast.AST) -> dict[str, str]:
    """{key: class name} of a dict literal of string keys."""
    if not isinstance(node, ast.Dict):
        return {}
    return {
        k.value: v.id if isinstance(v, ast.Name) else ast.unparse(v)
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }


def registry(tree: ast.Module) -> dict[str, str]:
    """The CUDA registry of __init__.py: {method: config class}."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == REGISTRY[0] for t in targets):
                found.update(_dict_keys(node.value))
        elif isinstance(node, ast.If) and "is_cuda" in ast.unparse(node.test):
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                if isinstance(call.func, ast.Attribute) and call.func.attr == "update" and call.args:
                    found.update(_dict_keys(call.args[0]))
    if not found:  # releases without the BASE_ name: QUANTIZATION_METHODS itself
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == REGISTRY[1] for t in node.targets
            ):
                found.update(_dict_keys(node.value))
    return found


def _classes(zf: zipfile.ZipFile, prefix: str) -> dict[str, tuple[ast.ClassDef, ast.Module]]:
    found = {}
    for name in zf.namelist():
        if name.startswith(prefix) and name.endswith(".py"):
            try:
                tree = ast.parse(zf.read(name).decode())
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, (node, tree))
    return found


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def min_capability(name: str, classes: dict, depth: int = 0) -> int | None:
    """The constant get_min_capability of class ``name`` (following ``return Other.get_min_capability()`` and bases)."""
    if name not in classes or depth > 5:
        return None
    cls, _ = classes[name]
    fn = _method(cls, "get_min_capability")
    if fn is None:
        bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
        return next((c for b in bases if (c := min_capability(b, classes, depth + 1)) is not None), None)
    returns = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        return None
    value = returns[0]
    if isinstance(value, ast.Constant) and isinstance(value.value, int):
        return value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name):
        return min_capability(value.func.value.id, classes, depth + 1)
    return None


def detected(classes: dict) -> set[str]:
    """The strings compared with a quant_method in override_quantization_method and the module's helpers it calls."""
    found: set[str] = set()
    for cls, _ in classes.values():
        fn = _method(cls, "override_quantization_method")
        if fn is None:
            continue
        called = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        bodies = [fn] + [m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name in called]
        for body in bodies:
            for cmp in (n for n in ast.walk(body) if isinstance(n, ast.Compare)):
                if "quant_method" not in ast.unparse(cmp):
                    continue
                for side in (cmp.left, *cmp.comparators):
                    for const in ast.walk(side):
                        if (
                            isinstance(const, ast.Constant)
                            and isinstance(const.value, str)
                            and re.fullmatch(r"[\w\-/.]+", const.value)
                        ):
                            found.add(const.value.lower())
    return found - {"quant_method"}


def read(zf: zipfile.ZipFile, prefix: str = PACKAGE) -> dict:
    tree = ast.parse(zf.read(prefix + "__init__.py").decode())
    classes = _classes(zf, prefix)
    methods = {name: min_capability(cls, classes) for name, cls in sorted(registry(tree).items())}
    return {"methods": methods, "detected": sorted(detected(classes) - set(methods))}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    bad = [r for r in argv if not re.fullmatch(r"\d+(\.\d+)*", r.lstrip("v"))]
    if bad:
        print(f"error: {bad[0]!r} is not a release; pass versions such as 0.5.23", file=sys.stderr)
        return 2
    data = load(OUT, ABOUT)
    for release in (r.lstrip("v") for r in argv):
        with zipfile.ZipFile(wheel(release)) as zf:
            entry = read(zf)
        store(OUT, data, release, entry)
        print(f"sglang {release}: {len(entry['methods'])} methods, {len(entry['detected'])} detected names", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
