"""The `advisor` console script and `python -m advisor`: advisor.fastpath.main, with `advisor check` ended early.

`advisor check` is a short-lived command meant to be called from scripts (tests/benchmarks/bench_check.py). For it:
- the cyclic garbage collector is off: its passes over the freshly built data model cost more than they would free;
- once the click-free path (advisor.fastpath) has written and flushed its output, the process ends with os._exit:
  the interpreter's teardown (freeing every module and object) costs about a sixth of the command.
The output and the exit code are the same bytes and number either way (tests/test_entry.py). Every other command line
(the app, `launch`, anything click runs) exits the ordinary way, with its atexit handlers and the collector on.
"""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    checking = sys.argv[1:2] == ["check"]
    if checking:
        gc.disable()
    from advisor.fastpath import main as advisor_main

    try:
        advisor_main()
    except SystemExit as exc:
        if checking and "click" not in sys.modules:  # the fast path ran: nothing registered for the exit
            end_now(exc.code)
        raise


def end_now(code: object) -> None:
    """os._exit(code) once stdout and stderr are flushed; returns (and the exit goes the ordinary way, which reports
    the failure as it always has) when a stream cannot be flushed or the code is not a number."""
    if code is None:
        code = 0
    if not isinstance(code, int) or not 0 <= code <= 255:  # sys.exit("message") prints it: the interpreter's job
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
