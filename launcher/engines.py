"""Plan -> argv: the exact command line each engine is started with (a list, never a shell string).

    command_for(plan, *, mode=None, extra=(), python=None, node_rank=0, dist_init_addr=None) -> list[str]
    commands_for_nodes(plan, *, mode=None, extra=(), python=None, dist_init_addr=None) -> list[list[str]]

Each engine's command is built by the builder its registry entry names (advisor.rules.registry; the engine's
``command``); command_for applies what every engine shares (the node rank, the rendezvous address) and calls it.
The builders of the engines that ship with tp-advisor:
- ``bundled``: torchrun (``python -m torch.distributed.run``) running ``-m launcher.runtime`` on every rank. One node:
  ``--standalone``; several nodes: a c10d rendezvous at ``dist_init_addr`` with ``--node-rank i``. The run directory's
  ``--log-dir``/``--tee`` flags are added by ``launcher.spawn`` (it owns the run directory), not here.
- ``sglang``: ``python -m sglang.launch_server --model-path M --tp-size N ...``. Release-specific flag names (e.g.
  ``--enable-flashinfer-allreduce-fusion`` up to v0.5.13, ``--flashinfer-allreduce-fusion-backend auto`` from v0.5.14)
  are already resolved by the rules into ``plan.flags``; this module only places them.
- ``vllm``: ``vllm serve M --tensor-parallel-size N ...``, the model positional, as ``vllm serve`` takes it in every
  modelled release (v0.12.0 to v0.33.0: ``model_tag`` in vllm/entrypoints/openai/cli_args.py, later
  vllm/entrypoints/{launchers,common}/cli_args.py; the other flags are EngineArgs fields, vllm/engine/arg_utils.py).
  ``vllm`` is the console script of the interpreter's environment (beside it in ``bin/``), else the same entry point
  through that interpreter (``python -m vllm.entrypoints.cli.main serve``); a plan for another machine (simulated or
  saved facts, no ``python``) says plain ``vllm``.

Order of the tail, for every engine: the plan's resolved flags, then the user's explicit overrides
(``plan.intent.overrides``), then ``extra`` (per-launch arguments such as ``--prompt``), so a later flag wins in engines
whose parsers let the last occurrence win.

Cheap to import: no torch; of advisor only the registry, when a command is built (advisor.plan for type checking).
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import TYPE_CHECKING

from launcher.runtime import contract

if TYPE_CHECKING:
    import re
    from collections.abc import Sequence

    from advisor.facts import Facts
    from advisor.plan import Plan

RUNTIME_MODULE = "launcher.runtime"
TORCHRUN_MODULE = "torch.distributed.run"
# What vLLM's `vllm` console script runs (entry_points.txt of every release from v0.12.0 to v0.33.0).
VLLM_PROGRAM = "vllm"
VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"
DEFAULT_RDZV_PORT = 29500
DEMO_MODEL = "demo"
# The bundled runtime's modes, KV-cache defaults and dtypes: its contract (launcher/runtime/contract.py).
RUNTIME_MODES = contract.MODES
RUNTIME_MAX_BATCH_SIZE = contract.MAX_BATCH_SIZE
RUNTIME_MAX_MODEL_LEN = contract.MAX_MODEL_LEN
RUNTIME_DTYPES = contract.DTYPES
# --dtype values each engine accepts. SGLang: python/sglang/srt/server_args.py, `--dtype` choices; vLLM: vllm/config
# (ModelDType), the same names.
ENGINE_DTYPES = {
    "bundled": RUNTIME_DTYPES,
    "sglang": ("auto", "half", "float16", "bfloat16", "float", "float32"),
    "vllm": ("auto", "half", "float16", "bfloat16", "float", "float32"),
}
# SGLang's --moe-a2a-backend names (python/sglang/srt/server_args.py, MOE_A2A_BACKEND_CHOICES, every name up to
# v0.5.17's list). Anything else is refused before it reaches an engine's command line.
MOE_A2A_BACKENDS = ("none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "megamoe")

# What installs each engine: one home for the hint in `advisor check`'s warning and in `advisor launch`'s refusal.
RUNTIME_EXTRA = "runtime"
DISTRIBUTION = "tp-advisor"
# The CPU build of torch, for a machine without an NVIDIA driver: installed before the runtime extra, which would
# otherwise fetch the multi-GB CUDA build (PyTorch's own install selector gives this index for CPU).
CPU_TORCH_INSTALL = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
# The modules the bundled runtime imports (the `runtime` extra of pyproject.toml); the server adds SERVE_MODULES.
RUNTIME_MODULES = ("torch", "safetensors", "tokenizers")
SERVE_MODULES = ("fastapi", "uvicorn", "jinja2", "prometheus_client")


class ReadySignal:
    """A line an engine prints once it accepts requests (`launcher.spawn` marks the run ready on the first one).

    A plain class: a dataclass or NamedTuple would import dataclasses or typing, which `advisor check` pays for."""

    __slots__ = ("from_ranks", "prefix", "url_pattern")

    def __init__(self, prefix: str, url_pattern: str, from_ranks: bool) -> None:
        # Text, made a pattern by re (and cached there) on first use: `advisor check` imports this module but matches
        # no log line, and importing re costs it (bench_check.py).
        self.prefix = prefix  # the words before the URL, as printed (a whole word first)
        self.url_pattern = url_pattern  # the URL: group 1
        self.from_ranks = from_ranks  # True: a worker rank prints it; False: only the engine's main process

    @property
    def regex(self) -> str:
        import re

        return r"\b" + re.escape(self.prefix) + self.url_pattern

    @property
    def pattern(self) -> re.Pattern[str]:
        import re

        return re.compile(self.regex)

    def __repr__(self) -> str:
        return f"ReadySignal(pattern={self.pattern!r}, from_ranks={self.from_ranks!r})"

    def url(self, text: str, rank: int | None) -> str | None:
        """The URL when ``text`` (from ``rank``, None for the main process) is this signal, else None."""
        if rank is not None and not self.from_ranks:
            return None
        match = self.pattern.search(text)
        return match.group(1) if match else None


# The bundled runtime's serving rank prints "ready: URL" (launcher/runtime/serve/server.py).
RUNTIME_READY = ReadySignal(contract.READY_PREFIX, r"(https?://\S+)", from_ranks=True)
# SGLang and vLLM serve through uvicorn, which logs "Uvicorn running on URL" once it accepts connections.
UVICORN_READY = ReadySignal("Uvicorn running on ", r"(https?://[^\s)]+)", from_ranks=False)
READY_SIGNALS = {"bundled": (RUNTIME_READY,), "sglang": (UVICORN_READY,), "vllm": (UVICORN_READY,)}


def ready_signals(engine: str | None = None) -> tuple[ReadySignal, ...]:
    """How ``engine`` says it is ready; every engine's signals when the engine is not known (None or another name)."""
    if engine in READY_SIGNALS:
        return READY_SIGNALS[engine]
    return tuple(dict.fromkeys(signal for signals in READY_SIGNALS.values() for signal in signals))


