"""The scenarios ``python -m conformance sglang-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (GPU, model, layout, flags),
then every config of the configs grid and the named grid present at run time (tests/conformance/configs/synthetic-* and
named-*) on a few layouts each, which reach the branches keyed on an architecture or a config property.

The extras are not conformance goldens (yet): they measure how much of the resolution the inputs the advisor takes can
reach. Each is a grid scenario dict (conformance/sglang/grid.py) with an ``extra`` list of engine arguments.
"""

from __future__ import annotations

import json

from conformance.sglang.config_grid import CONFIGS, NAMED_PREFIX, PREFIX
from conformance.sglang.grid import GPU_PROFILES, scenario_id, scenarios

# (GPU profile, model, layout changes from tp 8 on one node, engine arguments): the flags the advisor reads or passes
# through (quantization, KV-cache dtype, backends, expert/pipeline parallelism, memory and batch settings, dtype).
_DENSE, _MOE, _MLA = "llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"
EXTRAS: tuple[tuple[str, str, dict, tuple[str, ...]], ...] = tuple(
    (gpu, model, layout, extra)
    for gpu in ("h100-sxm-8", "b200-8")
    for model, layout, extra in (
        (_DENSE, {"tp": 1}, ("--quantization", "fp8")),
        (_DENSE, {"tp": 2}, ("--kv-cache-dtype", "fp8_e4m3")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "triton")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "fa3")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "trtllm_mha")),
        (_DENSE, {"tp": 2}, ("--dtype", "float16")),
        (_DENSE, {"tp": 4}, ("--pp-size", "2")),
        (_DENSE, {"tp": 2}, ("--page-size", "64", "--chunked-prefill-size", "4096", "--max-running-requests", "64")),
        (_DENSE, {"tp": 2}, ("--mem-fraction-static", "0.7", "--cuda-graph-max-bs", "64")),
        (_DENSE, {"tp": 2}, ("--disable-cuda-graph",)),
        (_DENSE, {"tp": 2}, ("--enable-torch-compile",)),
        (_DENSE, {"tp": 8}, ("--disable-custom-all-reduce",)),
        (_DENSE, {"tp": 8}, ("--enable-flashinfer-allreduce-fusion",)),
        (_DENSE, {"tp": 1}, ("--context-length", "8192")),
        (_MOE, {"tp": 8}, ("--ep-size", "8")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "triton")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "flashinfer_cutlass")),
        (_MOE, {"tp": 8}, ("--quantization", "fp8")),
        (_MOE, {"tp": 8, "dp_attention": True, "dp_size": 8}, ("--enable-dp-lm-head",)),
        (_MOE, {"tp": 8}, ("--moe-a2a-backend", "mooncake")),
        (_MLA, {"tp": 8}, ("--attention-backend", "flashmla")),
        (_MLA, {"tp": 8}, ("--attention-backend", "cutlass_mla")),
        (_MLA, {"tp": 8}, ("--attention-backend", "trtllm_mla")),
        (_MLA, {"tp": 8}, ("--kv-cache-dtype", "fp8_e4m3")),
        (_MLA, {"tp": 8, "dp_attention": True, "dp_size": 8, "a2a": "deepep"}, ("--deepep-mode", "low_latency")),
        (_MLA, {"tp": 8}, ("--enable-ep-moe",)),
        (_DENSE, {"tp": 2}, ("--attention-backend", "torch_native")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "flex_attention")),
        (_DENSE, {"tp": 2}, ("--prefill-attention-backend", "trtllm_mha", "--decode-attention-backend", "flashinfer")),
        (_DENSE, {"tp": 2}, ("--disable-prefill-cuda-graph",)),
        (_DENSE, {"tp": 2}, ("--disable-decode-cuda-graph",)),
        (_DENSE, {"tp": 2}, ("--max-total-tokens", "100000")),
        (_DENSE, {"tp": 2}, ("--chunked-prefill-size", "-1")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "deep_gemm")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "flashinfer_trtllm")),
        (_MLA, {"tp": 8}, ("--quantization", "fp8", "--moe-runner-backend", "flashinfer_trtllm")),
        (
            _MLA,
            {"tp": 8},
            (
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "2",
                "--speculative-eagle-topk",
                "2",
                "--speculative-num-draft-tokens",
                "4",
            ),
        ),
        # issue 31's audit: values of inputs the advisor models (KV-cache dtypes, a2a back-ends, MoE runners, attention
        # back-ends, flags it reads) that the branches left untaken above ask for; a release that lacks a value
        # rejects it, which is a result too.
        (_DENSE, {"tp": 2}, ("--kv-cache-dtype", "fp8_e5m2")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "fa3", "--kv-cache-dtype", "fp8_e5m2")),
        (_DENSE, {"tp": 2}, ("--kv-cache-dtype", "nvfp4")),
        (_DENSE, {"tp": 2}, ("--kv-cache-dtype", "fp4_mx_block16")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "fa4", "--kv-cache-dtype", "mxfp8")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "fa4")),
        (_DENSE, {"tp": 2}, ("--attention-backend", "trtllm_mha", "--page-size", "1")),
        (_DENSE, {"tp": 2}, ("--dtype", "float32")),
        (_DENSE, {"tp": 1}, ("--quantization", "mxfp8")),
        (_DENSE, {"tp": 2}, ("--enable-deterministic-inference",)),
        (_DENSE, {"tp": 2}, ("--disable-radix-cache",)),
        (_DENSE, {"tp": 2}, ("--enable-memory-saver",)),
        (_DENSE, {"tp": 8}, ("--flashinfer-allreduce-fusion-backend", "trtllm")),
        (_DENSE, {"tp": 8}, ("--enforce-disable-flashinfer-allreduce-fusion",)),
        (_DENSE, {"tp": 2}, ("--cuda-graph-max-bs-decode", "32")),
        *(
            (_MOE, {"tp": 8, "a2a": a2a}, ())
            for a2a in ("flashinfer", "megamoe", "deepep_v2", "nixl", "mori", "pplx", "flashinfer_megamoe", "mooncake")
        ),  # fmt: skip
        (_MOE, {"tp": 8, "dp_attention": True, "dp_size": 8, "a2a": "deepep"}, ()),
        (_MOE, {"tp": 4}, ("--pp-size", "2")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "flashinfer_cutedsl")),
        (_MOE, {"tp": 8}, ("--moe-runner-backend", "triton_kernel")),
        (_MOE, {"tp": 8}, ("--kv-cache-dtype", "fp8_e4m3", "--quantization", "fp8", "--ep-size", "8")),
        (_MLA, {"tp": 8}, ("--kv-cache-dtype", "nvfp4")),
        (_MLA, {"tp": 8}, ("--attention-backend", "cutedsl_mla")),
        (_MLA, {"tp": 8}, ("--attention-backend", "tokenspeed_mla")),
        (_MLA, {"tp": 8}, ("--attention-backend", "tokenspeed_mla", "--kv-cache-dtype", "fp8_e4m3")),
        (_MOE, {"tp": 8, "dp_attention": True, "dp_size": 1}, ()),
        (_MLA, {"tp": 8}, ("--speculative-algorithm", "NEXTN")),
        (_MLA, {"tp": 8, "dp_attention": True, "dp_size": 8, "a2a": "deepep_v2"}, ()),
        (_MLA, {"tp": 8, "a2a": "flashinfer"}, ()),
        (_MLA, {"tp": 8, "nnodes": 2}, ("--moe-runner-backend", "deep_gemm")),
        ("deepseek-v3.2", {"tp": 8}, ("--kv-cache-dtype", "fp8_e4m3")),
        ("deepseek-v3.2", {"tp": 8}, ("--attn-cp-size", "2")),
        ("deepseek-v3.2", {"tp": 8, "dp_attention": True, "dp_size": 8}, ()),
        ("gpt-oss-120b", {"tp": 8}, ("--moe-runner-backend", "flashinfer_mxfp4")),
        ("gpt-oss-120b", {"tp": 8}, ("--moe-runner-backend", "triton_kernel")),
        ("gpt-oss-120b", {"tp": 8}, ("--speculative-algorithm", "EAGLE3")),
        ("qwen3-next-80b-a3b", {"tp": 8}, ("--page-size", "64")),
        ("qwen3-next-80b-a3b", {"tp": 8}, ("--speculative-algorithm", "NEXTN")),
        ("nemotron-h-56b", {"tp": 8}, ("--disable-radix-cache",)),
        ("qwen3-vl-30b-a3b", {"tp": 8}, ("--mm-feature-transport", "cuda_ipc")),
        ("qwen3-vl-30b-a3b", {"tp": 8}, ("--max-running-requests", "512")),
    )
) + tuple(
    # SGLang sizes chunked prefill and the decode CUDA-graph batch by the GPU's memory tier: explicit values on each
    # GPU of the grid take the tiers' "already set" branches
    (gpu, _DENSE, {"tp": 1}, ("--chunked-prefill-size", "4096", "--cuda-graph-max-bs", "64"))
    for gpu in GPU_PROFILES
    if gpu not in ("h100-sxm-8", "b200-8")
)


