"""The command line both coverage harnesses share: run each release named, print its summary, store its golden."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from conformance.coverage.measure import summary, write_golden

Run = Callable[[str, "int | None"], tuple[dict, int, float]]  # release, --limit -> result, scenarios, seconds


def coverage_main(
    argv: list[str], engine: str, example: str, run: Run, harness_error: type[Exception], about: str, doc: str
) -> int:
    """`python -m conformance <engine>-coverage X.Y.Z ...`: 1 when any release failed (the others still run)."""
    parser = argparse.ArgumentParser(prog=f"python -m conformance {engine}-coverage", description=doc.splitlines()[0])
    parser.add_argument("releases", nargs="+", metavar="X.Y.Z", help=f"{engine} releases, e.g. {example}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N scenarios (a quick try; no golden)")
    args = parser.parse_args(argv)
    failed = 0
    for release in (r.lstrip("v") for r in args.releases):
        try:
            result, count, seconds = run(release, args.limit)
        except harness_error as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        where = "(--limit: no golden written)"
        if args.limit is None:
            where = f"-> {write_golden(engine, release, count, result, about)}"
        print(f"{summary(engine, release, result)} over {count} scenarios in {seconds:.0f} s {where}", flush=True)
    return 1 if failed else 0
