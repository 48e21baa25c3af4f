"""How vLLM's start-up log reads (``Engine.logs``; advisor.verify does the engine-independent rest).

The lines, as the modelled releases format them (the wheels' own code, v0.12.0-v0.33.0; the V0 engine's differ little):
- ``vLLM API server version X`` (vllm/entrypoints/openai/api_server.py) and ``non-default args: {...}``: the arguments
  the user gave, EngineArgs names (vllm/entrypoints/utils.py, later vllm/entrypoints/common/startup.py);
- ``Initializing a V1 LLM engine (vX) with config: model=..., max_seq_len=..., tensor_parallel_size=...,
  compilation_config={...}`` (vllm/v1/engine/core.py with ``VllmConfig.__str__``, vllm/config/vllm.py; V0: ``Initializing
  an LLM engine (vX) with config: ...``);
- ``Using FLASH_ATTN attention backend ...`` (vllm/platforms/cuda.py);
- ``Model loading took X GiB memory and Y seconds`` (vllm/v1/worker/gpu_model_runner.py);
- ``Available KV cache memory: X GiB`` (vllm/v1/worker/gpu_worker.py);
- ``GPU KV cache size: N tokens`` and ``Maximum concurrency for L tokens per request: Cx`` (vllm/v1/core/kv_cache_utils.py;
  one line from v0.30); V0 ``# GPU blocks: B, # CPU blocks: C``;
- ``Custom allreduce is disabled because ...`` and, from v0.27.1 across nodes, ``Custom collectives are disabled
  because this multi-node group ...`` (vllm/distributed/device_communicators/custom_all_reduce.py);
- ``Application startup complete.`` (uvicorn: ready).
"""

from __future__ import annotations

import re
from typing import Any

from advisor.verify.parse import (
    LogLine,
    LogPatterns,
    Prediction,
    RunValues,
    decision_predictions,
    fields_of,
    number,
    startup_predictions,
    value_of,
)

# "vLLM API server version X" (v0.12-v0.15), "vLLM server version X, serving model M" (v0.20+), or the logo's
# "... version X" line when vLLM logs to a terminal (entrypoints/common/startup.py log_version_and_model).
API_VERSION = re.compile(
    r"vLLM (?:API )?server version (?P<version>\d+\.\d+\.\d+[^\s,]*)|\u2588.*\bversion\s+(?P<logo>\d+\.\d+\.\d+[^\s,]*)"
)
NON_DEFAULT = re.compile(r"^non-default args: (?P<body>\{.*)$")
ENGINE_CONFIG = re.compile(r"Initializing an? (?:V\d )?LLM engine \(v(?P<version>[^)\s]+)\) with config: (?P<body>.*)$")
BACKEND = re.compile(r"^Using (?:AttentionBackendEnum\.|_Backend\.)?(?P<name>[A-Z][A-Z0-9_]+) (?:attention )?backend")
# The V0 engine named its backends in words (vllm/platforms/cuda.py, v0.7): "Using Flash Attention backend."
V0_BACKEND = re.compile(r"^Using (?P<name>Flash Attention|XFormers|FlashInfer|Triton MLA) backend\.")
V0_BACKEND_NAMES = {"Flash Attention": "FLASH_ATTN", "XFormers": "XFORMERS", "FlashInfer": "FLASHINFER",
                    "Triton MLA": "TRITON_MLA"}  # fmt: skip
