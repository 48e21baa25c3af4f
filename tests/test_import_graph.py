"""No import cycle between the project's modules, counting imports inside functions (lazy imports) and under
``if TYPE_CHECKING:`` too; and the launcher below the advisor: nothing under launcher/ imports an advisor module.

The graph: one node per module of the project's packages (advisor, launcher, conformance; a package is its __init__).
An edge A -> B for every ``import B`` / ``from B import x`` / ``from P import B`` (B a module) anywhere in A: at module
level, in functions, in try blocks, under ``if TYPE_CHECKING:`` (an annotation naming another module's type ties the
two modules together as much as a call does). So a package's __init__ importing a submodule that imports the package
back is a cycle; a submodule must import its siblings, not names re-exported by its own package's __init__.

Not edges, by this rule:
- the implicit import of parent packages (importing ``advisor.rules.sglang.engine`` runs ``advisor/rules/sglang/__init__``
  first; counting it would make every package with submodules a cycle);
- modules named by a string (advisor.rules.registry's engine table, advisor.cli's LAZY_COMMANDS): plug-in tables that
  name what they load, as entry points do.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("advisor", "launcher", "conformance")


def project_modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, whether it is a package's __init__)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def imports_of(name: str, path: Path, is_package: bool, modules: dict) -> set[str]:
    """The project modules ``name`` imports, anywhere in its code (module level and inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None when the graph is acyclic (depth-first search, three colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_project_import_graph_is_acyclic():
    graph = import_graph()
    assert len(graph) > 100 and graph["advisor.plan"], "the graph must see the project's modules and their imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_launcher_imports_nothing_of_the_advisor():
    """launcher/ knows processes, environments, files and signals and takes an argv: turning a Plan into one is the
    advisor's (advisor/rules/<engine>/command.py), so no launcher module imports an advisor one, type-checking included."""
    graph = import_graph()
    upward = {name: sorted(t for t in targets if t.split(".")[0] == "advisor")
              for name, targets in graph.items() if name.split(".")[0] == "launcher"}  # fmt: skip
    assert len(upward) > 10, "the graph must see the launcher's modules"
    assert {name: targets for name, targets in upward.items() if targets} == {}


def test_lazy_relative_and_type_checking_imports_are_edges(tmp_path):
    """The parser sees function-level and TYPE_CHECKING imports and resolves relative ones; the cycle finder reports a
    cycle."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.a import A\n")
    (package / "a.py").write_text("A = 1\n\ndef f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\nimport pkg.a\n")
    (package / "c.py").write_text("def g():\n    from .b import x\n")
    modules = {"pkg": (package / "__init__.py", True), **{f"pkg.{m}": (package / f"{m}.py", False) for m in "abc"}}
    graph = {name: imports_of(name, path, is_pkg, modules) for name, (path, is_pkg) in modules.items()}
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a", "pkg.c"}, "pkg.c": {"pkg.b"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None
