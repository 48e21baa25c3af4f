"""`python -m launcher.runtime`: one worker of the bundled tensor-parallel runtime."""

import os
import signal
import sys


def _stop_while_importing(signum: int, frame: object) -> None:
    # Ctrl-C while torch is still being imported: nothing is open yet, so leave at once with 130. Raising
    # KeyboardInterrupt here instead can land inside an extension module's initialisation (numpy's) and come back
    # as an ImportError traceback ("cannot load module more than once per process").
    os._exit(130)


signal.signal(signal.SIGINT, _stop_while_importing)
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402

from launcher.runtime.worker import main  # noqa: E402

signal.signal(signal.SIGINT, signal.default_int_handler)


@record
def entry() -> int:
    try:
        return main()
    except KeyboardInterrupt:  # before main() reaches its own handler (parsing, the torchrun-agent check)
        return 130


if __name__ == "__main__":
    code = entry()
    # Leave without Python's finalisation: by now the process group is destroyed and every file is closed, but
    # torch's distributed objects can still hold a joinable C++ thread when the interpreter tears them down, and
    # that aborts the process ("terminate called without an active exception") after a clean SIGTERM shutdown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)