# v0.7's "args: Namespace(...)": every argument, defaults included (only the model and sizes are taken from it).
V0_ARGS = re.compile(r"^args: Namespace\((?P<body>.*)$")
WEIGHTS = re.compile(r"(?:Model loading|Loading model weights) took (?P<gib>[\d.]+) ?Gi?B\b")
KV_MEMORY = re.compile(r"Available KV cache memory: (?P<gib>-?[\d.]+) ?GiB")
KV_TOKENS = re.compile(r"\bKV cache size: (?P<tokens>[\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x")
V0_BLOCKS = re.compile(r"# (?:GPU|CUDA|cuda) blocks: (?P<blocks>\d+)")
# v0.27.1+ across nodes: "Custom collectives are disabled because this multi-node group does not support MNNVL
# multicast" (v0.33: "... does not have MNNVL-capable GPUs on every rank").
CUSTOM_AR_OFF = re.compile(r"^Custom (?:allreduce is|collectives are) disabled (?P<reason>(?:because|due to) .*)$")
READY = re.compile(r"Application startup complete\.")
ERROR = re.compile(
    r"^(?:(?:[\w.]+\.)?(?:\w*Error|\w*Exception)(?::\s.*|$)|.*Engine core initialization failed.*|"
    r".*EngineCore failed to start.*|.*CUDA out of memory.*)"
)
# The config line's names that differ from EngineArgs' (what non-default args and the plan call them).
CONFIG_NAMES = {"max_seq_len": "max_model_len", "chunked_prefill_enabled": "enable_chunked_prefill"}
# compilation_config as logged: a dict whose enums print as <CompilationMode.VLLM_COMPILE: 3>.
_MODE = re.compile(r"['\"](?:mode|level)['\"]\s*:\s*(?:<\w+\.\w+: )?(?P<mode>\d+)")
_GRAPH_MODE = re.compile(r"['\"]cudagraph_mode['\"]\s*:\s*<?(?:CUDAGraphMode\.)?(?P<mode>[A-Z_]+)")
_CAPTURE_SIZES = re.compile(r"['\"]cudagraph_capture_sizes['\"]\s*:\s*(?P<sizes>\[[\d, ]*\]?)")
_MAX_CAPTURE = re.compile(r"['\"]max_cudagraph_capture_size['\"]\s*:\s*(?P<size>\d+)")
# Arguments that make up the intent, not engine arguments passed back.
INTENT_ARGS = ("model", "model_tag", "tensor_parallel_size", "data_parallel_size", "nnodes", "dtype")


def signature(message: str) -> int:
    if ENGINE_CONFIG.search(message) or API_VERSION.search(message) or NON_DEFAULT.match(message):
        return 5
    if KV_TOKENS.search(message) or WEIGHTS.search(message) or KV_MEMORY.search(message):
        return 2
    return 0


def starts(message: str) -> str | None:
    """A start-up logs the API server's version once and the engine config once (per engine core)."""
    if API_VERSION.search(message):
        return "version"
    return "config" if ENGINE_CONFIG.search(message) else None


def ends(message: str) -> bool:
    return bool(READY.search(message) or ERROR.match(message))


def _non_default(match: re.Match, line: LogLine, run: RunValues) -> None:
    body = match.group("body")
    if not body.rstrip().endswith("}"):
        run.warnings.append(
            f"line {line.number}: non-default args is cut short; the arguments after the cut are not read"
        )
    run.observed["non_default_args"] = fields_of(body)
    for name, value in run.observed["non_default_args"].items():
        run.keep(name, value, line)


def _engine_config(match: re.Match, line: LogLine, run: RunValues) -> None:
    run.keep("release", match.group("version"), line)
    _read_config(match.group("body"), line, run.keep, run.warnings)


def _v0_args(match: re.Match, line: LogLine, run: RunValues) -> None:
    args = fields_of("Namespace(" + match.group("body"))
    for name in ("model", "tensor_parallel_size", "data_parallel_size"):
        run.keep(name, args.get(name), line)


def _kv_tokens(match: re.Match, line: LogLine, run: RunValues) -> None:
    run.keep("kv_cache_tokens", number(match.group("tokens")), line)
    if concurrency := CONCURRENCY.search(line.message):
        run.keep("max_concurrency", number(concurrency.group("x")), line)


def _finish(run: RunValues) -> None:
    """The V0 engine logs blocks, not tokens: its pool in tokens is blocks x block size."""
    blocks, block = run.observed.get("kv_cache_blocks"), run.observed.get("block_size")
    if "kv_cache_tokens" not in run.observed and isinstance(blocks, int) and isinstance(block, int):
        run.observed["kv_cache_tokens"] = blocks * block


# vLLM's lines and what each gives (advisor.verify.parse.read_run reads a run with them).
LINES = (
    (API_VERSION.search, lambda m, line, run: run.keep("release", m.group("version") or m.group("logo"), line)),
    (NON_DEFAULT.match, _non_default),
    (ENGINE_CONFIG.search, _engine_config),
    (V0_ARGS.match, _v0_args),
    (V0_BACKEND.match, lambda m, line, run: run.keep("attention_backend", V0_BACKEND_NAMES[m.group("name")], line)),
    (BACKEND.match, lambda m, line, run: run.keep("attention_backend", m.group("name"), line)),
    (WEIGHTS.search, lambda m, line, run: run.keep("weights_gib", number(m.group("gib")), line)),
    (KV_MEMORY.search, lambda m, line, run: run.keep("kv_cache_gib", number(m.group("gib")), line)),
    (KV_TOKENS.search, _kv_tokens),
    (CONCURRENCY.search, lambda m, line, run: run.keep("max_concurrency", number(m.group("x")), line)),
    (V0_BLOCKS.search, lambda m, line, run: run.keep("kv_cache_blocks", number(m.group("blocks")), line)),
)


