"""The cyclic garbage collector during the app's start-up.

The app's start-up (Textual's modules, the widgets, their styles, the first plan) builds what lives as long as the app:
the collector's passes over it free nothing and took about a tenth of the time to the first screen
(tests/benchmarks/bench_tui.py). advisor.interactive.open_app pauses it before the app's modules are imported; the app
(advisor.tui.app) resumes it once its first screen is done, or when it ends or fails to start first.
"""

from __future__ import annotations

import gc

_paused = False  # True while pause_collector() holds the collector off


def pause_collector() -> None:
    """Switch the collector off until resume_collector(); one that is already off (its owner's choice, e.g. a test
    harness) is left alone."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Switch the collector back on if pause_collector() switched it off; otherwise nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
