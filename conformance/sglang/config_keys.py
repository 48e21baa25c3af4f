"""Write advisor/rules/sglang/config_keys.json: per release, the architectures whose config SGLang reads as MLA, with the
config key each one also needs.

    python -m conformance sglang-config-keys 0.5.7 0.5.8 ... 0.5.23

SGLang does not decide MLA from the config's ``kv_lora_rank`` alone: ``ModelConfig._derive_model_shapes``
(configs/model_config.py) sets ``attention_arch = AttentionArch.MLA`` in the branches of an if/elif chain keyed on
``architectures``; a few of those names also need a config key (Pixtral and Bailing's NextN draft: ``kv_lora_rank``;
DeepSeek-VL2: ``use_mla``, true when absent). Every other architecture, an unnamed one with MLA fields included, is
MHA there and takes the MHA default attention backend. The wheel (cached, or downloaded with ``pip download``) is read
with ``ast``, never imported: each branch whose body assigns ``AttentionArch.MLA`` gives the architecture strings its
test compares with ``in ...architectures``, and, for a name tested together with a ``getattr(config, KEY, ...)``, that
key (``KEY`` with its default when the getattr gives one).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path

from packaging.version import Version

from conformance.sglang.flags import wheel

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "config_keys.json"
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
ABOUT = ("Per SGLang release: mla, the architectures (config.json architectures[0]) whose config "
         "configs/model_config.py ModelConfig._derive_model_shapes reads as MLA (AttentionArch.MLA), each with the "
         "config key it also needs (null: none; 'use_mla=true': that key, true when absent). Any other architecture is "
         "MHA there, whatever its kv_lora_rank. multimodal: is_multimodal_model's list (multimodal_model_archs); "
         "multimodal_off: ModelConfig.__init__'s mm_disabled_models (multimodal off unless --enable-multimodal). Written by `python -m conformance sglang-config-keys X.Y.Z ...`; see "
         "docs/architectures.md.")  # fmt: skip


def _sets_mla(body: list[ast.stmt]) -> bool:
    return any("AttentionArch.MLA" in ast.unparse(stmt) and isinstance(stmt, ast.Assign) for stmt in body)


def _operands(test: ast.expr) -> list[ast.expr]:
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]


def _names(node: ast.AST) -> list[str]:
    """The string constants compared with ``in ...architectures`` under ``node``."""
    out = []
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Compare) and isinstance(sub.left, ast.Constant) and isinstance(sub.left.value, str)
                and any(isinstance(op, ast.In) for op in sub.ops) and "architectures" in ast.unparse(sub.comparators[0])):  # fmt: skip
            out.append(sub.left.value)
    return out


def _needed_key(node: ast.AST) -> str | None:
    """The config key a getattr under ``node`` reads (``KEY=default`` when it gives a constant default)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "getattr" and len(sub.args) >= 2:
            key = sub.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                default = sub.args[2] if len(sub.args) > 2 else None
                if isinstance(default, ast.Constant) and default.value not in (None,):
                    return f"{key.value}={json.dumps(default.value)}"
                return key.value
    return None


def mla_architectures(source: str) -> dict[str, str | None]:
    """{architecture: the config key it also needs, or None} from model_config.py's text."""
    tree = ast.parse(source)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_derive_model_shapes")
    found: dict[str, str | None] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.If) or not _sets_mla(node.body):
            continue
        for operand in _operands(node.test):
            names = _names(operand)
            key = _needed_key(operand) if isinstance(operand, ast.BoolOp) or len(_operands(node.test)) == 1 else None
            for name in names:
                found.setdefault(name, key)
    return dict(sorted(found.items()))


def _string_list(node: ast.AST | None) -> list[str]:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def assigned_list(source: str, name: str) -> list[str] | None:
    """The strings of the list assigned to ``name`` anywhere in the module (module constant or local); None if none."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return sorted(_string_list(node.value))
    return None


def extract(release: str) -> dict:
    with zipfile.ZipFile(wheel(release)) as zf:
        source = zf.read(MODEL_CONFIG).decode()
    return {
        "mla": mla_architectures(source),
        # is_multimodal_model's list, and the architectures whose multimodal part is off unless --enable-multimodal
        "multimodal": assigned_list(source, "multimodal_model_archs") or [],
        "multimodal_off": assigned_list(source, "mm_disabled_models") or [],
    }


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    bad = [r for r in argv if not re.fullmatch(r"v?\d+(\.\d+)*", r)]
    if bad:
        print(f"error: {bad[0]!r} is not a release; pass versions such as 0.5.23", file=sys.stderr)
        return 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"releases": {}}
    data["about"] = ABOUT
    for release in (r.lstrip("v") for r in argv):
        data["releases"][release] = extract(release)
        found = data["releases"][release]
        print(f"sglang {release}: {len(found['mla'])} MLA, {len(found['multimodal'])} multimodal, "
              f"{len(found['multimodal_off'])} multimodal-off architectures", flush=True)  # fmt: skip
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda item: Version(item[0])))
    OUT.write_text(json.dumps({"about": data["about"], "releases": data["releases"]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
