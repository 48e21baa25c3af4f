"""How the `advisor` command reports a failure: one `error:` line on stderr and an exit code. Both the click CLI
(advisor.cli) and its click-free `check` (advisor.fastpath) report this way, so the two paths print the same bytes."""

from __future__ import annotations

import os
import sys


def one_line(message: str) -> str:
    return " ".join(message.split())


def fail(message: str, code: int) -> None:
    """``error: MESSAGE`` on stderr (one line, control characters escaped: file names and texts may hold them); exit."""
    from advisor.sanitize import clean

    sys.stderr.write(f"error: {clean(one_line(message), newlines=False)}\n")
    sys.stderr.flush()
    sys.exit(code)


def output_failed(exc: OSError) -> None:
    """An OSError that reached the top. From writing stdout (`advisor check | head`: the reader left; `> /dev/full`:
    no space): say nothing for a closed pipe, one line otherwise, and point stdout at /dev/null so that Python's final
    flush stays quiet. Anything else: one line naming it."""
    import errno

    writing = exc.filename is None and exc.errno in (errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
    if not writing:
        fail(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), 1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if exc.errno == errno.EPIPE:
        sys.exit(1)
    fail(f"cannot write the output ({exc.strerror or exc}); free some space or write it elsewhere", 1)
