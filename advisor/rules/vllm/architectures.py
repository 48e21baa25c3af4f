"""The architectures each vLLM release names, and what a release does with the model's architecture.

architectures.json (written by ``python -m conformance vllm-architectures``; docs/architectures.md) holds, per release,
every architecture name (config.json ``architectures[0]``) the release's engine-config resolution compares against or
its model registry lists, each with where it appears (``file:function`` or ``file:CONSTANT`` under vllm/). Unlike
SGLang, vLLM has no default path for a name it does not know: ModelConfig asks the registry
(vllm/model_executor/models/registry.py, ``_ModelRegistry.inspect_model_cls``) for the model class, and a name that
none of its tables serves is refused at start-up unless transformers defines a class of that name or the config's
``auto_map`` names one (the Transformers backend, ``_try_resolve_transformers``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, Problem, Scenario
from advisor.rules.releases import parse_release

ARCHITECTURES_FILE = Path(__file__).with_name("architectures.json")
REGISTRY_FILE = "model_executor/models/registry.py"
# The registry's tables that do not serve a model: _raise_for_unsupported names the last release that did, or the
# out-of-tree plugin that does now (_OOT_SUPPORTED_MODELS, from v0.19.1).
RETIRED = f"{REGISTRY_FILE}:_PREVIOUSLY_SUPPORTED_MODELS"
OUT_OF_TREE = f"{REGISTRY_FILE}:_OOT_SUPPORTED_MODELS"
# From v0.29.0 VllmConfig._maybe_enable_breakable_cudagraph (vllm/config/vllm.py) sets VLLM_USE_BREAKABLE_CUDAGRAPH=1
# for the architectures of this constant (unless the variable is set), and then compiles nothing
# (compilation_config.mode = NONE): no inductor pass runs, the allreduce fusion included.
BREAKABLE_CUDAGRAPH = "config/vllm.py:DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES"


@cache
def _releases() -> dict[str, dict[str, list[str]]]:
    """architectures.json's releases, read once."""
    return json.loads(ARCHITECTURES_FILE.read_text(encoding="utf-8"))["releases"]


def data_release(version: str) -> str | None:
    """The newest release read into architectures.json at or below ``version`` (None: older than every one read)."""
    wanted = parse_release(version)
    read = [r for r in _releases() if parse_release(r) <= wanted]
    return max(read, key=parse_release) if read else None


def named(version: str) -> dict[str, list[str]] | None:
    """Every architecture the release names -> where; None when no release at or below ``version`` was read."""
    release = data_release(version)
    return _releases()[release] if release else None


def _with(version: str, place: str) -> frozenset[str]:
    return frozenset(n for n, places in (named(version) or {}).items() if place in places)


@cache
def served(version: str) -> frozenset[str]:
    """The names the release's registry maps to a model class (_VLLM_MODELS: every table but the retired ones)."""
    return frozenset(n for n, places in (named(version) or {}).items()
                     if any(p.startswith(f"{REGISTRY_FILE}:") and p not in (RETIRED, OUT_OF_TREE) for p in places))  # fmt: skip


def breakable_cudagraph(model, version: str) -> bool:
    """Whether v0.29.0+ turns compilation off for this model (its architecture on the breakable-CUDA-graph list)."""
    return model is not None and model.architecture in _with(version, BREAKABLE_CUDAGRAPH)


def served_by_registry(model, version: str) -> bool | None:
    """Whether the release's registry serves ``architectures[0]``; None when unknown (no model, release not read)."""
    if model is None or named(version) is None:
        return None
    return model.architecture in served(version)


def architecture_problems(s: Scenario, version: str) -> list[Problem]:
    """An error when the release's registry does not serve the model's architecture: vLLM refuses it at start-up."""
    model = s.model
    if served_by_registry(model, version) is not False:
        return []
    release = data_release(version)
    arch = model.architecture
    places = (named(version) or {}).get(arch, [])
    source = f"vllm v{release}, vllm/{REGISTRY_FILE} (_ModelRegistry.inspect_model_cls, _raise_for_unsupported)"
    if RETIRED in places:
        return [Problem(ARCHITECTURE_NOT_NAMED, "error",
                        f"{arch} was supported by earlier vLLM releases and is not by vllm {release}: it refuses the "
                        "model at start-up", "pass --engine-version of an older release (the error names the last one)",
                        source)]  # fmt: skip
    if OUT_OF_TREE in places:
        return [Problem(ARCHITECTURE_NOT_NAMED, "error",
                        f"{arch} is not served in-tree by vllm {release}: it refuses the model at start-up",
                        "install the out-of-tree plugin vLLM's error message names", source)]  # fmt: skip
    return [Problem(
        ARCHITECTURE_NOT_NAMED, "error",
        f"{arch} is not named by vllm {release}: its model registry serves {len(served(version))} architectures, none "
        "of them this one, so it refuses the model at start-up ('Model architectures [...] are not supported for "
        "now') unless transformers defines a class of that name or config.json's auto_map names one (then the "
        "Transformers backend runs it, with --trust-remote-code for auto_map)",
        "check the architectures entry of config.json, or pick a vLLM release whose registry lists it"
        " (python -m conformance vllm-architectures)",
        source,
    )]  # fmt: skip