def install_command(engine: str, version: str | None = None) -> str:
    """The pip command that installs ``engine`` ("bundled", "sglang", "vllm"), pinned to ``version`` when given.

    SGLang's and vLLM's install pages (docs/get_started/install.md in each repository) install the plain package
    name; the bundled runtime's dependencies are the ``runtime`` extra of tp-advisor, installed from where this
    tp-advisor came from (see runtime_extra_source)."""
    if engine == "bundled":
        source, editable = runtime_extra_source()
        return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{source}[{RUNTIME_EXTRA}]')}"
    return f"pip install '{engine}=={version}'" if version else f"pip install {engine}"


def runtime_install_commands(facts: Facts, torch_missing: bool) -> list[str]:
    """The commands that install the bundled runtime on the machine ``facts`` describe, in order: the CPU build of torch
    first when torch is missing on a live machine without GPUs, then the runtime extra."""
    extra = install_command("bundled")
    cpu_torch = torch_missing and facts.source == "live" and not facts.gpus
    return [CPU_TORCH_INSTALL, extra] if cpu_torch else [extra]


def runtime_extra_source() -> tuple[str, bool]:
    """(what pip installs the extra from, whether editable): the source directory this tp-advisor was installed from
    (a clone's `pip install -e .`, recorded in its direct_url.json, PEP 610), since the package index's tp-advisor may
    be another release or absent; else the distribution's name."""
    import importlib.metadata
    import json
    from urllib.parse import unquote, urlparse

    try:
        record = json.loads(importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return DISTRIBUTION, False
    url = urlparse(record.get("url", "")) if isinstance(record, dict) else None
    if url is None or url.scheme != "file" or not isinstance(record.get("dir_info"), dict):
        return DISTRIBUTION, False
    return unquote(url.path), bool(record["dir_info"].get("editable"))


def missing_runtime_modules(mode: str | None = None) -> list[str]:
    """The bundled runtime's modules that this interpreter (the one it runs in) cannot import; [] when it can start.

    find_spec only locates them: `advisor launch` must not pay for importing torch."""
    import importlib.util

    wanted = RUNTIME_MODULES + (SERVE_MODULES if (mode or "serve") == "serve" else ())
    return [name for name in wanted if importlib.util.find_spec(name) is None]


class EngineCommandError(ValueError):
    """The plan cannot be turned into a command line; the message is one line naming the fix."""


def command_for(
    plan: Plan,
    *,
    mode: str | None = None,
    extra: Sequence[str] = (),
    python: str | None = None,
    node_rank: int = 0,
    dist_init_addr: str | None = None,
) -> list[str]:
    """The argv that starts ``plan.intent.engine`` on node ``node_rank`` (0 for single-node plans): the checks every
    engine shares, then the engine's own builder, which the engine registry names (its ``command``:
    ``bundled_command``, ``sglang_command``, ``vllm_command`` below for the engines that ship with tp-advisor)."""
    from advisor.rules import registry  # the registry names each engine's builder; it imports no rules itself

    try:
        engine = registry.get(plan.intent.engine)
    except registry.UnknownEngine as exc:
        raise EngineCommandError(str(exc)) from None
    nnodes = max(1, plan.intent.nnodes)
    if not 0 <= node_rank < nnodes:
        raise EngineCommandError(f"node rank {node_rank} is outside 0..{nnodes - 1}; pass a rank below --nnodes")
    addr = dist_init_addr or _default_dist_init_addr(plan)
    return engine.command(plan, mode=mode, extra=extra, python=python, node_rank=node_rank, dist_init_addr=addr)


def commands_for_nodes(
    plan: Plan,
    *,
    mode: str | None = None,
    extra: Sequence[str] = (),
    python: str | None = None,
    dist_init_addr: str | None = None,
) -> list[list[str]]:
    """One argv per node (node 0 first); a single-node plan gives a list of one."""
    return [
        command_for(plan, mode=mode, extra=extra, python=python, node_rank=rank, dist_init_addr=dist_init_addr)
        for rank in range(max(1, plan.intent.nnodes))
    ]


def without_flag(flags: Sequence[str], name: str) -> list[str]:
    """``flags`` minus every ``--name VALUE`` / ``--name=VALUE``."""
    out: list[str] = []
    skip = False
    for i, item in enumerate(flags):
        if skip:
            skip = False
            continue
        if item == name and i + 1 < len(flags):
            skip = True
            continue
        if item.startswith(name + "="):
            continue
        out.append(item)
    return out


# -- bundled runtime --------------------------------------------------------------------------------------------------


def bundled_command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """torchrun running the bundled runtime on every rank of node ``node_rank``."""
    intent = plan.intent
    problem = intent.error()  # counts below 1, a tp that does not split over the nodes (advisor/intent.py)
    if problem:
        raise EngineCommandError(problem)
    tp, nnodes = intent.tp, intent.nnodes
    argv = [python or sys.executable, "-m", TORCHRUN_MODULE]
    if nnodes == 1:
        argv += ["--standalone", "--nnodes", "1"]
    else:
        argv += ["--nnodes", str(nnodes), "--node-rank", str(node_rank), "--rdzv-backend", "c10d", "--rdzv-endpoint", dist_init_addr]
    argv += ["--nproc-per-node", str(intent.gpus_per_node), "--max-restarts", "0"]
    allreduce, device = _bundled_choices(plan)
    argv += [
        "-m", RUNTIME_MODULE,
        "--model", _bundled_model(plan),
        "--tp-size", str(tp),
        "--dtype", intent.dtype or "auto",
        "--device", device,
        contract.ALLREDUCE_FLAG, allreduce,
        "--mode", mode or intent.mode,
    ]  # fmt: skip
    # The allreduce decision's own flag group is placed above, from its value; the rest of the plan's flags follow.
    return argv + _tail(plan, without_flag(plan.flags, contract.ALLREDUCE_FLAG), extra)


def _bundled_choices(plan: Plan) -> tuple[str, str]:
    """(allreduce, device): the values of the plan's bundled decisions (advisor/rules/bundled). A plan without them
    (made by hand) gets the runtime's plain allreduce and the device its facts give."""
    fusion, device = plan.decision("flashinfer_allreduce_fusion"), plan.decision("device")
    allreduce = fusion.value["allreduce"] if fusion is not None else contract.ALLREDUCE_TORCH
    chosen = device.value["device"] if device is not None else contract.device_for(bool(plan.facts.engine_gpus))
    return allreduce, chosen


def _bundled_model(plan: Plan) -> str:
    """A local directory (the resolved one when the plan found it, e.g. in the HF cache) or the demo model."""
    if plan.model is not None and plan.model.path:
        return plan.model.path
    return plan.intent.model or DEMO_MODEL


# -- SGLang -----------------------------------------------------------------------------------------------------------


def sglang_command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """``python -m sglang.launch_server`` for node ``node_rank`` (``mode`` is the bundled runtime's; not used here)."""
    intent = plan.intent
    argv = [_engine_python(plan, python), "-m", "sglang.launch_server", "--model-path", _served_model(plan, "SGLang")]
    argv += ["--tp-size", str(max(1, intent.tp))]
    if intent.nnodes > 1:
        argv += ["--nnodes", str(intent.nnodes), "--node-rank", str(node_rank), "--dist-init-addr", dist_init_addr]
    if intent.dp_attention:
        argv += ["--enable-dp-attention"]
    if intent.dp_size != 1 or intent.dp_attention:
        argv += ["--dp-size", str(intent.dp_size)]
    if intent.moe_a2a_backend and intent.moe_a2a_backend != "none":
        argv += ["--moe-a2a-backend", intent.moe_a2a_backend]
    if intent.dtype:
        argv += ["--dtype", intent.dtype]
    return argv + _tail(plan, plan.flags, extra)


# -- vLLM -------------------------------------------------------------------------------------------------------------


def vllm_command(
    plan: Plan, *, mode: str | None, extra: Sequence[str], python: str | None, node_rank: int, dist_init_addr: str
) -> list[str]:
    """``vllm serve`` for node ``node_rank`` (``mode`` is the bundled runtime's; not used here)."""
    intent = plan.intent
    argv = [*_vllm_program(plan, python), "serve", _served_model(plan, "vLLM")]
    argv += ["--tensor-parallel-size", str(max(1, intent.tp))]
    if intent.nnodes > 1:
        # vLLM's multiprocessing multi-node mode: every node runs the same command; nodes other than 0 run headless.
        host, _, port = dist_init_addr.rpartition(":")
        argv += ["--nnodes", str(intent.nnodes), "--node-rank", str(node_rank), "--master-addr", host, "--master-port", port]
        if node_rank > 0:
            argv += ["--headless"]
    if intent.dp_size != 1:
        argv += ["--data-parallel-size", str(intent.dp_size)]
    if intent.dtype:
        argv += ["--dtype", intent.dtype]
    return argv + _tail(plan, plan.flags, extra)


# -- shared -----------------------------------------------------------------------------------------------------------


def _tail(plan: Plan, flags: Sequence[str], extra: Sequence[str]) -> list[str]:
    """What follows every engine's own arguments, in the order the module docstring gives: the plan's flags, then the
    user's overrides, then this launch's extra arguments (a later flag wins)."""
    return [*flags, *plan.intent.overrides, *extra]


def _served_model(plan: Plan, engine_name: str) -> str:
    """The model as the user named it (an id the engine resolves itself, or a directory)."""
    model = plan.intent.model or (plan.model.id if plan.model is not None else None)
    if not model or model == DEMO_MODEL:
        raise EngineCommandError(f"{engine_name} needs a real model; pass --model ID|DIR (the demo model is bundled-only)")
    return model


def _engine_python(plan: Plan, python: str | None) -> str:
    """The interpreter that has the engine installed: the explicit one, else the one whose packages were probed live."""
    if python:
        return python
    if plan.facts.python_executable and plan.facts.source == "live":
        return plan.facts.python_executable
    return sys.executable


def _vllm_program(plan: Plan, python: str | None) -> list[str]:
    """How `vllm` is started: the console script of the engine's environment, else its entry point through the
    interpreter (the same code); plain `vllm` for a plan made for another machine."""
    if python is None and not (plan.facts.python_executable and plan.facts.source == "live"):
        return [VLLM_PROGRAM]
    interpreter = _engine_python(plan, python)
    from pathlib import Path  # here, not at import: `advisor check` rarely needs it

    script = Path(interpreter).parent / VLLM_PROGRAM  # not resolved: a venv's python is a link out of the venv
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [interpreter, "-m", VLLM_CLI_MODULE]


def _default_dist_init_addr(plan: Plan) -> str:
    host = plan.facts.host.hostname or "NODE0_HOST"
    return f"{host}:{DEFAULT_RDZV_PORT}"
