"""How SGLang's start-up log reads (``Engine.logs``; advisor.verify does the engine-independent rest).

The lines, as each release formats them (the wheels' own code, v0.5.7-v0.5.23; v0.4.x prints the same first four):
- ``server_args=ServerArgs(...)`` (v0.5.7-v0.5.18: the dataclass repr, logged by ``launch_server`` after resolution,
  python/sglang/srt/entrypoints/engine.py / http_server.py) and ``server_args={...}`` (v0.5.19+: ``resolved_dict()``);
- ``Load weight end. ... mem usage=X GB.`` (python/sglang/srt/model_executor/model_runner.py);
- ``KV Cache is allocated. [dtype: D, ]#tokens: N, ...`` (python/sglang/srt/mem_cache/memory_pool.py), and from v0.5.22
  ``Post-capture KV sizing: KV cache allocated. dtype: D, #tokens: N, ...`` (model_runner_components/kv_pool_runtime.py);
- ``max_total_num_tokens=N, chunked_prefill_size=C, max_prefill_tokens=P, max_running_requests=R, context_len=L, ...``
  (python/sglang/srt/managers/scheduler.py, rank 0);
- ``Capture cuda graph bs [..]`` (up to v0.5.13, cuda_graph_runner.py) and ``Capture cuda graph begin. ... bs=[..]`` /
  ``... end. bs=[..]`` (v0.5.14+, model_runner.py / cuda_graph_setup.py);
- ``Custom allreduce is disabled because ...`` / ``CustomAllreduce is disabled due to ...``
  (python/sglang/srt/distributed/device_communicators/custom_all_reduce*.py);
- ``The server is fired up and ready to roll!`` (entrypoints/http_server.py).
"""

from __future__ import annotations

import re
from typing import Any

from advisor.rules.engine import FORCED_OFF
from advisor.verify.parse import (
    LogLine,
    LogPatterns,
    Prediction,
    RunValues,
    decision_predictions,
    fields_of,
    nested,
    number,
    startup_predictions,
    value_of,
)

SERVER_ARGS = re.compile(r"^(?:server_args=)?(?P<body>ServerArgs\(.*|(?<==)\{.*)$", re.S)
WEIGHTS = re.compile(r"Load weight end\..*?mem usage=(?P<gib>[\d.]+) ?GB")
KV_POOL = re.compile(r"(?<![Dd]raft )KV [Cc]ache (?:is )?allocated\..*?#tokens: (?P<tokens>[\d,]+)")
SCHEDULER = re.compile(r"^max_total_num_tokens=(?P<body>-?\d+, .*)$")
GRAPH_BS = re.compile(
    r"^Capture (?:target )?(?:decode )?(?:cuda|CUDA) graph (?:bs (?P<old>\[[\d, ]*\]?)|(?:begin|end)\..*?\bbs=(?P<new>\[[\d, ]*\]?))"
)
CUSTOM_AR_OFF = re.compile(r"^(?:Custom allreduce|CustomAllreduce) is disabled (?P<reason>(?:because|due to) .*)$")
READY = re.compile(r"The server is fired up and ready to roll!")
VERSION = re.compile(r"\b[Ss][Gg][Ll]ang(?: version|==|\s+v)\s*:?\s*v?(?P<version>\d+\.\d+\.\d+\S*)")
# The first line of a failure: the exception line that ends a traceback, or what SGLang prints when a rank dies.
ERROR = re.compile(
    r"^(?:(?:[\w.]+\.)?(?:\w*Error|\w*Exception)(?::\s.*|$)|.*Scheduler hit an exception.*|"
    r".*(?:CUDA out of memory|Not enough memory|Received sigquit from a child process).*)"
)

# ServerArgs fields the comparison and the intent read (other fields stay in the observed values too).
INTENT_FIELDS = ("model_path", "tp_size", "dp_size", "nnodes", "enable_dp_attention", "moe_a2a_backend", "dtype")
# Switches whose True value the user gave as a flag (they never turn on by themselves): passed back to the plan.
USER_SWITCHES = ("disable_custom_all_reduce", "enforce_disable_flashinfer_allreduce_fusion", "disable_cuda_graph",
                 "enable_deterministic_inference", "disable_radix_cache")  # fmt: skip
# Valued arguments the user gave, passed back when logged with a value other than the default None.
USER_VALUES = ("context_length", "quantization", "speculative_algorithm", "kv_cache_dtype")
USER_VALUE_DEFAULTS = {"kv_cache_dtype": "auto"}


def signature(message: str) -> int:
    """How strongly a message says SGLang wrote it."""
    if message.startswith(("server_args=ServerArgs(", "server_args={")) or READY.search(message):
        return 5
    if SCHEDULER.match(message) or KV_POOL.search(message) or WEIGHTS.search(message) or GRAPH_BS.match(message):
        return 2
    return 0


def starts(message: str) -> str | None:
    return "server_args" if SERVER_ARGS.match(message) else None


def ends(message: str) -> bool:
    return bool(READY.search(message) or ERROR.match(message))


def _server_args(match: re.Match, line: LogLine, run: RunValues) -> None:
    body = match.group("body")
    values = fields_of(body)
    if not body.rstrip().endswith((")", "}")):
        run.warnings.append(f"line {line.number}: server_args is cut short; the arguments after the cut are not read")
    for name, value in values.items():
        run.keep(name, value, line)
    run.keep("cuda_graph_max_bs", _cuda_graph_max_bs(values), line)
    run.keep("flashinfer_allreduce_fusion", _fusion(values), line)


