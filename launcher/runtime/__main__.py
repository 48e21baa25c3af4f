"""`python -m launcher.runtime`: one worker of the bundled tensor-parallel runtime."""

import sys

from torch.distributed.elastic.multiprocessing.errors import record

from launcher.runtime.worker import main


@record
def entry() -> int:
    return main()


if __name__ == "__main__":
    sys.exit(entry())
