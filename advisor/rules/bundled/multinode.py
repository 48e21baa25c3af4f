"""The bundled runtime on several nodes: torchrun's own c10d rendezvous (``--nnodes N --node-rank R --rdzv-endpoint
HEAD:PORT``, placed by bundled/command.py) runs it; the nodes need tp-advisor with its ``runtime`` extra. It publishes
no image, and its server listens on the loopback only at port 30000 (launcher/runtime/serve/server.py), so a job's
server answers on the head node itself; ``/health`` answers once it serves (launcher/runtime/serve/app.py).
"""

from __future__ import annotations

from advisor import __version__
from advisor.rules.multinode import MultiNode

HTTP_PORT = 30000


def multinode(version: str | None) -> MultiNode:
    return MultiNode(
        image=None,
        http_port=HTTP_PORT,
        port_flag=None,  # --port exists in serve mode only; the runtime's default is kept
        health_path="/health",
        listen=(),
        shm_size="8Gi",
        python="python3",
        source="launcher/runtime/serve/server.py; torchrun's c10d rendezvous (torch.distributed.run)",
        install=f"pip install 'tp-advisor[runtime]=={__version__}'",  # the runtime ships with this advisor
    )