def _scheduler(match: re.Match, line: LogLine, run: RunValues) -> None:
    values = fields_of(line.message.split(", available_", 1)[0])
    run.keep("max_total_num_tokens", values.get("max_total_num_tokens"), line)
    run.keep("context_len", values.get("context_len"), line)
    if isinstance(values.get("max_running_requests"), int):
        run.keep("max_running_requests", values["max_running_requests"], line)


def _graph_bs(match: re.Match, line: LogLine, run: RunValues) -> None:
    text = match.group("old") or match.group("new") or ""
    sizes = value_of(text if text.endswith("]") else text.rsplit(",", 1)[0] + "]")
    if isinstance(sizes, list) and "cuda_graph_bs" not in run.observed:
        run.keep("cuda_graph_bs", sizes, line)


# SGLang's lines and what each gives (advisor.verify.parse.read_run reads a run with them).
LINES = (
    (SERVER_ARGS.match, _server_args),
    (WEIGHTS.search, lambda m, line, run: run.keep("weights_gib", number(m.group("gib")), line)),
    # a post-capture resize logs the final pool
    (KV_POOL.search, lambda m, line, run: run.keep("kv_cache_tokens", number(m.group("tokens")), line)),
    (SCHEDULER.match, _scheduler),
    (GRAPH_BS.match, _graph_bs),
)
ALSO = ((VERSION.search, lambda m, line, run: run.keep("release", m.group("version"), line)),)


def _cuda_graph_max_bs(values: dict[str, Any]) -> int | None:
    """v0.5.14 folded cuda_graph_max_bs into cuda_graph_config's decode phase (cuda_graph_max_bs_decode as a flag)."""
    for candidate in (values.get("cuda_graph_max_bs"), values.get("cuda_graph_max_bs_decode"),
                      nested(values.get("cuda_graph_config"), "decode", "max_bs")):  # fmt: skip
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
    return None


def _fusion(values: dict[str, Any]) -> bool | None:
    """FlashInfer allreduce fusion as logged: enable_flashinfer_allreduce_fusion, or (from v0.5.14) a
    flashinfer_allreduce_fusion_backend other than none."""
    if "enable_flashinfer_allreduce_fusion" not in values and "flashinfer_allreduce_fusion_backend" not in values:
        return None
    backend = values.get("flashinfer_allreduce_fusion_backend")
    return values.get("enable_flashinfer_allreduce_fusion") is True or backend not in (None, "", "none")


def intent(observed: dict[str, Any]) -> dict[str, Any]:
    """The logged arguments -> the intent's parts and the engine arguments a user must have given."""
    args: list[str] = []
    for name in USER_SWITCHES:
        if observed.get(name) is True:
            args.append("--" + name.replace("_", "-"))
    for name in USER_VALUES:
        value = observed.get(name)
        if value is not None and value != USER_VALUE_DEFAULTS.get(name):
            args += ["--" + name.replace("_", "-"), str(value)]
    dtype = observed.get("dtype")
    return {
        "model": observed.get("model_path"),
        "tp": observed.get("tp_size"),
        "dp_size": observed.get("dp_size"),
        "nnodes": observed.get("nnodes"),
        "dp_attention": observed.get("enable_dp_attention"),
        "moe_a2a_backend": observed.get("moe_a2a_backend"),
        "dtype": dtype if dtype not in (None, "auto") else None,
        "engine_version": observed.get("release"),
        "args": tuple(args),
    }


# (logged name, decision id, what of it) -> the prediction (advisor.verify.parse.decision_predictions).
PREDICTED = (
    ("mem_fraction_static", "memory_defaults", "value.mem_fraction_static"),
    ("chunked_prefill_size", "memory_defaults", "value.chunked_prefill_size"),
    ("cuda_graph_max_bs", "memory_defaults", "value.cuda_graph_max_bs"),
    ("attention_backend", "attention_backend", "value"),
    ("page_size", "attention_backend", "setting.page_size"),
    ("moe_runner_backend", "moe_runner_backend", "value"),
    ("ep_size", "moe_runner_backend", "setting.ep_size"),
    ("flashinfer_allreduce_fusion", "flashinfer_allreduce_fusion", "enabled"),
    ("custom_allreduce_disabled", "custom_allreduce", "disabled"),
)
STARTUP = {"kv_cache_tokens": "kv_tokens", "context_len": "context_len", "weights_gib": "weights_gib"}
ESTIMATE_MARGIN = 0.10


def predict(plan: Any) -> list[Prediction]:
    predictions = decision_predictions(plan, PREDICTED)
    custom_ar = plan.decision("custom_allreduce")
    if custom_ar is not None:
        forced = custom_ar.state == FORCED_OFF
        predictions.append(Prediction("disable_custom_all_reduce", forced, str(custom_ar.source)))
    rounded = []
    for p in predictions:  # SGLang logs the fraction it computed to 3 places
        if p.name == "mem_fraction_static" and isinstance(p.value, float):
            p = Prediction(p.name, round(p.value, 3), p.source, p.tolerance)
        rounded.append(p)
    return rounded + startup_predictions(plan, STARTUP, ESTIMATE_MARGIN)


LOGS = LogPatterns(engine="sglang", lines=LINES, also=ALSO, custom_ar_off=CUSTOM_AR_OFF.match, ready=READY.search,
                   error=ERROR.match, tp_field="tp_size", disable_custom_ar_field="disable_custom_all_reduce",
                   signature=signature, starts=starts, ends=ends, intent=intent, predict=predict,
                   releases_seen="v0.5.7-v0.5.23")  # fmt: skip