def extra_scenarios() -> list[dict]:
    out = []
    for gpu, model, layout, extra in EXTRAS:
        sc = {"gpu": gpu, "model": model, "tp": 8, "nnodes": 1, "dp_attention": False, "dp_size": 1, "a2a": "none",
              **layout}  # fmt: skip
        dp = f"dpa{sc['dp_size']}" if sc["dp_attention"] else "dp1"
        sc["id"] = f"{gpu}/{model}/tp{sc['tp']}/nn{sc['nnodes']}/{dp}/{sc['a2a']}/cov[{' '.join(extra)}]"
        sc["speculative"] = list(extra)  # appended to the argv; run in an isolated-environment group
        out.append(sc)
    return out


# The config scenarios: each config at tp 8 on a Hopper and a Blackwell node and at tp 4 on an RTX PRO 6000 (SM120) node
# (the model overrides branch on the SM),
# and a MoE config also with DP attention and with DeepEP on Blackwell (the MoE and all-to-all overrides).
_ONE_NODE = {"nnodes": 1, "dp_attention": False, "dp_size": 1, "a2a": "none"}
CONFIG_LAYOUTS = (("h100-sxm-8", {"tp": 8, **_ONE_NODE}), ("b200-8", {"tp": 8, **_ONE_NODE}),
                  ("rtx-pro-6000-4", {"tp": 4, **_ONE_NODE}))  # fmt: skip
