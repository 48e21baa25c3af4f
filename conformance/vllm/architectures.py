"""Write advisor/rules/vllm/architectures.json: every architecture name each vLLM release's engine-config resolution
compares against, and every name its model registry lists, with where each appears.

    python -m conformance vllm-architectures 0.12.0 0.33.0

The same ast reader as SGLang's (conformance/sglang/architectures.py; docs/architectures.md) over the release's wheel
(cached under ~/.cache/tp-advisor/conformance/wheels/, ``pip download --no-deps`` when missing), never installed: the
roots are vllm/config/ (VllmConfig.__post_init__, ModelConfig, CacheConfig, CompilationConfig ...),
vllm/engine/arg_utils.py (EngineArgs.create_engine_config) and the CUDA platform (vllm/platforms/cuda.py and
interface.py: check_and_update_config, the attention backend choice); from them the reader follows resolvable calls three
deep, which reaches vllm/model_executor/models/registry.py (the registry's tables) and models/config.py
(MODELS_CONFIG_MAP: the per-architecture config fix-ups). Places are relative to vllm/.

The same command writes model_kinds.json beside it: per release the model types is_deepseek_mla lists, and the
registry's architectures whose class is hybrid or attention-free. advisor/rules/vllm/architectures.py reads both (the
registry's names, the breakable-CUDA-graph list, MLA, hybrid); docs/architectures.md says what each decides.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from conformance.sglang.architectures import changes, read, write
from conformance.sglang.flags import WHEELS

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "architectures.json"
ROOTS = ("vllm/engine/arg_utils.py", "vllm/platforms/cuda.py", "vllm/platforms/interface.py")
ROOT_DIRS = ("vllm/config/",)
REGISTRY = "model_executor/models/registry.py:"
ABOUT = ("Every architecture name (config.json architectures[0]) a vLLM release's engine-config resolution compares "
         "against or its model registry lists, with where each appears (file under vllm/, function or constant). Read "
         "from the release's wheel with ast: vllm/config/, engine/arg_utils.py, platforms/cuda.py and interface.py, "
         "and what they call inside vllm up to 3 calls deep. Written by `python -m conformance vllm-architectures "
         "X.Y.Z ...`; see docs/architectures.md.")  # fmt: skip


def wheel(release: str) -> Path:
    found = sorted(WHEELS.glob(f"vllm-{release}-*.whl"))
    if not found:
        WHEELS.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                               "--no-deps", "--only-binary", ":all:", f"vllm=={release}", "-d", str(WHEELS)],
                              capture_output=True, text=True)  # fmt: skip
        found = sorted(WHEELS.glob(f"vllm-{release}-*.whl"))
        if done.returncode or not found:
            raise SystemExit(f"error: cannot download vllm=={release}; pass a released version (e.g. 0.33.0)")
    return found[0]


REGISTRY_MODULE = "vllm/model_executor/models/registry.py"


def registry_tables(zf: zipfile.ZipFile) -> dict[str, set[str]]:
    """Every key of the registry's module-level ``_..._MODELS`` tables -> the tables naming it, keys of a dict spread
    into a table (``**{...}``, v0.33.0's multimodal embedding models) included: the general reader keeps a dict's keys
    only when all of them are strings, and a spread's key is None."""
    out: dict[str, set[str]] = {}

    def keys(node: ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None and isinstance(value, ast.Dict):
                yield from keys(value)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value

    for node in ast.parse(zf.read(REGISTRY_MODULE)).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id.endswith("_MODELS") and isinstance(value, ast.Dict):
            for name in keys(value):
                out.setdefault(name, set()).add(f"{REGISTRY}{target.id}")
    return out


VLLM_CONFIG_MODULE = "vllm/config/vllm.py"
BREAKABLE_ENV = "VLLM_USE_BREAKABLE_CUDAGRAPH"
# v0.25.1 to v0.28.0 list the breakable-CUDA-graph architectures inline in VllmConfig.__post_init__ (v0.29.0 names the
# constant DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES): the tuple of the ``if`` that tests the environment variable.
BREAKABLE_INLINE = "config/vllm.py:VllmConfig.__post_init__:breakable_cudagraph"


def breakable_inline(zf: zipfile.ZipFile) -> set[str]:
    """The architectures of the inline breakable-CUDA-graph tuple (empty where the release has none)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(zf.read(VLLM_CONFIG_MODULE))):
        if not isinstance(node, ast.If):
            continue
        strings = {c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if BREAKABLE_ENV not in strings:
            continue
        for tup in ast.walk(node.test):
            if isinstance(tup, ast.Tuple) and tup.elts and all(isinstance(e, ast.Constant) for e in tup.elts):
                out.update(e.value for e in tup.elts if isinstance(e.value, str))
    return out


def with_registry_keys(names: dict[str, set[str]], zf: zipfile.ZipFile) -> dict[str, list[str]]:
    """``names`` with the registry's tables as their keys say: the general reader also takes the class names of a
    table's values (("exaone_moe", "ExaoneMoeForCausalLM") under the key "ExaoneMoEForCausalLM"), which vLLM does not
    serve by that name."""
    out = {n: {p for p in places if not (p.startswith(REGISTRY) and p.endswith("_MODELS"))} for n, places in names.items()}
    for name, places in registry_tables(zf).items():
        out.setdefault(name, set()).update(places)
    for name in breakable_inline(zf):
        out.setdefault(name, set()).add(BREAKABLE_INLINE)
    return {name: sorted(places) for name, places in sorted(out.items()) if places}


def extract(release: str) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel(release)) as zf:
        reading = read(zf, roots=ROOTS, root_dirs=ROOT_DIRS, prefix="vllm/")
        return with_registry_keys(reading.names, zf)


MLA_OUT = OUT.with_name("model_kinds.json")
MLA_FILES = ("vllm/transformers_utils/model_arch_config_convertor.py", "vllm/config/model.py")
MLA_ABOUT = ("Per vLLM release: mla_model_types, the config model_type values it treats as MLA when the config has a "
             "kv_lora_rank (the first list of is_deepseek_mla: vllm/config/model.py ModelConfig.is_deepseek_mla, from "
             "the releases that have it vllm/transformers_utils/model_arch_config_convertor.py); hybrid and "
             "attention_free, the registry's architectures whose model class derives from IsHybrid / IsAttentionFree "
             "(vllm/model_executor/models/interfaces.py; ModelConfig.is_hybrid / is_attention_free read them through "
             "the registry's inspection); pooling (is_pooling_model), generative (compute_logits: "
             "is_text_generation_model) and pooling_unchunked (CLS / MEAN / STEP pooling or encoder-only attention "
             "declared by the class, vllm/model_executor/models/interfaces_base.py). Read from the wheel with ast by "
             "`python -m conformance vllm-architectures "
             "X.Y.Z ...`; see docs/architectures.md.")  # fmt: skip
MODELS_DIR = "vllm/model_executor/models/"
OTHER_MODELS_DIR = "vllm/models/"
KINDS = {"hybrid": "IsHybrid", "attention_free": "IsAttentionFree"}


def mla_model_types(release: str) -> list[str]:
    """The model types of the release's is_deepseek_mla (the first collection of strings it tests model_type against)."""
    with zipfile.ZipFile(wheel(release)) as zf:
        present = set(zf.namelist())
        for name in MLA_FILES:
            if name not in present:
                continue
            for node in ast.walk(ast.parse(zf.read(name))):
                if isinstance(node, ast.FunctionDef) and node.name == "is_deepseek_mla":
                    for inner in ast.walk(node):
                        if (
                            isinstance(inner, (ast.Tuple, ast.List, ast.Set))
                            and inner.elts
                            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in inner.elts)
                        ):
                            return sorted(e.value for e in inner.elts)
    raise SystemExit(f"error: vllm {release}: no is_deepseek_mla found in {', '.join(MLA_FILES)}")


def _base_name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


# What a pooling model's class declares (vllm/model_executor/models/interfaces_base.py): is_pooling_model, the
# @default_pooling_type(seq_pooling_type=, tok_pooling_type=) and @attn_type(...) decorators, or the same class
# attributes; a class inherits them from its bases.
POOLING_ATTRIBUTES = ("is_pooling_model", "default_seq_pooling_type", "default_tok_pooling_type", "attn_type",
                      "default_pooling_type")  # fmt: skip
DECORATOR_ATTRIBUTES = {"seq_pooling_type": "default_seq_pooling_type", "tok_pooling_type": "default_tok_pooling_type"}
# The pooling types with which ModelConfig.is_chunked_prefill_supported / is_prefix_caching_supported (vllm/config/
# model.py) turn both off: a whole-sequence pool (CLS, MEAN) or a step pool, and bidirectional attention.
UNCHUNKED_SEQ, UNCHUNKED_TOK = ("CLS", "MEAN"), ("STEP",)
# v0.12.0 has one pooling type, @default_pooling_type("CLS") (default LAST), and turns both off for ALL, MEAN, STEP and
# CLS (CLS makes the attention encoder-only).
UNCHUNKED_SINGLE = ("ALL", "MEAN", "STEP", "CLS")
# is_text_generation_model (interfaces_base.py): the class has a callable compute_logits. A registry class that is
# neither generative nor pooling (Gemma3TextModel's Gemma3Model, ModernBertModel) takes the runner its name's suffix
# names (ModelConfig._get_default_runner_type) and is converted (as_embedding_model), keeping its pooling declarations.
GENERATIVE_METHOD = "compute_logits"


def _declared(node: ast.ClassDef) -> dict[str, object]:
    """The pooling attributes a class body or its decorators set, and compute_logits when the body defines it."""
    out: dict[str, object] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == GENERATIVE_METHOD:
            out[GENERATIVE_METHOD] = True
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else getattr(stmt, "target", None)
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and target.id in POOLING_ATTRIBUTES and isinstance(value, ast.Constant):
            out[target.id] = value.value
    for deco in node.decorator_list:
        if not isinstance(deco, ast.Call):
            continue
        name = _base_name(deco.func)
        if name == "default_pooling_type":
            if deco.args and isinstance(deco.args[0], ast.Constant):  # v0.12.0: one positional pooling type
                out["default_pooling_type"] = deco.args[0].value
            for kw in deco.keywords:
                if kw.arg in DECORATOR_ATTRIBUTES and isinstance(kw.value, ast.Constant):
                    out[DECORATOR_ATTRIBUTES[kw.arg]] = kw.value.value
        elif name == "attn_type" and deco.args and isinstance(deco.args[0], ast.Constant):
            out["attn_type"] = deco.args[0].value
    return out


def model_kinds(release: str) -> dict[str, list[str]]:
    """kind -> the registry's architectures whose class derives (through classes of the models package) from it; and
    pooling (the class is a pooling model), generative (it has compute_logits) and pooling_unchunked (a class whose
    pooling or bidirectional attention rules out chunked prefill and prefix caching when it runs as a pooling model,
    declared on a pooling class or on a plain one vLLM converts)."""
    bases: dict[str, set[str]] = {}  # "module.Class" and "Class" -> base class names
    declared: dict[str, dict[str, object]] = {}  # "module.Class" and "Class" -> the pooling attributes it sets
    registry: dict[str, tuple[str, str]] = {}
    with zipfile.ZipFile(wheel(release)) as zf:
        for name in zf.namelist():
            # model classes live in vllm/model_executor/models/ and, from v0.27.1, some in vllm/models/ (the registry
            # names those by absolute module; the bare class name finds them)
            if not (name.startswith((MODELS_DIR, OTHER_MODELS_DIR)) and name.endswith(".py")):
                continue
            module = name[len(MODELS_DIR) : -3].replace("/", ".") if name.startswith(MODELS_DIR) else name[:-3].replace("/", ".")
            tree = ast.parse(zf.read(name))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    found = {b for b in map(_base_name, node.bases) if b}
                    bases[f"{module}.{node.name}"] = found
                    bases.setdefault(node.name, set()).update(found)
                    declared[f"{module}.{node.name}"] = _declared(node)
                    declared.setdefault(node.name, _declared(node))
                if module == "registry" and isinstance(node, ast.Dict):
                    for key, value in zip(node.keys, node.values, strict=True):
                        if (
                            isinstance(key, ast.Constant)
                            and isinstance(key.value, str)
                            and isinstance(value, ast.Tuple)
                            and len(value.elts) == 2
                            and all(isinstance(e, ast.Constant) for e in value.elts)
                        ):
                            registry[key.value] = (value.elts[0].value, value.elts[1].value)

    def derives(cls: str, kind: str, seen: frozenset[str] = frozenset()) -> bool:
        direct = bases.get(cls, set())
        return kind in direct or any(derives(b, kind, seen | {cls}) for b in direct if b not in seen and b != cls)

    def attribute(cls: str, name: str, seen: frozenset[str] = frozenset()) -> object:
        """The attribute as the class has it: its own declaration, else its first base's that declares it."""
        if name in declared.get(cls, {}):
            return declared[cls][name]
        for base in sorted(bases.get(cls, set())):
            if base not in seen and base != cls:
                found = attribute(base, name, seen | {cls})
                if found is not None:
                    return found
        return None

    def attr(arch: str, name: str) -> object:
        module, cls = registry[arch]
        found = attribute(f"{module}.{cls}", name)
        return found if found is not None else attribute(cls, name)

    kinds = {kind: sorted(arch for arch, (module, cls) in registry.items()
                          if derives(f"{module}.{cls}", interface) or derives(cls, interface))
             for kind, interface in KINDS.items()}  # fmt: skip
    pooling = sorted(arch for arch in registry if attr(arch, "is_pooling_model") is True)
    kinds["pooling"] = pooling
    kinds["generative"] = sorted(arch for arch in registry if attr(arch, GENERATIVE_METHOD) is True)
    kinds["pooling_unchunked"] = [arch for arch in sorted(registry)
                                  if attr(arch, "default_seq_pooling_type") in UNCHUNKED_SEQ
                                  or attr(arch, "default_tok_pooling_type") in UNCHUNKED_TOK
                                  or attr(arch, "default_pooling_type") in UNCHUNKED_SINGLE
                                  or attr(arch, "attn_type") == "encoder_only"]  # fmt: skip
    return kinds


def write_mla(release: str) -> None:
    data = json.loads(MLA_OUT.read_text()) if MLA_OUT.exists() else {"about": MLA_ABOUT, "releases": {}}
    data["about"] = MLA_ABOUT
    data["releases"][release] = {"mla_model_types": mla_model_types(release), **model_kinds(release)}
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda item: [int(x) for x in item[0].split(".")]))
    MLA_OUT.write_text(json.dumps(data, indent=1) + "\n")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    bad = [r for r in argv if not re.fullmatch(r"v?\d+(\.\d+)*", r)]
    if bad:
        print(f"error: {bad[0]!r} is not a release; pass versions such as 0.33.0", file=sys.stderr)
        return 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"about": ABOUT, "releases": {}}
    data["about"] = ABOUT
    for release in (r.lstrip("v") for r in argv):
        names = extract(release)
        write_mla(release)
        data["releases"][release] = names
        write(data, OUT)
        decided = sorted(n for n, places in names.items() if any(not p.startswith(REGISTRY) for p in places))
        prior, added, dropped = changes(data["releases"], release)
        print(f"vllm {release}: {len(names)} architectures, {len(decided)} outside the registry's tables"
              + (f" (vs {prior}: +{len(added)} -{len(dropped)})" if prior else ""), flush=True)  # fmt: skip
        for name in added:
            print(f"  + {name}")
        for name in dropped:
            print(f"  - {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
