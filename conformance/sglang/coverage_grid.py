"""The scenarios ``python -m conformance sglang-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (GPU, model, layout, flags).

The extras are not conformance goldens (yet): they measure how much of the resolution the inputs the advisor takes can
reach. Each is a grid scenario dict (conformance/sglang/grid.py) with an ``extra`` list of engine arguments.
"""

from __future__ import annotations

from conformance.sglang.grid import scenarios

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
    )
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


def coverage_scenarios(limit: int | None = None) -> list[dict]:
    out = scenarios() + extra_scenarios()
    return out if limit is None else out[:limit]
