"""`python -m launcher.runtime`: one worker of the bundled tensor-parallel runtime."""

import sys

try:
    from torch.distributed.elastic.multiprocessing.errors import record

    from launcher.runtime.worker import main
except KeyboardInterrupt:  # Ctrl-C while torch is still being imported: stop quietly with 130, as main() does later
    sys.exit(130)


@record
def entry() -> int:
    try:
        return main()
    except KeyboardInterrupt:  # before main() reaches its own handler (parsing, the torchrun-agent check)
        return 130


if __name__ == "__main__":
    sys.exit(entry())
