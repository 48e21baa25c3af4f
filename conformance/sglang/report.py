"""``python -m conformance report [--write-known]``: per-release, per-field agreement of the advisor with the SGLang goldens
("-": the release's golden does not record that field).

--write-known rewrites tests/conformance/sglang_known_disagreements.json with today's disagreements of the main and
configs grids (after a rule fix, or after new goldens): the test asserts that set exactly, so every change in agreement
is a visible diff. The named grid's (every architecture a release names, with transformers' default config) go to
sglang_named_known_disagreements.json, which also holds, per architecture, why it is not modelled; an architecture
without a reason is written with "reason needed", which the test refuses.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from conformance.sglang.compare import FIELDS, GRIDS, disagreements, golden_releases, recorded

KNOWN = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "sglang_known_disagreements.json"
NAMED_KNOWN = KNOWN.with_name("sglang_named_known_disagreements.json")
REASON_NEEDED = "reason needed"


def scenario_architecture(sid: str) -> str:
    """The architecture of a named-grid scenario id (gpu/named-<architecture>/tp.../...)."""
    return sid.split("/")[1].removeprefix("named-")


def load_named_known() -> tuple[set[tuple[str, str, str]], dict[str, str]]:
    """The named grid's known set and the reason per architecture."""
    if not NAMED_KNOWN.exists():
        return set(), {}
    data = json.loads(NAMED_KNOWN.read_text())
    found = {(release, sid, field) for release, by_field in data["releases"].items()
             for field, ids in by_field.items() for sid in ids}  # fmt: skip
    return found, dict(data["reasons"])


def dump_named_known(found: set[tuple[str, str, str]], reasons: dict[str, str]) -> str:
    releases = json.loads(dump_known(found))
    archs = sorted({scenario_architecture(sid) for _, sid, _ in found})
    kept = {arch: reasons.get(arch, REASON_NEEDED) for arch in archs}
    return json.dumps({"reasons": kept, "releases": releases}, indent=1, sort_keys=True) + "\n"


def load_known() -> set[tuple[str, str, str]]:
    """The known set, stored as {release: {field: [scenario ids]}}."""
    if not KNOWN.exists():
        return set()
    data = json.loads(KNOWN.read_text())
    return {(release, sid, field) for release, by_field in data.items() for field, ids in by_field.items() for sid in ids}


def dump_known(found: set[tuple[str, str, str]]) -> str:
    data: dict[str, dict[str, list[str]]] = {}
    for release, sid, field in sorted(found):
        data.setdefault(release, {}).setdefault(field, []).append(sid)
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance report", description=__doc__.splitlines()[0])
    parser.add_argument("--write-known", action="store_true", help=f"rewrite {KNOWN.name} with today's disagreements")
    args = parser.parse_args(argv)
    if not golden_releases():
        print("error: no goldens in tests/conformance/golden/; run python -m conformance sglang X.Y.Z first")
        return 1
    everything: set[tuple[str, str, str]] = set()
    named: set[tuple[str, str, str]] = set()
    for grid in GRIDS:
        if golden_releases(grid):
            found = _table(grid)
            if grid == "named":
                named |= found
            else:
                everything |= found
    if args.write_known:
        KNOWN.write_text(dump_known(everything))
        print(f"wrote {len(everything)} known disagreements to {KNOWN}")
        NAMED_KNOWN.write_text(dump_named_known(named, load_named_known()[1]))
        print(f"wrote {len(named)} known disagreements of the named grid to {NAMED_KNOWN}")
    return 0


def _table(grid: str) -> set[tuple[str, str, str]]:
    """Print one grid's agreement table; its disagreements."""
    everything: set[tuple[str, str, str]] = set()
    print(f"\n{grid} grid\n\n| release | scenarios (rejected) | " + " | ".join(FIELDS) + " |")
    print("|---|---|" + "---|" * len(FIELDS))
    totals = dict.fromkeys(FIELDS, 0)
    counted = dict.fromkeys(FIELDS, 0)  # scenarios whose golden records the field
    all_compared = 0
    for release in golden_releases(grid):
        found, compared, rejected = disagreements(release, grid)
        everything |= found
        all_compared += compared
        cells = []
        has = recorded(release, grid)
        for field in FIELDS:
            bad = sum(1 for _, _, f in found if f == field)
            totals[field] += bad
            counted[field] += compared if field in has else 0
            cells.append(f"{100 * (compared - bad) / compared:.1f}%" if compared and field in has else "-")
        print(f"| {release} | {compared} ({rejected}) | " + " | ".join(cells) + " |")
    overall = [f"{100 * (counted[f] - totals[f]) / counted[f]:.1f}%" if counted[f] else "-" for f in FIELDS]
    print(f"| all | {all_compared} | " + " | ".join(overall) + " |")
    return everything
