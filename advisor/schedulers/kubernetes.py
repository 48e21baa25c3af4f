"""Kubernetes: a LeaderWorkerSet (one group of N pods: the leader is node 0, the workers 1..N-1) plus a Service for the
leader's HTTP port.

LeaderWorkerSet (kubernetes-sigs/lws, API leaderworkerset.x-k8s.io/v1) gives every pod of a group
LWS_LEADER_ADDRESS (the leader's DNS name) and LWS_WORKER_INDEX (0 for the leader) and labels the pods with
``leaderworkerset.sigs.k8s.io/name``; ``restartPolicy: RecreateGroupOnPodRestart`` restarts the whole group when one
pod fails (api/leaderworkerset/v1/leaderworkerset_types.go). Kubernetes expands ``$(VAR)`` in a container's command
from its environment, so the engine's argv runs without a shell. Sources: LWS's docs/examples/sglang and
docs/examples/vllm, SGLang's deploy_on_k8s.md, vLLM's docs/deployment/frameworks/lws.md.
"""

from __future__ import annotations

from typing import Any

from advisor import __version__
from advisor.schedulers.job import HEAD, RANK, Job
from advisor.schedulers.yaml_text import dump

NEEDS_IMAGE = True  # a pod runs an image
TOOL = ("kubectl", "apply", "-f")
API_VERSION = "leaderworkerset.x-k8s.io/v1"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
RESTART_GROUP = "RecreateGroupOnPodRestart"
LEADER_ADDRESS = "LWS_LEADER_ADDRESS"
WORKER_INDEX = "LWS_WORKER_INDEX"
GPU_RESOURCE = "nvidia.com/gpu"  # NVIDIA's device plugin


def render(job: Job) -> str:
    header = (f"Written by tp-advisor {__version__}: {job.summary('pods')}.\n"
              "Needs the LeaderWorkerSet controller (https://lws.sigs.k8s.io). Apply with: kubectl apply -f FILE")  # fmt: skip
    return dump([leader_worker_set(job), service(job)], header=header)


def leader_worker_set(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": job.name},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": job.nnodes,
                "restartPolicy": RESTART_GROUP,
                "leaderTemplate": {"metadata": {"labels": {"role": "leader"}}, "spec": _pod(job, leader=True)},
                "workerTemplate": {"metadata": {"labels": {"role": "worker"}}, "spec": _pod(job, leader=False)},
            },
        },
    }


def service(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{job.name}-leader"},
        "spec": {
            "selector": {NAME_LABEL: job.name, "role": "leader"},
            "ports": [{"name": "http", "protocol": "TCP", "port": job.http_port, "targetPort": job.http_port}],
        },
    }


def _argv(argv: tuple[str, ...]) -> list[str]:
    """The placeholders as Kubernetes expands them in a command."""
    return [t.replace(HEAD, f"$({LEADER_ADDRESS})").replace(RANK, f"$({WORKER_INDEX})") for t in argv]


def _pod(job: Job, *, leader: bool) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "leader" if leader else "worker",
        "image": job.image,
        "command": _argv(job.head if leader else job.worker),
        "resources": {"limits": {GPU_RESOURCE: job.gpus_per_node}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if job.env:
        container["env"] = [{"name": name, "value": value} for name, value in job.env.items()]
    if job.rdma:
        # RDMA registers (pins) memory; the RDMA device itself comes from the cluster's own device plugin.
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if leader:
        container["ports"] = [{"name": "http", "containerPort": job.http_port, "protocol": "TCP"}]
        container["readinessProbe"] = {
            "httpGet": {"path": job.multinode.health_path, "port": job.http_port},
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "failureThreshold": 3,
        }
    shm = {"medium": "Memory", "sizeLimit": job.multinode.shm_size}  # the engine's NCCL and IPC buffers live there
    return {"containers": [container], "volumes": [{"name": "dshm", "emptyDir": shm}]}
