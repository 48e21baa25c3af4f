"""Write advisor/rules/sglang/architectures.json: every architecture name each SGLang release's argument resolution
compares against, with the functions that name it.

    python -m conformance sglang-architectures 0.5.7 0.5.8 ... 0.5.23

Each release's wheel (cached under ~/.cache/tp-advisor/conformance/wheels/, downloaded with ``pip download --no-deps``
when missing) is opened as a zip, never installed or imported, and read with ``ast``:

- the roots are every function and class body of sglang/srt/server_args.py and, from the releases that split the
  resolution into hooks, every module under sglang/srt/arg_groups/ (ServerArgs' post-init and its handlers, the
  model-override registry, the hooks);
- from the roots the reader follows, up to DEPTH (3) calls deep, every call it can resolve inside the wheel: a function or
  class imported from another sglang module (``from sglang.srt.configs.model_config import ModelConfig``, at module or
  function level, relative or absolute), a method called on ``self``/``cls``, and the module-level constants a reached
  function reads (``FA3_ARCHS = [...]`` used in ``if arch in FA3_ARCHS``); a class reached is read whole (ModelConfig's
  hybrid / sliding-window / MLA checks are its methods);
- in what it reaches, every string literal that is an architecture name (``XxxForCausalLM``,
  ``XxxForConditionalGeneration``, any ``...For<Task>``, or ``...LMHeadModel``) is recorded with where it appears:
  ``file:Class.function`` (file relative to sglang/srt/), or ``file:NAME`` for a module-level constant.

What it cannot see is named in docs/architectures.md: calls through an instance attribute (``model_config.is_x()``
resolves only because the class is read whole), names built at run time, and checks keyed on ``model_type`` strings.

The output shows each release's names that the release before it in the stored data lacks (``+``) and those it dropped
(``-``), and with ``--rules`` the names the release's resolution compares against that no list of the advisor's SGLang
rules holds.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from conformance.sglang.flags import wheel

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "sglang" / "architectures.json"
PACKAGE = "sglang/srt/"
ROOT_FILES = ("sglang/srt/server_args.py",)
ROOT_DIRS = ("sglang/srt/arg_groups/",)
DEPTH = 3  # server_args -> ModelConfig -> get_config -> normalize_deepseek_v41_config (v0.5.21+) is 3 calls deep
ARCHITECTURE = re.compile(r"^[A-Z][A-Za-z0-9_]*(?:For[A-Z][A-Za-z0-9]*|LMHeadModel)$")
CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*$")  # what a name listed beside an architecture must look like
ABOUT = ("Every architecture name (config.json architectures[0], e.g. DeepseekV3ForCausalLM) that a SGLang release's "
         "argument resolution compares against, with where each appears: file (relative to python/sglang/srt/) and "
         "function, or the module-level constant holding it. Read from the release's wheel with ast: all of "
         "server_args.py and arg_groups/, and what they call inside sglang up to 3 calls deep. An architecture a "
         "release does not name takes its default path. Written by `python -m conformance sglang-architectures "
         "X.Y.Z ...`; see docs/architectures.md.")  # fmt: skip

Unit = tuple[str, str]  # (module path in the wheel, qualified name)


@dataclass
class Module:
    path: str
    tree: ast.Module
    units: dict[str, ast.AST] = field(default_factory=dict)  # qualname -> function, class or assignment
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local name -> (module, name or None)
    stars: list[str] = field(default_factory=list)  # modules imported with `from m import *`


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


class Wheel:
    """The Python sources of one wheel, parsed on demand."""

    def __init__(self, zf: zipfile.ZipFile, package: str = "sglang/"):
        self.zf = zf
        self.paths = {_module_name(n): n for n in zf.namelist() if n.endswith(".py") and n.startswith(package)}
        self.modules: dict[str, Module | None] = {}

    def module(self, path: str) -> Module | None:
        if path not in self.modules:
            try:
                tree = ast.parse(self.zf.read(path).decode())
            except (SyntaxError, KeyError, UnicodeDecodeError):
                self.modules[path] = None
                return None
            self.modules[path] = _index(path, tree)
        return self.modules[path]

    def resolve(self, module: str, name: str | None, hops: int = 0) -> Unit | None:
        """The unit ``name`` of dotted ``module`` (following re-exports), or None outside the wheel."""
        path = self.paths.get(module)
        if path is None or name is None or hops > 5:
            return None
        found = self.module(path)
        if found is None:
            return None
        if name in found.units:
            return path, name
        if name in found.imports:
            return self.resolve(*found.imports[name], hops + 1)
        # a shim such as hf_transformers_utils: `from sglang.srt.utils.hf_transformers import *`
        for star in found.stars:
            target = self.resolve(star, name, hops + 1)
            if target is not None:
                return target
        return None


def _index(path: str, tree: ast.Module) -> Module:
    found = Module(path, tree)
    package = _module_name(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]

    def add_imports(node: ast.AST) -> None:
        for imp in (n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))):
            if isinstance(imp, ast.ImportFrom):
                base = imp.module or ""
                if imp.level:
                    base = ".".join(package[: len(package) - imp.level + 1] + ([base] if base else []))
                for alias in imp.names:
                    if alias.name == "*":
                        found.stars.append(base)
                    else:
                        found.imports.setdefault(alias.asname or alias.name, (base, alias.name))
            else:
                for alias in imp.names:
                    if alias.asname:
                        found.imports.setdefault(alias.asname, (alias.name, None))

    add_imports(tree)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.units[node.name] = node
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found.units[f"{node.name}.{member.name}"] = member
                    for target in _targets(member):
                        found.units[f"{node.name}.{target}"] = member
        for target in _targets(node):
            found.units[target] = node
    return found


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


@dataclass
class Reading:
    names: dict[str, set[str]] = field(default_factory=dict)  # architecture -> {"file:qualname"}
    units: int = 0  # how many functions, classes and constants were read


def read(
    zf: zipfile.ZipFile,
    roots: tuple[str, ...] = ROOT_FILES,
    root_dirs: tuple[str, ...] = ROOT_DIRS,
    prefix: str = PACKAGE,
) -> Reading:
    """The architecture names the resolution in this wheel compares against: read from the ``roots`` files and every
    module under ``root_dirs``; places are named relative to ``prefix`` (the engine's own package folder)."""
    source = Wheel(zf, prefix.split("/")[0] + "/")

    def _where(path: str, qualname: str) -> str:
        return f"{path.removeprefix(prefix)}:{qualname}"

    queue: deque[tuple[Unit, int]] = deque()  # breadth first: a unit is read at its least depth
    for path in sorted(source.paths.values()):
        if path in roots or path.startswith(root_dirs):
            module = source.module(path)
            if module is not None:
                queue += [((path, q), 0) for q in module.units]
    seen: set[Unit] = set()
    reading = Reading()
    while queue:
        (path, qualname), depth = queue.popleft()
        if (path, qualname) in seen:
            continue
        seen.add((path, qualname))
        module = source.module(path)
        node = module.units[qualname]
        reading.units += 1
        owner = qualname.split(".")[0] if "." in qualname or isinstance(node, ast.ClassDef) else None
        # A class body is read through its members (each its own unit) so every name is placed in its function.
        body: list[ast.AST] = [node]
        if isinstance(node, ast.ClassDef):
            members = (ast.FunctionDef, ast.AsyncFunctionDef)
            body = [n for n in node.body if not isinstance(n, members) and not _targets(n)]
        if isinstance(node, ast.ClassDef):
            queue += [((path, q), depth) for q in module.units if q.startswith(node.name + ".")]
            body += node.decorator_list + node.bases
        for part in body:
            for name in _architecture_names(part):
                reading.names.setdefault(name, set()).add(_where(path, qualname))
            if depth >= DEPTH:
                continue
            for target in _references(part, module, owner, source):
                queue.append((target, depth + 1))
    return reading


# A registry call whose string arguments are architecture names whatever their shape: the model-override registry
# (v0.5.19+ arg_groups/model_override_base.py ``@_register_for("EmbeddingGemma2Model")``).
REGISTRY_CALLS = frozenset({"_register_for"})


def _named_like_architectures(node: ast.AST) -> bool:
    """Whether ``node`` (a comparison's right side or a constant's target) is named as a list of architectures:
    ``model_architectures``, ``architecture_set``, ``hf_config.architectures``, ``_EMBEDDING_ARCHITECTURES``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    # plural only: ``"Llama4" in model_arch`` (v0.5.7-v0.5.10) tests a substring of one name, not a list
    return any(word in name.lower() for word in ("architectures", "archs", "architecture_set"))


def _architecture_names(node: ast.AST) -> set[str]:
    """The architecture names among the string literals under ``node``: those shaped like one, and every string of a
    list, set, tuple, dict's keys or call's arguments that holds one (so "NemotronH_Omni_Reasoning_V3" beside "NemotronHForCausalLM").
    A name of any shape also counts where the code says it is one: tested for membership in something named for
    architectures (``"EmbeddingGemma2Model" in architecture_set``), a key or element of a module constant so named
    (``_EMBEDDING_ARCHITECTURES = {"BertModel": ...}``), or an argument of the override registry's ``_register_for``."""
    found: set[str] = set()
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_named_like_architectures(t) for t in targets) and node.value is not None:
            value = node.value
            elements = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", None) or []
            found.update(
                e.value for e in elements
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and CLASS_NAME.match(e.value)
            )  # fmt: skip
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Compare)
            and isinstance(sub.left, ast.Constant)
            and isinstance(sub.left.value, str)
            and CLASS_NAME.match(sub.left.value)
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in sub.ops)
            and any(_named_like_architectures(c) for c in sub.comparators)
        ):
            found.add(sub.left.value)
        if isinstance(sub, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in sub.ops):
            # hf_config.architectures[0] == "EmbeddingGemma2Model": one entry of an architectures list
            sides = [sub.left, *sub.comparators]
            if any(isinstance(x, ast.Subscript) and _named_like_architectures(x.value) for x in sides):
                found.update(
                    x.value for x in sides
                    if isinstance(x, ast.Constant) and isinstance(x.value, str) and CLASS_NAME.match(x.value)
                )  # fmt: skip
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", getattr(sub.func, "attr", None)) in REGISTRY_CALLS:
            found.update(
                a.value for a in sub.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and CLASS_NAME.match(a.value)
            )  # fmt: skip
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and ARCHITECTURE.match(sub.value):
            found.add(sub.value)
        elements = (
            sub.keys
            if isinstance(sub, ast.Dict)
            else sub.args
            if isinstance(sub, ast.Call)
            else getattr(sub, "elts", None)
        )
        # a call's string arguments count as a list: _register_for("IQuestQ1ForCausalLM", "IQuestQ1MTP")
        if isinstance(sub, (ast.List, ast.Set, ast.Tuple, ast.Dict, ast.Call)) and elements:
            texts = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            spread = sum(isinstance(e, ast.Starred) for e in elements)  # [*OTHER_ARCHS, "A", "B"]: still a name list
            if len(texts) + spread == len(elements) and any(ARCHITECTURE.match(t) for t in texts):
                found.update(t for t in texts if CLASS_NAME.match(t))
    return found


