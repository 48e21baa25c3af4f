"""A multi-node plan as a scheduler sees it: what every node runs, with the head address and the node rank left as
placeholders, and what the nodes need (GPUs, image, shared memory, network variables).

The argv comes from the engine's own builder (``Engine.command_line``, the same one `advisor launch --dry-run` prints),
called once per node with a placeholder head address; the nodes after the head must differ only in their rank, which
becomes a placeholder too (checked for every rank, so a builder that does more per node is refused, not guessed at).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from advisor.rules import registry
from advisor.rules.engine import DEFAULT_RDZV_PORT, flag_value
from advisor.rules.problem import EngineCommandError
from advisor.sanitize import clean

if TYPE_CHECKING:
    from advisor.plan import Plan
    from advisor.rules.engine import Engine
    from advisor.rules.multinode import MultiNode

# Placeholders in the argv templates; each target writes them as its scheduler names them ($SLURM_NODEID,
# $(LWS_WORKER_INDEX), $SKYPILOT_NODE_RANK ...). A host name that no real plan uses.
HEAD = "tp-advisor-head-node"
RANK = "<node-rank>"
# Interface variables NCCL and gloo (torch.distributed) read to pick the network interface between nodes.
INTERFACE_VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


class JobError(ValueError):
    """The plan cannot become a job for this target; the message is one line naming the fix."""


@dataclass(frozen=True, slots=True)
class JobSettings:
    python: str | None = None  # the interpreter on the nodes that has the engine (default: the engine's own choice)
    image: str | None = None  # a container image instead of the engine's official one
    interface: str | None = None  # the network interface between the nodes (NCCL/GLOO_SOCKET_IFNAME)
    rdma: bool = False  # the pods use RDMA (Kubernetes: IPC_LOCK)
    name: str | None = None  # the job's name (default: from the engine and the model)


@dataclass(frozen=True, slots=True)
class Job:
    name: str  # a DNS-1123 label: usable as a SLURM job name, a Kubernetes object name, a SkyPilot task name
    engine: Engine
    version: str | None  # the engine release every node must run (None: the bundled runtime, the advisor's own)
    model: str
    tp: int
    nnodes: int
    gpus_per_node: int
    gpu_name: str | None  # the GPU the plan was made for ("NVIDIA H100 80GB HBM3")
    head: tuple[str, ...]  # node 0's argv (HEAD where the head address goes)
    worker: tuple[str, ...]  # every other node's argv (RANK where its rank goes)
    http_port: int
    multinode: MultiNode
    image: str | None
    python: str  # the interpreter the pre-flight checks run with on the nodes
    preflight: tuple[str, ...]  # `advisor check --strict` for this plan, run on every node before the engine
    env: dict[str, str] = field(default_factory=dict)
    rdma: bool = False
    install: str = ""  # the command that installs the engine release (SkyPilot's setup)

    def summary(self, unit: str = "nodes") -> str:
        """What the job runs, for the file's header comment: one line whatever the model's name holds (a newline or a
        control character there would end a shell comment, or make a YAML file unreadable)."""
        release = f" {self.version}" if self.version else ""
        text = (f"{self.engine.name}{release}, {self.model}, tp {self.tp} over {self.nnodes} {unit} of"
                f" {self.gpus_per_node} GPU(s)")  # fmt: skip
        return one_line(text)


def one_line(text: str) -> str:
    """``text`` with every line break and control character shown as an escape (advisor.sanitize.clean), the Unicode
    line and paragraph separators too (YAML ends a comment at them)."""
    return clean(text, newlines=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def make_job(plan: Plan, settings: JobSettings, *, needs_image: bool = False) -> Job:
    """The job for ``plan``; raises JobError for a plan a job cannot start."""
    engine = registry.get(plan.intent.engine)
    if engine.multinode is None:
        raise JobError(f"{engine.name} has no multi-node job; choose --engine {' or '.join(_engines_with_jobs())}")
    version = (plan.engine or {}).get("version") if engine.releases else None
    multinode = engine.multinode(version)
    # A pod needs an image (the engine's official one by default); SLURM and SkyPilot use one only when asked.
    image = settings.image or (multinode.image if needs_image else None)
    if needs_image and not image:
        raise JobError(f"{engine.title or engine.name} has no official container image; pass --image IMAGE")
    port = _http_port(plan, multinode)
    head, worker = _templates(plan, engine, multinode, settings.python, port)
    python = settings.python or "python3"
    env = {name: settings.interface for name in INTERFACE_VARIABLES} if settings.interface else {}
    model = plan.intent.model or (plan.model.id if plan.model is not None else None) or "demo"
    return Job(
        name=settings.name or _name(engine.name, model),
        engine=engine,
        version=version,
        model=model,
        tp=plan.intent.tp,
        nnodes=max(1, plan.intent.nnodes),
        gpus_per_node=plan.intent.gpus_per_node,
        gpu_name=next((g.name for g in plan.facts.engine_gpus if g.name), None),
        head=head,
        worker=worker,
        http_port=port,
        multinode=multinode,
        image=image,
        python=python,
        preflight=_preflight(plan, settings.python),
        env=env,
        rdma=settings.rdma,
        install=multinode.install or (engine.install_hint(version) if version else ""),
    )


def _engines_with_jobs() -> list[str]:
    return [name for name in registry.names() if registry.get(name).multinode is not None]


def _http_port(plan: Plan, multinode: MultiNode) -> int:
    """The user's --port after -- when given (the engine serves there), else the engine's default."""
    given = flag_value(plan.intent.overrides, multinode.port_flag) if multinode.port_flag else None
    if given is None:
        return multinode.http_port
    if not given.isdigit() or not 0 < int(given) < 65536:
        raise JobError(f"{multinode.port_flag} {given!r} is not a TCP port; pass a number from 1 to 65535 after --")
    return int(given)


def _templates(
    plan: Plan, engine: Engine, multinode: MultiNode, python: str | None, port: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(head argv, worker argv) from the engine's builder, the head's made reachable from other hosts."""
    nnodes = max(1, plan.intent.nnodes)
    if nnodes < 2:
        raise JobError(
            "a scheduler job is for a plan over several nodes; pass --nnodes 2 or more (and a --tp they split)"
        )
    # The nodes are other machines: the engine is named as it is there (on PATH), not by this machine's paths.
    remote = replace(plan, facts=replace(plan.facts, source="job"))
    python = python or multinode.python
    address = f"{HEAD}:{DEFAULT_RDZV_PORT}"
    try:
        argvs = [engine.command_line(remote, python=python, node_rank=r, dist_init_addr=address) for r in range(nnodes)]
    except EngineCommandError as exc:
        raise JobError(str(exc)) from None
    head = list(argvs[0])
    overrides = plan.intent.overrides
    for flag, value in zip(multinode.listen[::2], multinode.listen[1::2], strict=True):
        if flag_value(overrides, flag) is None:
            head += [flag, value]
    if multinode.port_flag and flag_value(overrides, multinode.port_flag) is None:
        head += [multinode.port_flag, str(port)]
    return tuple(head), _worker_template(argvs)


