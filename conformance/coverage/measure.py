"""Branch coverage of the resolution functions, from coverage.py's JSON report of one grid run, as a golden.

A branch is an arc coverage.py counts as one (from a line with more than one way on, to the line taken; a negative
``to`` leaves the function). Each function's branches are those whose ``from`` line lies inside it; a file the run never
imported has all of them missing. Each uncovered branch is kept with its source line and the headers of the ``if`` /
``for`` / ``while`` / ``try`` / ``with`` blocks around it inside the function (outermost first) and the line it goes to
(``target``), so a branch nested in an untaken ``if is_hip():`` can be sorted under the reason of that guard (docs.py).
A header written over several lines (``if (`` ... ``):``) is kept whole, on one line.
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


def _header_end(node: ast.AST) -> int:
    """The last line of a block's header: a condition written over several lines ends on its closing parenthesis."""
    part = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.AsyncFor: "iter", ast.Match: "subject"}
    expr = getattr(node, part.get(type(node), ""), None)
    if isinstance(node, (ast.With, ast.AsyncWith)) and node.items:
        expr = node.items[-1].context_expr
    return getattr(expr, "end_lineno", None) or node.lineno


def _header_text(node: ast.AST, source: list[str]) -> str:
    """A block's header on one line (``if (`` alone says nothing; the whole condition does)."""
    end = _header_end(node)
    last = min(len(source), end + 3)
    while end < last and not source[end - 1].rstrip().endswith(":"):  # the closing "):" line
        end += 1
    text = " ".join(line.strip() for line in source[node.lineno - 1 : end])
    return text.replace("( ", "(").replace(" )", ")")


def headers_by_line(tree: ast.AST, source: list[str]) -> dict[int, str]:
    """First line of each block -> its whole header (for the branch's own source line)."""
    return {n.lineno: _header_text(n, source) for n in ast.walk(tree) if isinstance(n, BLOCKS)}


def _headers(tree: ast.AST, source: list[str]) -> dict[int, list[str]]:
    """Line -> the block headers enclosing it (outermost first, the line's own block excluded), each whole. The ``else``
    / ``elif`` part of an ``if`` is not under that ``if``'s header: it runs when the condition is false, so an
    ``elif is_hip():`` does not guard the ``elif`` after it."""
    out: dict[int, list[str]] = {}

    def mark(node: ast.AST, stack: list[str], first: int | None = None) -> None:
        for n in range(first or node.lineno, (getattr(node, "end_lineno", None) or node.lineno) + 1):
            out[n] = list(stack)

    def visit(child: ast.AST, stack: list[str]) -> None:
        if getattr(child, "lineno", None) is None:
            walk(child, stack)
            return
        for n in range(child.lineno, (getattr(child, "end_lineno", None) or child.lineno) + 1):
            out.setdefault(n, list(stack))
        if not isinstance(child, BLOCKS):
            walk(child, stack)
            return
        inner = stack + [_header_text(child, source)]
        mark(child, inner, child.lineno + 1)
        if isinstance(child, ast.If):
            for statement in child.orelse:
                mark(statement, stack)
            for statement in child.body:
                visit(statement, inner)
            for statement in child.orelse:
                visit(statement, stack)
        else:
            walk(child, inner)

    def walk(node: ast.AST, stack: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            visit(child, stack)

    walk(tree, [])
    return out


def _describe(start: int, end: int, lines: list[str], headers: dict[int, list[str]], own: dict[int, str]) -> dict:
    """A branch's source (its whole header), the line it goes to and the headers of the blocks around it."""
    header = own.get(start, lines[start - 1].strip())
    guards = [h for h in headers.get(start, []) if h != header]
    return {"source": header[:240], "target": lines[end - 1].strip()[:160] if end > 0 else "",
            "context": [g[:240] for g in guards]}  # fmt: skip


def redescribe(golden: dict, root: Path) -> dict:
    """The golden with each uncovered branch's source, target and context read again from the release's files under
    ``root`` (the measured arcs unchanged): a golden stored before a change of how a branch is described."""
    texts: dict[str, tuple[list[str], dict, dict]] = {}
    uncovered = []
    for branch in golden["uncovered"]:
        if branch["file"] not in texts:
            text = (root / branch["file"]).read_text()
            tree = ast.parse(text)
            lines = text.splitlines()
            texts[branch["file"]] = (lines, _headers(tree, lines), headers_by_line(tree, lines))
        end = branch["to"] if isinstance(branch["to"], int) else -1
        uncovered.append({**branch, **_describe(branch["from"], end, *texts[branch["file"]])})
    return {**golden, "uncovered": uncovered}


def measure(functions: list[Function], files: dict[str, FileReport], sources: dict[str, str]) -> dict:
    """Per function (branches, taken) and every uncovered branch of the resolution functions."""
    per_function = []
    uncovered = []
    for path in sorted({f.path for f in functions}):
        text = sources[path]
        lines = text.splitlines()
        tree = ast.parse(text)
        headers, own = _headers(tree, lines), headers_by_line(tree, lines)
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
                uncovered.append({"file": path, "function": function.qualname, "from": start,
                                  "to": end if end > 0 else "exit", **_describe(start, end, lines, headers, own)})  # fmt: skip
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


def rewrite_golden(golden: dict) -> Path:
    """Store a golden again as write_golden lays it out."""
    result = {"totals": golden["totals"], "functions": golden["functions"], "uncovered": golden["uncovered"]}
    return write_golden(golden["engine"], golden["release"], golden["scenarios"], result, golden["about"])


def summary(engine: str, release: str, result: dict) -> str:
    t = result["totals"]
    return (f"{engine} {release}: {t['functions']} functions, {t['taken']}/{t['branches']} branches taken "
            f"({t['percent']}%), {t['branches'] - t['taken']} uncovered")  # fmt: skip
