"""The resolution functions of one release, found by qualified name in its wheel and followed through what they call.

From the roots (``ServerArgs.__post_init__``, ``EngineArgs.create_engine_config`` ...) the reader follows every call it
can resolve statically (conformance/sglang/architectures.py's reader: imported names, ``self``/``cls`` methods of the
same class, ``module.attr``) into functions of the resolution files (``in_scope``); a class reached counts through its
``__init__``/``__post_init__``. Nothing is imported: the wheel is read as a zip with ``ast``.
"""

from __future__ import annotations

import ast
import zipfile
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from conformance.sglang.architectures import Wheel, _references

CONSTRUCTORS = ("__init__", "__post_init__")


@dataclass(frozen=True)
class Function:
    path: str  # in the wheel, e.g. sglang/srt/server_args.py
    qualname: str  # Class.method or function
    first: int  # the def line
    last: int  # its last line


def resolution_functions(
    zf: zipfile.ZipFile, roots: Iterable[tuple[str, str]], in_scope: Callable[[str], bool], package: str
) -> list[Function]:
    """Every function reachable from ``roots`` ((path, qualname) pairs; a missing root is skipped) through calls into
    files ``in_scope``; sorted by path and line."""
    source = Wheel(zf, package)
    queue = deque(roots)
    seen: set[tuple[str, str]] = set()
    found: list[Function] = []
    while queue:
        path, qualname = queue.popleft()
        if (path, qualname) in seen:
            continue
        seen.add((path, qualname))
        module = source.module(path)
        node = module.units.get(qualname) if module is not None else None
        if isinstance(node, ast.ClassDef):
            queue += [(path, f"{qualname}.{c}") for c in CONSTRUCTORS if f"{qualname}.{c}" in module.units]
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name != qualname.split(".")[-1]:  # a class attribute bound to a function defined elsewhere
            continue
        found.append(Function(path, qualname, node.lineno, node.end_lineno or node.lineno))
        owner = qualname.split(".")[0] if "." in qualname else None
        queue += [target for target in _references(node, module, owner, source) if in_scope(target[0])]
    return sorted(found, key=lambda f: (f.path, f.first))


def module_functions(zf: zipfile.ZipFile, paths: Iterable[str], package: str) -> list[tuple[str, str]]:
    """(path, name) of every top-level function in these files: handlers a registry dispatches by name at run time
    (SGLang's model_overrides/), which no static call reaches."""
    source = Wheel(zf, package)
    out = []
    for path in paths:
        module = source.module(path)
        if module is None:
            continue
        out += [(path, n.name) for n in module.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out
