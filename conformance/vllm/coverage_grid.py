"""The scenarios ``python -m conformance vllm-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (profile, model, tp, the
engine arguments after ``--``). The extras are not conformance goldens (yet)."""

from __future__ import annotations

from conformance.vllm.grid import scenario_id, scenarios

# (profile, model id from the catalog, tp, engine arguments)
_DENSE, _MOE, _MLA = "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3"
EXTRAS: tuple[tuple[str, str, int, tuple[str, ...]], ...] = tuple(
    (profile, model, tp, overrides)
    for profile in ("h100-sxm-8", "b200-8")
    for model, tp, overrides in (
        (_DENSE, 1, ("--quantization", "fp8")),
        (_DENSE, 2, ("--kv-cache-dtype", "fp8")),
        (_DENSE, 2, ("--dtype", "float16")),
        (_DENSE, 2, ("--max-model-len", "8192")),
        (_DENSE, 4, ("--pipeline-parallel-size", "2")),
        (_DENSE, 2, ("--data-parallel-size", "2")),
        (_DENSE, 2, ("--no-enable-prefix-caching",)),
        (_DENSE, 2, ("--no-enable-chunked-prefill",)),
        (_DENSE, 2, ("--block-size", "32", "--gpu-memory-utilization", "0.8")),
        (_DENSE, 2, ("--max-num-batched-tokens", "4096")),
        (_DENSE, 2, ("-O2",)),
        (_DENSE, 2, ("--async-scheduling",)),
        (
            _DENSE,
            2,
            ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'),
        ),
        (_MOE, 4, ("--enable-expert-parallel",)),
        (_MOE, 4, ("--enable-expert-parallel", "--data-parallel-size", "2")),
        (_MLA, 8, ("--enable-expert-parallel",)),
        (_MLA, 8, ("--kv-cache-dtype", "fp8")),
    )
)


def coverage_scenarios(limit: int | None = None) -> list[dict]:
    out = scenarios() + [
        {"id": scenario_id(p, m, tp, o), "profile": p, "model": m, "tp": tp, "overrides": list(o)}
        for p, m, tp, o in EXTRAS
    ]
    return out if limit is None else out[:limit]