def _read_config(body: str, line: LogLine, keep, warnings: list[str]) -> None:
    """The engine config line: ``name=value, ...`` with compilation_config a dict printed with enum reprs."""
    head, _, compilation = body.partition("compilation_config=")
    for name, value in fields_of(head).items():
        keep(CONFIG_NAMES.get(name, name), value, line)
    if not compilation:
        return
    if match := _MODE.search(compilation):
        keep("compilation_mode", int(match.group("mode")), line)
    if match := _GRAPH_MODE.search(compilation):
        keep("cudagraph_mode", match.group("mode"), line)
    if match := _CAPTURE_SIZES.search(compilation):
        text = match.group("sizes")
        sizes = value_of(text if text.endswith("]") else text.rsplit(",", 1)[0] + "]")
        if isinstance(sizes, list):
            keep("cuda_graph_bs", sizes, line)
    if match := _MAX_CAPTURE.search(compilation):
        keep("max_cudagraph_capture_size", int(match.group("size")), line)
    if "}" not in compilation:
        warnings.append(f"line {line.number}: the engine config is cut short; compilation_config is read in part")


def intent(observed: dict[str, Any]) -> dict[str, Any]:
    """The logged arguments -> the intent's parts; the user's other non-default args go back as engine arguments."""
    args: list[str] = []
    for name, value in (observed.get("non_default_args") or {}).items():
        if name in INTENT_ARGS:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False:
            args.append("--no-" + name.replace("_", "-"))
        elif isinstance(value, (int, float, str)):
            args += [flag, str(value)]
    dtype = observed.get("dtype")
    return {
        "model": observed.get("model"),
        "tp": observed.get("tensor_parallel_size"),
        "dp_size": observed.get("data_parallel_size"),
        "nnodes": observed.get("nnodes"),
        "dp_attention": None,
        "moe_a2a_backend": None,
        "dtype": dtype if isinstance(dtype, str) and dtype in ("bfloat16", "float16", "float32") else None,
        "engine_version": observed.get("release"),
        "args": tuple(args),
    }


PREDICTED = (
    ("gpu_memory_utilization", "memory_defaults", "value.gpu_memory_utilization"),
    ("max_num_seqs", "memory_defaults", "value.max_num_seqs"),
    ("max_num_batched_tokens", "memory_defaults", "value.max_num_batched_tokens"),
    ("max_model_len", "memory_defaults", "value.max_model_len"),
    ("block_size", "memory_defaults", "value.block_size"),
    ("kv_cache_dtype", "memory_defaults", "value.kv_cache_dtype"),
    ("attention_backend", "attention_backend", "value"),
    ("compilation_mode", "compilation", "value.compilation_mode"),
    ("cudagraph_mode", "compilation", "value.cudagraph_mode"),
    ("enable_prefix_caching", "prefix_caching", "enabled"),
    ("enable_chunked_prefill", "chunked_prefill", "enabled"),
    ("custom_allreduce_disabled", "custom_allreduce", "disabled"),
)
STARTUP = {"kv_cache_tokens": "kv_tokens", "weights_gib": "weights_gib"}
ESTIMATE_MARGIN = 0.10


def predict(plan: Any) -> list[Prediction]:
    return decision_predictions(plan, PREDICTED) + startup_predictions(plan, STARTUP, ESTIMATE_MARGIN)


LOGS = LogPatterns(engine="vllm", lines=LINES, finish=_finish, custom_ar_off=CUSTOM_AR_OFF.match, ready=READY.search,
                   error=ERROR.match, tp_field="tensor_parallel_size", disable_custom_ar_field="disable_custom_all_reduce",
                   signature=signature, starts=starts, ends=ends, intent=intent, predict=predict,
                   releases_seen="v0.12.0-v0.33.0")  # fmt: skip
