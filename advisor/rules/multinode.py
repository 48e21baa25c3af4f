"""What a scheduler's job file (advisor/schedulers/) needs to know about an engine release on several nodes.

    Engine.multinode(version) -> MultiNode   (None on the Engine: it has no multi-node job)

Each engine's package answers for its releases (advisor/rules/<engine>/multinode.py): the container image it publishes,
the port and health path of its HTTP server, what makes the server reachable from other hosts, how much shared memory a
container needs, and the release's own multi-node arguments (which the engine's command builder already places: the
scheduler only fills in the head address and the node rank).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MultiNode:
    image: str | None  # the engine's official container image for the release; None: it publishes none
    http_port: int  # the port its HTTP server listens on by default
    port_flag: str | None  # the flag that sets that port; None: the job leaves the port to the engine
    health_path: str  # the HTTP path that answers 200 once it serves
    # Arguments the head's server needs to be reachable from other hosts (SGLang listens on 127.0.0.1 by default).
    listen: tuple[str, ...]
    shm_size: str  # the /dev/shm a container needs (Kubernetes quantity, e.g. "32Gi")
    # The interpreter a job names on the nodes (found on PATH there) when --python is not given; None: the engine
    # starts through its own console script there (vLLM's `vllm`).
    python: str | None
    source: str  # where these facts come from (the engine's own multi-node and container guides)
    # The command that installs it on a node (SkyPilot's setup); None: the engine's install_hint for the release.
    install: str | None = None
