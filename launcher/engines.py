"""What the launcher knows of the engines it starts, without knowing the advisor's plans: how each one says it is
ready, and what the bundled runtime (launcher/runtime) needs installed in the interpreter it runs in.

The argv an engine is started with is built by the engine's own package (advisor/rules/<engine>/command.py); the
launcher takes that argv and an environment (launcher.spawn).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlparse

from launcher.runtime import contract

if TYPE_CHECKING:
    from collections.abc import Sequence

RUNTIME_MODULE = "launcher.runtime"
TORCHRUN_MODULE = "torch.distributed.run"
# The bundled runtime's modes, KV-cache defaults and dtypes: its contract (launcher/runtime/contract.py).
RUNTIME_MODES = contract.MODES
RUNTIME_MAX_BATCH_SIZE = contract.MAX_BATCH_SIZE
RUNTIME_MAX_MODEL_LEN = contract.MAX_MODEL_LEN
RUNTIME_DTYPES = contract.DTYPES

# What installs the bundled runtime: one home for the hint in `advisor check`'s warning and in `advisor launch`'s refusal.
RUNTIME_EXTRA = "runtime"
DISTRIBUTION = "tp-advisor"
# The CPU build of torch, for a machine without an NVIDIA driver: installed before the runtime extra, which would
# otherwise fetch the multi-GB CUDA build (PyTorch's own install selector gives this index for CPU).
CPU_TORCH_INSTALL = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
# The modules the bundled runtime imports (the `runtime` extra of pyproject.toml); the server adds SERVE_MODULES.
RUNTIME_MODULES = ("torch", "safetensors", "tokenizers")
SERVE_MODULES = ("fastapi", "uvicorn", "jinja2", "prometheus_client")


class ReadySignal:
    """A line an engine prints once it accepts requests (`launcher.spawn` marks the run ready on the first one)."""

    __slots__ = ("from_ranks", "pattern", "prefix", "url_pattern")

    def __init__(self, prefix: str, url_pattern: str, from_ranks: bool) -> None:
        self.prefix = prefix  # the words before the URL, as printed (a whole word first)
        self.url_pattern = url_pattern  # the URL: group 1
        self.from_ranks = from_ranks  # True: a worker rank prints it; False: only the engine's main process
        self.pattern = re.compile(self.regex)

    @property
    def regex(self) -> str:
        return r"\b" + re.escape(self.prefix) + self.url_pattern

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
# Every signal an engine the launcher starts may print: what a run waits for when its caller names none.
READY_SIGNALS = (RUNTIME_READY, UVICORN_READY)


class MachineFacts(Protocol):
    """What the runtime's install commands read of the machine they are for (an advisor.facts.Facts has both)."""

    source: str  # "live" for this machine
    gpus: Sequence[object]


def runtime_install_command() -> str:
    """The pip command that installs the bundled runtime's dependencies: the ``runtime`` extra of tp-advisor, from where
    this tp-advisor came from (see runtime_extra_source)."""
    source, editable = runtime_extra_source()
    return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{source}[{RUNTIME_EXTRA}]')}"


def runtime_install_commands(facts: MachineFacts, torch_missing: bool) -> list[str]:
    """The commands that install the bundled runtime on the machine ``facts`` describe, in order: the CPU build of torch
    first when torch is missing on a live machine without GPUs, then the runtime extra."""
    extra = runtime_install_command()
    cpu_torch = torch_missing and facts.source == "live" and not facts.gpus
    return [CPU_TORCH_INSTALL, extra] if cpu_torch else [extra]


def runtime_extra_source() -> tuple[str, bool]:
    """(what pip installs the extra from, whether editable): the source directory this tp-advisor was installed from
    (a clone's `pip install -e .`, recorded in its direct_url.json, PEP 610), since the package index's tp-advisor may
    be another release or absent; else the distribution's name."""
    import importlib.metadata  # genuinely heavy (email, zipfile, csv: ~60 ms): only when an install command is shown

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

    find_spec only locates them: the runtime imports them in its own processes."""
    wanted = RUNTIME_MODULES + (SERVE_MODULES if (mode or "serve") == "serve" else ())
    return [name for name in wanted if importlib.util.find_spec(name) is None]