def _worker_template(argvs: list[list[str]]) -> tuple[str, ...]:
    """The argv of nodes 1..N-1 with RANK where the rank goes, from every node's argv (node 0 first): a position holds
    the rank when each node's token there is its own rank. JobError unless the other nodes differ only there."""
    workers = argvs[1:]
    ranked = {i for i in range(len(workers[0]))
              if all(len(argv) <= i or argv[i] == str(rank) for rank, argv in enumerate(argvs))}  # fmt: skip
    template = tuple(RANK if i in ranked else token for i, token in enumerate(workers[0]))
    for rank, argv in enumerate(workers, start=1):
        if [str(rank) if t == RANK else t for t in template] != argv:
            raise JobError(f"node {rank}'s command differs from the others by more than its rank; start it by hand"
                           " with `advisor launch --node-rank N`")  # fmt: skip
    return template


def _preflight(plan: Plan, python: str | None) -> tuple[str, ...]:
    """`advisor check --strict` for this plan as each node sees itself (live facts), with the same engine release."""
    intent = plan.intent
    argv = [
        "advisor",
        "check",
        "--strict",
        "--engine",
        intent.engine,
        "--tp",
        str(intent.tp),
        "--nnodes",
        str(intent.nnodes),
    ]
    version = (plan.engine or {}).get("version")
    if version and registry.get(intent.engine).releases:
        argv += ["--engine-version", version]
    if intent.model:
        argv += ["--model", intent.model]
    if intent.dp_size != 1:
        argv += ["--dp-size", str(intent.dp_size)]
    if intent.dp_attention:
        argv += ["--dp-attention"]
    if intent.moe_a2a_backend and intent.moe_a2a_backend != "none":
        argv += ["--moe-a2a-backend", intent.moe_a2a_backend]
    if intent.dtype:
        argv += ["--dtype", intent.dtype]
    if python:
        argv += ["--python", python]
    if intent.overrides:
        argv += ["--", *intent.overrides]
    return tuple(argv)


def _name(engine: str, model: str) -> str:
    """``sglang-deepseek-v3``: lower case, dashes, at most 50 characters (room for the suffixes schedulers add)."""
    stem = re.sub(r"[^a-z0-9]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-")
    return f"{engine}-{stem}"[:50].rstrip("-") or engine
