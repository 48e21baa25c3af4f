"""The scenarios ``python -m conformance vllm-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (profile, model, tp, the
engine arguments after ``--``). The extras are not conformance goldens (yet). Then every synthetic-* config and every
named-* config whose architecture the release's model registry lists (advisor/rules/vllm/architectures.json), present at
run time under tests/conformance/configs/, on a Hopper at tp 1 and a Blackwell at tp 8: the branches keyed on an
architecture or a config property."""

from __future__ import annotations

import json

from conformance.vllm.arch_grid import CONFIGS, DRAFTS, REPO
from conformance.vllm.grid import scenario_id, scenarios

ARCHITECTURES = REPO / "advisor" / "rules" / "vllm" / "architectures.json"
REGISTRY = "model_executor/models/registry.py:"
CONFIG_LAYOUTS = (("h100-sxm-8", 1), ("b200-8", 8))

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
        # issue 31's audit: values of flags the advisor reads that the branches left untaken above ask for
        (_DENSE, 2, ("--enforce-eager",)),
        (_DENSE, 2, ("-O0",)),
        (_DENSE, 2, ("-O3",)),
        (_DENSE, 2, ("--max-num-seqs", "64")),
        (_DENSE, 2, ("--kv-cache-dtype", "fp8_e5m2")),
        (_DENSE, 2, ("--attention-backend", "FLASHINFER")),
        (_DENSE, 2, ("--attention-backend", "TRITON_ATTN")),
        (_DENSE, 2, ("--disable-custom-all-reduce",)),
        (_DENSE, 2, ("--no-async-scheduling",)),
        (_DENSE, 2, ("--dtype", "float32")),
        (_DENSE, 8, ("--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1")),
        (_MLA, 8, ("--block-size", "64")),
        (_MLA, 8, ("--attention-backend", "FLASHINFER_MLA")),
        (_MOE, 4, ("--quantization", "fp8", "--enable-expert-parallel")),
    )
)


def registry_names(release: str) -> set[str]:
    """The architectures the release's model registry lists."""
    names = json.loads(ARCHITECTURES.read_text())["releases"].get(release, {})
    return {name for name, places in names.items() if any(p.startswith(REGISTRY) for p in places)}


def config_models(release: str) -> list[str]:
    """The synthetic-* configs, and the named-* ones the release's registry serves (a refused architecture takes no
    branch past the registry's check)."""
    served = registry_names(release)
    out = []
    for path in sorted(CONFIGS.glob("*/config.json")):
        name = path.parent.name
        if name in DRAFTS:
            continue
        if name.startswith("synthetic-") or (name.startswith("named-") and name.removeprefix("named-") in served):
            out.append(str(path.parent.relative_to(REPO)))
    return out


def coverage_scenarios(release: str, limit: int | None = None) -> tuple[list[dict], list[dict]]:
    """(the conformance grid and the extras, the config scenarios; the latter in arch_grid.py's form)."""
    main = scenarios() + [
        {"id": scenario_id(p, m, tp, o), "profile": p, "model": m, "tp": tp, "overrides": list(o)}
        for p, m, tp, o in EXTRAS
    ]
    configs = [
        {"id": f"{profile}|{model}|tp{tp}|", "profile": profile, "model": model, "tp": tp, "overrides": []}
        for model in config_models(release)
        for profile, tp in CONFIG_LAYOUTS
    ]
    return (main, configs) if limit is None else (main[:limit], configs[: max(0, limit - len(main))])