MOE_LAYOUTS = (("b200-8", {"tp": 8, **_ONE_NODE, "dp_attention": True, "dp_size": 8}),
               ("b200-8", {"tp": 8, **_ONE_NODE, "a2a": "deepep"}))  # fmt: skip
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")


def config_models() -> list[str]:
    """Every synthetic-* and named-* config directory present now (another session may add more)."""
    return sorted(
        p.parent.name for p in CONFIGS.glob("*/config.json") if p.parent.name.startswith((PREFIX, NAMED_PREFIX))
    )


def is_moe(model: str) -> bool:
    """Whether the config (or its text_config) names routed experts."""
    config = json.loads((CONFIGS / model / "config.json").read_text())
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return any(isinstance(c.get(k), int) and c.get(k, 0) > 1 for c in (config, text) for k in _EXPERT_KEYS)


def config_scenarios() -> list[dict]:
    return [
        {"id": scenario_id(gpu, model, layout), "gpu": gpu, "model": model, **layout}
        for model in config_models()
        for gpu, layout in CONFIG_LAYOUTS + (MOE_LAYOUTS if is_moe(model) else ())
    ]


def coverage_scenarios(limit: int | None = None) -> tuple[list[dict], list[dict]]:
    """(the conformance grid and the extras, the config scenarios): the runner isolates the environment of each of
    the latter, as it does for the configs and named grids."""
    main, configs = scenarios() + extra_scenarios(), config_scenarios()
    return (main, configs) if limit is None else (main[:limit], configs[: max(0, limit - len(main))])
