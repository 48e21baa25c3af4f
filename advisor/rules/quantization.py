"""The start-up checks both engines make of a model's quantization method, read against each release's own table.

SGLang (configs/model_config.py ModelConfig._verify_quantization, model_loader/loader.py) and vLLM (vllm/config/model.py
ModelConfig._verify_quantization, vllm/config/vllm.py VllmConfig._get_quantization_config) do the same three things:

- the checkpoint's quantization_config.quant_method (lower-cased), after the release's detection steps
  (override_quantization_method: gptq -> gptq_marlin, ...) had their say, must be a method the release registers, or it
  stops with "Unknown quantization method: X";
- the method's config class states the least GPU capability it runs on (get_min_capability): a GPU below it stops the
  start-up with "The quantization method X is not supported for the current GPU";
- vLLM alone refuses a deprecated method unless --allow-deprecated-quantization is given.

Each engine's table (advisor/rules/<engine>/quantization.json) is written from the release's wheel by ``python -m
conformance sglang-quantization|vllm-quantization``; the engine's package holds the ids, flags and sources.
A name a detection step reads counts as known here; an engine that refuses it where its step does not apply checks
that in its own package (SGLang's GPTQ-to-Marlin step: advisor/rules/sglang/quantization.py).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.rules.engine import Problem, Scenario, parse_release


@dataclass(frozen=True)
class QuantizationTable:
    release: str
    methods: dict[str, int | None]  # method -> least GPU capability (major x 10 + minor); None: not a constant
    detected: frozenset[str]  # checkpoint names a detection step turns into a registered method
    deprecated: frozenset[str]
    # method -> the model dtypes its config class's get_supported_act_dtypes lists (vLLM's table; absent: not read)
    act_dtypes: dict[str, frozenset[str]] = field(default_factory=dict)


def load_tables(path: Path) -> dict[str, QuantizationTable]:
    releases = json.loads(path.read_text(encoding="utf-8"))["releases"]
    return {
        release: QuantizationTable(
            release,
            dict(entry["methods"]),
            frozenset(entry.get("detected", ())),
            frozenset(entry.get("deprecated", ())),
            {method: frozenset(dtypes) for method, dtypes in entry.get("act_dtypes", {}).items()},
        )  # fmt: skip
        for release, entry in releases.items()
    }


def table_for(tables: dict[str, QuantizationTable], release: str) -> QuantizationTable | None:
    """The table of the newest release read at or before ``release`` (None before the first)."""
    wanted = parse_release(release)
    older = [r for r in tables if parse_release(r) <= wanted]
    return tables[max(older, key=parse_release)] if older else None


@dataclass(frozen=True)
class Wording:
    engine: str  # "sglang", "vllm"
    flag: str  # the engine's --quantization
    unknown_id: str
    gpu_id: str
    unknown_source: str  # file (function) of the unknown-method check
    gpu_source: str
    deprecated_id: str | None = None
    deprecated_flag: str | None = None
    deprecated_source: str | None = None
    empty_is_none: bool = False  # vLLM reads quant_method "" as no quantization; SGLang refuses it as unknown
    # the engine's own detection step where it names a checkpoint otherwise than ModelSpec.quantization (None: none)
    detect: Callable[[Scenario, QuantizationTable], str | None] | None = None


def checked_method(s: Scenario, table: QuantizationTable, words: Wording) -> str | None:
    """The method the release's capability (and vLLM's dtype) check judges: --quantization as given, else the
    checkpoint's method as the detection steps name it where the release registers that name (ModelOpt FP4 / FP8),
    else quant_method as written; None: not quantized."""
    if s.model is None:
        return None
    given = s.flag(words.flag)
    method = s.model.quant_method if not given else None
    if method == "" and words.empty_is_none:
        method = None
    detected_name = words.detect(s, table) if words.detect else None
    named = detected_name or (s.model.quantization if s.model.quantization in table.methods else None)
    return (given.lower() if given else None) or named or method


def quantization_problems(s: Scenario, table: QuantizationTable | None, words: Wording) -> list[Problem]:
    """The quantization method the release refuses at start-up, as one error each: unknown, deprecated, or below the
    GPU's capability."""
    if table is None or s.model is None:
        return []
    release = table.release
    given = s.flag(words.flag)
    method = s.model.quant_method if not given else None
    if method == "" and words.empty_is_none:
        method = None
    problems = []
    if method is not None and method not in table.methods and method not in table.detected:
        close = difflib.get_close_matches(method, sorted(table.methods), n=1, cutoff=0.6)
        fix = (
            f'write "quant_method": "{close[0]}" in config.json\'s quantization_config if that is what the checkpoint'
            " holds, "
            if close
            else ""
        ) + f"use a release that knows {method!r}, or an unquantized checkpoint"
        problems.append(Problem(
            words.unknown_id, "error",
            f"{words.engine} v{release} does not know the checkpoint's quantization method {method!r}"
            f" (quantization_config.quant_method): it stops at start-up with \"Unknown quantization method\"",
            fix, f"{words.engine} v{release}, {words.unknown_source}",
        ))  # fmt: skip
        return problems
    method = checked_method(s, table, words)
    if method is None:
        return problems
    if words.deprecated_id and method in table.deprecated and not s.has(words.deprecated_flag or ""):
        problems.append(Problem(
            words.deprecated_id, "error",
            f"{words.engine} v{release} refuses the deprecated quantization method {method!r} at start-up",
            f"pass {words.deprecated_flag} after --, or use a checkpoint in another format",
            f"{words.engine} v{release}, {words.deprecated_source}",
        ))  # fmt: skip
    least, cap = table.methods.get(method), s.capability
    if least is not None and cap is not None and cap[0] * 10 + cap[1] < least:
        have, need = f"{cap[0]}.{cap[1]}", f"{least // 10}.{least % 10}"
        problems.append(Problem(
            words.gpu_id, "error",
            f"{words.engine} v{release}'s {method!r} quantization needs GPU capability {need} or newer; this GPU is"
            f" {have}: it stops at start-up (\"not supported for the current GPU\")",
            f"run on GPUs of capability {need} or newer, or use a checkpoint in a format this GPU runs",
            f"{words.engine} v{release}, {words.gpu_source}",
        ))  # fmt: skip
    return problems
