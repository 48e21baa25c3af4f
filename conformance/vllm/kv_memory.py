"""Runs inside one vLLM release's environment (conformance.vllm.env): the release's own KV-cache arithmetic on real
KVCacheSpec objects, for each input of a JSON list, one JSON line out per input.

    python kv_memory.py INPUTS.json OUT.jsonl

Nothing here needs a GPU: the specs are the release's dataclasses, the functions are its pure-Python planning code
(check_enough_kv_cache_memory and its estimate_max_model_len binary search, the block count of its KV-cache config);
only the VllmConfig they read is a stand-in carrying the few fields they use (max_model_len, the context-parallel sizes,
num_gpu_blocks_override, the hybrid-manager switch). Standalone: it imports vllm, never the advisor.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
from types import SimpleNamespace

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "fp8": torch.float8_e4m3fn}
_ESTIMATE = re.compile(r"estimated maximum model length is (\d+)")


def _planning():
    """The module holding check_enough_kv_cache_memory: kv_cache_utils up to v0.30, kv_cache_planning from v0.33."""
    try:
        from vllm.v1.core import kv_cache_planning as planning  # noqa: PLC0415
    except ImportError:
        from vllm.v1.core import kv_cache_utils as planning  # noqa: PLC0415
    return planning


def _config(item: dict) -> SimpleNamespace:
    model = SimpleNamespace(max_model_len=item["max_model_len"], original_max_model_len=item["max_model_len"],
                            use_mla=item["mla"], hf_config=None)  # fmt: skip
    parallel = SimpleNamespace(decode_context_parallel_size=1, prefill_context_parallel_size=1, tensor_parallel_size=1,
                               pipeline_parallel_size=1, data_parallel_size=1, dcp_kv_cache_interleave_size=1,
                               cp_kv_cache_interleave_size=1)  # fmt: skip
    from vllm.config import CacheConfig  # noqa: PLC0415

    cache = CacheConfig(block_size=item["block_size"])  # the release's own, at its defaults (no GPU needed)
    if hasattr(cache, "get_resolved_kv_cache_layout"):  # v0.33: the pool's block bytes depend on the layout
        cache.kv_cache_layout = "NHD"  # FlashAttention's, as the engine core resolves it on CUDA
    scheduler = SimpleNamespace(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=item["batched_tokens"],
                                max_num_encoder_input_tokens=0, max_model_len=item["max_model_len"])  # fmt: skip
    return SimpleNamespace(model_config=model, parallel_config=parallel, cache_config=cache, scheduler_config=scheduler,
                           speculative_config=None, kv_transfer_config=None, compilation_config=None,
                           attention_config=SimpleNamespace(hisparse_config=None),
                           device_config=SimpleNamespace(device_type="cuda"))  # fmt: skip


def _spec(item: dict):
    from vllm.v1 import kv_cache_interface as kvi  # noqa: PLC0415

    kind = kvi.MLAAttentionSpec if item["mla"] else kvi.FullAttentionSpec
    wanted = {"block_size": item["block_size"], "num_kv_heads": item["num_kv_heads"], "head_size": item["head_size"],
              "dtype": DTYPES[item["dtype"]]}  # fmt: skip
    names = {f.name for f in dataclasses.fields(kind)}
    if "head_size_v" in names and not item["mla"]:  # later releases keep the value head apart (MLA: none, its default)
        wanted["head_size_v"] = item["head_size"]
    return kind(**{k: v for k, v in wanted.items() if k in names})


def _num_blocks(planning, config, specs: dict, available: int) -> int:
    """The block count the release's KV-cache config gets from ``available`` bytes."""
    groups = planning.get_kv_cache_groups(config, dict(specs))
    if hasattr(planning, "get_kv_cache_config_from_groups"):
        params = inspect.signature(planning.get_kv_cache_config_from_groups).parameters
        if "available_memory" in params:
            return planning.get_kv_cache_config_from_groups(config, groups, available).num_blocks
    # v0.33: get_kv_cache_configs divides by the bytes one block takes in the shared pool (_pool_bytes_per_block, the
    # pure form of what its config builder places)
    return available // planning._pool_bytes_per_block(config, groups)


def run(item: dict) -> dict:
    planning = _planning()
    config = _config(item)
    specs = {f"model.layers.{i}.self_attn.attn": _spec(item) for i in range(item["layers"])}
    out: dict = {"page_size_bytes": next(iter(specs.values())).page_size_bytes}
    try:
        planning.check_enough_kv_cache_memory(config, specs, item["available"])
        out.update(ok=True, message=None, estimated_max_model_len=None)
    except ValueError as exc:
        found = _ESTIMATE.search(str(exc))
        out.update(ok=False, message=str(exc), estimated_max_model_len=int(found.group(1)) if found else None)
    config.model_config.max_model_len = item["max_model_len"]  # the estimate restores it only from some release on
    out["num_blocks"] = _num_blocks(planning, config, specs, item["available"]) if item["available"] > 0 else None
    return out


def main(inputs: str, out: str) -> int:
    with open(inputs) as f:
        items = json.load(f)
    with open(out, "w") as f:
        for item in items:
            try:
                result = run(item)
            except Exception as exc:  # one input's failure is recorded, the rest still run
                result = {"error": f"{type(exc).__name__}: {exc}"}
            f.write(json.dumps({"input": item, **result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