def _references(node: ast.AST, module: Module, owner: str | None, source: Wheel) -> set[Unit]:
    """The units of the wheel this node calls or reads: local and imported names, self/cls methods, module.attr."""
    found: set[Unit] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            if sub.id in module.units:
                found.add((module.path, sub.id))
            elif sub.id in module.imports:
                target = source.resolve(*module.imports[sub.id])
                if target is not None:
                    found.add(target)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            base = sub.value.id
            if base in ("self", "cls") and owner and f"{owner}.{sub.attr}" in module.units:
                found.add((module.path, f"{owner}.{sub.attr}"))
            elif base in module.imports and module.imports[base][1] is None:  # import sglang.srt.x as m; m.f
                target = source.resolve(module.imports[base][0], sub.attr)
                if target is not None:
                    found.add(target)
            elif base in module.imports:  # from sglang.srt import x; x.f (x a submodule)
                imported_module, name = module.imports[base]
                target = source.resolve(f"{imported_module}.{name}", sub.attr)
                if target is not None:
                    found.add(target)
    return found


RULE_MODULES = ("architectures", "attention", "custom_allreduce", "fusion", "memory", "model_config", "moe_runner", "prefill_graph",
                "releases")  # fmt: skip


def rules_architectures() -> set[str]:
    """Every architecture name the advisor's SGLang rules hold: the strings shaped like one (or listed beside one) in
    the module-level constants of advisor/rules/sglang/ (frozensets, tuples, dicts, the release table's rows)."""
    import dataclasses
    import importlib

    found: set[str] = set()

    def walk(value: object, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(value, str):
            if ARCHITECTURE.match(value):
                found.add(value)
        elif isinstance(value, dict):
            for item in (*value.keys(), *value.values()):
                walk(item, depth + 1)
        elif isinstance(value, (tuple, list, set, frozenset)):
            texts = [v for v in value if isinstance(v, str)]
            if texts and len(texts) == len(value) and any(ARCHITECTURE.match(t) for t in texts):
                found.update(t for t in texts if CLASS_NAME.match(t))
            for item in value:
                walk(item, depth + 1)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name), depth + 1)

    for name in RULE_MODULES:
        module = importlib.import_module(f"advisor.rules.sglang.{name}")
        for attr, value in vars(module).items():
            if attr.isupper() or attr.startswith("_") and attr[1:].isupper():
                walk(value)
    return found


