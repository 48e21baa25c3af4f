"""SGLang on several nodes: what advisor/schedulers/ puts around the per-node command of sglang/command.py.

Every modelled release (v0.5.7 to v0.5.23) takes ``--dist-init-addr HOST:PORT --nnodes N --node-rank R`` on every node
(cli_flags.json, the release's own parser; tests/test_schedulers.py holds this to it). The server listens on
``--host`` 127.0.0.1 at ``--port`` 30000 by default (python/sglang/srt/server_args.py, ServerArgs.host/port), so the head
of a job passes ``--host 0.0.0.0``; ``/health`` answers once it serves (python/sglang/srt/entrypoints/http_server.py).
The official image is ``lmsysorg/sglang`` tagged ``v<release>`` (SGLang's docker/ and docs/get_started/install.md); the
install guide runs it with ``--shm-size 32g``.
"""

from __future__ import annotations

from advisor.rules.multinode import MultiNode

IMAGE = "lmsysorg/sglang:v{version}"
HTTP_PORT = 30000
# The multi-node arguments every modelled release has (advisor/rules/sglang/cli_flags.json).
MULTINODE_FLAGS = ("--dist-init-addr", "--nnodes", "--node-rank")


def multinode(version: str | None) -> MultiNode:
    return MultiNode(
        image=IMAGE.format(version=version) if version else None,
        http_port=HTTP_PORT,
        port_flag="--port",
        health_path="/health",
        listen=("--host", "0.0.0.0"),
        shm_size="32Gi",
        python="python3",
        source="SGLang docs/references/multi_node_deployment (multi_node.md, deploy_on_k8s.md); server_args.py",
    )
