"""A checkpoint whose quantization method the release no longer knows.

ModelConfig._verify_quantization (vllm/config/model.py) reads quantization_config.quant_method (lowercased,
compressed_tensors spelled compressed-tensors; the text_config's where the top level has none) and refuses a method
outside QUANTIZATION_METHODS ("Unknown quantization method: ... Must be one of [...]"). quant_methods.json holds each
release's list (written by ``python -m conformance.vllm.quant_methods``). The rule flags only a method an earlier
release listed and this one does not (bitsandbytes from v0.28.0, gguf from v0.25.1, ...) and that no
override_quantization_method of the release compares against (``claimed``: INC takes auto-round checkpoints, which
v0.15.1 dropped from the list); a name no release lists is left alone.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario
from advisor.rules.releases import parse_release

METHODS_FILE = Path(__file__).with_name("quant_methods.json")
MODEL_CONFIG_FILE = "vllm/config/model.py"
QUANTIZATION_FLAG = "--quantization"
UNKNOWN_QUANTIZATION = "vllm_quantization_unknown"


@cache
def _data(key: str) -> dict[str, frozenset[str]]:
    data = json.loads(METHODS_FILE.read_text(encoding="utf-8"))[key]
    return {release: frozenset(names) for release, names in data.items()}


def _releases() -> dict[str, frozenset[str]]:
    return _data("releases")


def _read_up_to(version: str) -> list[str]:
    return sorted((r for r in _releases() if parse_release(r) <= parse_release(version)), key=parse_release)


def checkpoint_method(model) -> str | None:
    """The method name vLLM compares (None: not quantized, or a ModelOpt checkpoint, whose method vLLM sets itself)."""
    method = getattr(model, "quantization", None)
    if not method or method.startswith("modelopt"):
        return None
    return method.replace("compressed_tensors", "compressed-tensors")


def last_listing(method: str, version: str) -> str | None:
    """The newest release read before ``version`` that lists ``method``, when ``version``'s own list lacks it."""
    read = _read_up_to(version)
    if not read or method in _releases()[read[-1]] or method in _data("claimed").get(read[-1], ()):
        return None
    return next((r for r in reversed(read[:-1]) if method in _releases()[r]), None)


def quantization_problems(s: Scenario, version: str) -> list[Problem]:
    """vllm_quantization_unknown: the checkpoint's quantization method was dropped by this release."""
    method = checkpoint_method(s.model)
    if method is None or s.flag(QUANTIZATION_FLAG):
        return []
    last = last_listing(method, version)
    if last is None:
        return []
    return [Problem(
        UNKNOWN_QUANTIZATION, "error",
        f"vllm {version} does not know the checkpoint's quantization method {method!r} (quantization_config."
        f"quant_method); it refuses the model at start-up ('Unknown quantization method'). v{last} was the last release "
        "read that listed it",
        f"pass --engine-version {last} (or an older vLLM), or use a checkpoint quantized with a method this release lists",
        f"vllm v{version}, {MODEL_CONFIG_FILE} (ModelConfig._verify_quantization, QUANTIZATION_METHODS)",
    )]  # fmt: skip