def extract(release: str) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel(release)) as zf:
        reading = read(zf)
    return {name: sorted(places) for name, places in sorted(reading.names.items())}


def write(data: dict, out: Path = OUT) -> None:
    """architectures.json, releases in version order, one architecture a line."""
    releases = dict(sorted(data["releases"].items(), key=lambda item: Version(item[0])))
    blocks = []
    for release, names in releases.items():
        lines = ",\n".join(f"   {json.dumps(n)}: {json.dumps(p)}" for n, p in names.items())
        blocks.append(f"  {json.dumps(release)}: {{\n{lines}\n  }}")
    out.write_text(f'{{\n "about": {json.dumps(data["about"])},\n "releases": {{\n' + ",\n".join(blocks) + "\n }\n}\n")


def changes(releases: dict[str, dict[str, list[str]]], release: str) -> tuple[str | None, list[str], list[str]]:
    """(the release before, names added since it, names dropped since it) in the stored data."""
    order = sorted(releases, key=Version)
    before = [r for r in order if Version(r) < Version(release)]
    if not before:
        return None, [], []
    prior, now = set(releases[before[-1]]), set(releases[release])
    return before[-1], sorted(now - prior), sorted(prior - now)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    show_rules = "--rules" in argv
    asked = [r.lstrip("v") for r in argv if not r.startswith("--")]
    bad = [r for r in asked if not re.fullmatch(r"\d+(\.\d+)*", r)]
    if bad:
        print(f"error: {bad[0]!r} is not a release; pass versions such as 0.5.23", file=sys.stderr)
        return 2
    data = json.loads(OUT.read_text()) if OUT.exists() else {"about": ABOUT, "releases": {}}
    data["about"] = ABOUT
    stored = dict(data["releases"])
    for release in asked:
        names = extract(release)
        changed = stored.get(release) is not None and stored[release] != names
        data["releases"][release] = names
        write(data)  # after each release: a later failure keeps the ones done
        prior, added, dropped = changes(data["releases"], release)
        print(f"sglang {release}: {len(names)} architectures" + (f" (vs {prior}: +{len(added)} -{len(dropped)})" if prior else "")
              + (" [changed from the stored data]" if changed else ""), flush=True)  # fmt: skip
        for name in added:
            print(f"  + {name}  ({'; '.join(names[name])})")
        for name in dropped:
            print(f"  - {name}")
        if show_rules:
            missing = sorted(set(names) - rules_architectures())
            print(f"  not in any list of the rules ({len(missing)}): {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
