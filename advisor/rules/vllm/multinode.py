"""vLLM on several nodes: what advisor/schedulers/ puts around the per-node command of vllm/command.py.

From v0.11.1 ``vllm serve`` starts several nodes itself with its multiprocessing executor: ``--nnodes``,
``--node-rank``, ``--master-addr`` and ``--master-port`` (EngineArgs' parallel group in vllm/engine/arg_utils.py, read
from the v0.11.0, v0.11.1, v0.12.0 and v0.33.0 wheels: v0.11.0 has none of them) with ``--headless`` on the nodes other
than 0 (vllm/entrypoints/cli/serve.py, run_headless). Every modelled release (v0.12.0 on) has them; an older version
would need a Ray cluster instead, which the advisor does not build: the command builder (vllm/command.py) refuses a
multi-node plan for it, naming the fix.
The server listens on every interface at port 8000 by default (vllm/entrypoints/openai/cli_args.py); ``/health``
answers once it serves. The official image is ``vllm/vllm-openai`` tagged ``v<release>``
(docs/deployment/docker.md); LeaderWorkerSet's vLLM example gives it a 15Gi memory-backed /dev/shm.
"""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.multinode import MultiNode

IMAGE = "vllm/vllm-openai:v{version}"
HTTP_PORT = 8000
NATIVE_MULTINODE_FROM = "0.11.1"  # the first release whose `vllm serve` has --nnodes/--node-rank/--master-addr


def native_multinode_error(version: str | None) -> str | None:
    """Why ``version`` cannot start on several nodes with its own arguments (naming the fix), or None."""
    if not version or rules.parse_release(version) >= rules.parse_release(NATIVE_MULTINODE_FROM):
        return None
    return (f"vllm {version} has no --nnodes/--node-rank (first in v{NATIVE_MULTINODE_FROM}); it needs a Ray cluster,"
            f" which the advisor does not build; pass --engine-version {NATIVE_MULTINODE_FROM} or newer")  # fmt: skip


def multinode(version: str | None) -> MultiNode:
    return MultiNode(
        image=IMAGE.format(version=version) if version else None,
        http_port=HTTP_PORT,
        port_flag="--port",
        health_path="/health",
        listen=(),
        shm_size="15Gi",
        python=None,
        source="vLLM docs/serving/parallelism_scaling.md, docs/deployment/frameworks/lws.md; vllm/engine/arg_utils.py",
    )
