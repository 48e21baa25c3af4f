"""The app headless (Textual Pilot) on this machine: it probes, evaluates a plan and shows the machine tab.

usage: python tests/gpu/tui_smoke.py [--expect-gpu]
Prints one JSON line (GPU names the app saw, plan or error, the machine tab's no-driver callout); exit 0 when the plan
was evaluated (and, with --expect-gpu, the app saw a GPU and shows no "no driver" callout), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from advisor.context import Options
from advisor.tui.app import AdvisorApp


async def smoke(timeout: float = 60.0) -> dict:
    app = AdvisorApp(Options())
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + timeout
        await pilot.pause()
        while app.main.busy or app.main.evaluation is None:
            if time.monotonic() > deadline:
                return {"ok": False, "error": "the plan was not evaluated in time"}
            await pilot.pause(0.05)
        evaluation = app.main.evaluation
        await pilot.press("m")  # the machine tab
        await pilot.pause()
        facts = evaluation.facts
        plan = evaluation.plan
        return {
            "gpus": [g.name for g in facts.gpus] if facts else [],
            "driver": facts.driver.version if facts else None,
            "plan": None if plan is None else {"engine": plan.intent.engine, "tp": plan.intent.tp,
                                               "decisions": [d.id for d in plan.decisions]},
            "error": evaluation.error,
            "no_driver_callout_shown": bool(app.main.query_one("#no-driver").display),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect-gpu", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(smoke())
    ok = result.get("plan") is not None
    if args.expect_gpu:
        ok = ok and bool(result.get("gpus")) and not result.get("no_driver_callout_shown")
    result["ok"] = ok
    print(json.dumps(result), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
