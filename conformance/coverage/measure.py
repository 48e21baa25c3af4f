"""Branch coverage of the resolution functions, from coverage.py's JSON report of one grid run, as a golden.

A branch is an arc coverage.py counts as one (from a line with more than one way on, to the line taken; a negative
``to`` leaves the function). Each function's branches are those whose ``from`` line lies inside it; a file the run never
imported has all of them missing. Each uncovered branch is kept with its source line and the headers of the ``if`` /
``for`` / ``while`` / ``try`` / ``with`` blocks around it inside the function (outermost first) and the line it goes to
(``target``), so a branch nested in
an untaken ``if is_hip():`` can be sorted under the reason of that guard (docs.py).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from conformance.coverage.functions import Function

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "golden"
BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)


@dataclass
class FileReport:
    executed: list[tuple[int, int]] = field(default_factory=list)
    missing: list[tuple[int, int]] = field(default_factory=list)


def read_report(report: dict, root: Path) -> dict[str, FileReport]:
    """coverage.py's JSON report keyed by path relative to ``root`` (the folder the package was imported from)."""
    out: dict[str, FileReport] = {}
    for name, data in report["files"].items():
        path = Path(name)
        rel = path.relative_to(root).as_posix() if path.is_absolute() else name
        out[rel] = FileReport(
            [tuple(b) for b in data.get("executed_branches", [])], [tuple(b) for b in data.get("missing_branches", [])]
        )
    return out


def _headers(tree: ast.AST, source: list[str]) -> dict[int, list[str]]:
    """Line -> the block headers enclosing it (outermost first, the line's own block excluded)."""
    out: dict[int, list[str]] = {}

    def walk(node: ast.AST, stack: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            line = getattr(child, "lineno", None)
            if line is not None:
                for n in range(line, (getattr(child, "end_lineno", None) or line) + 1):
                    out.setdefault(n, list(stack))
            if isinstance(child, BLOCKS):
                header = source[child.lineno - 1].strip()
                inner = stack + [header]
                for n in range(child.lineno + 1, (child.end_lineno or child.lineno) + 1):
                    out[n] = list(inner)
                walk(child, inner)
            else:
                walk(child, stack)

    walk(tree, [])
    return out


def measure(functions: list[Function], files: dict[str, FileReport], sources: dict[str, str]) -> dict:
    """Per function (branches, taken) and every uncovered branch of the resolution functions."""
    per_function = []
    uncovered = []
    for path in sorted({f.path for f in functions}):
        text = sources[path]
        lines = text.splitlines()
        headers = _headers(ast.parse(text), lines)
        report = files.get(path)
        if report is None:  # never imported: every branch missing; coverage.py's own analysis gives the arcs
            raise ValueError(f"{path} is not in the coverage report; pass it to `coverage json` explicitly")
        for function in (f for f in functions if f.path == path):
            first, last = function.first, function.last
            taken = [a for a in report.executed if first <= a[0] <= last]
            missed = sorted(a for a in report.missing if first <= a[0] <= last)
            per_function.append({"file": path, "function": function.qualname, "line": function.first,
                                 "branches": len(taken) + len(missed), "taken": len(taken)})  # fmt: skip
            for start, end in missed:
                guards = [h for h in headers.get(start, []) if h != lines[start - 1].strip()]
                uncovered.append({"file": path, "function": function.qualname, "from": start,
                                  "to": end if end > 0 else "exit", "source": lines[start - 1].strip()[:160],
                                  "target": lines[end - 1].strip()[:160] if end > 0 else "",
                                  "context": [g[:160] for g in guards]})  # fmt: skip
    total = sum(f["branches"] for f in per_function)
    taken = sum(f["taken"] for f in per_function)
    return {
        "totals": {
            "functions": len(per_function),
            "branches": total,
            "taken": taken,
            "percent": round(100 * taken / total, 1) if total else 100.0,
        },  # fmt: skip
        "functions": per_function,
        "uncovered": uncovered,
    }


def golden_path(engine: str, release: str) -> Path:
    return GOLDEN / f"{engine}-coverage-{release}.json"


def write_golden(engine: str, release: str, scenarios: int, result: dict, about: str) -> Path:
    """One JSON object; each function and each uncovered branch on a line of its own, so diffs stay readable."""
    path = golden_path(engine, release)
    head = {"engine": engine, "release": release, "about": about, "scenarios": scenarios, "totals": result["totals"]}
    parts = [json.dumps(head)[:-1]]
    parts.append(',\n "functions": [\n  ' + ",\n  ".join(json.dumps(f) for f in result["functions"]) + "\n ]")
    parts.append(',\n "uncovered": [\n  ' + ",\n  ".join(json.dumps(u) for u in result["uncovered"]) + "\n ]\n}\n")
    path.write_text("".join(parts))
    return path


def summary(engine: str, release: str, result: dict) -> str:
    t = result["totals"]
    return (f"{engine} {release}: {t['functions']} functions, {t['taken']}/{t['branches']} branches taken "
            f"({t['percent']}%), {t['branches'] - t['taken']} uncovered")  # fmt: skip
