"""`advisor layouts`: the candidate layouts, the KV cache each engine allocates, and the recommendation.

The KV-cache checks hand-compute only the engine's KV formula (SGLang's profile / cell size, vLLM's blocks); the memory
fraction comes from the plan's rules and the free memory before load from the stated estimate
(advisor/rules/startup_overhead.py), so these tests stay right when the per-release mem_fraction_static changes.
"""

from __future__ import annotations

import json

import pytest
from cli_json import command_json, invoke

from advisor.context import Options, plan_for, resolve
from advisor.models import catalog_spec
from advisor.rules.registry import get as get_engine
from advisor.rules.startup_overhead import free_before_load_mib
from advisor.rules.vllm.memory import default_gpu_memory_utilization

MIB = 1024**2
GIB = 1024**3
# vLLM's start-up model: advisor/rules/vllm/startup.py.
needs_vllm_startup = pytest.mark.skipif(get_engine("vllm").startup is None, reason="vLLM has no start-up model yet")


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


def layouts_json(*args: str) -> dict:
    return command_json("layouts", "layouts.schema.json", *args)


def row(data: dict, tp: int, dp_attention: bool = False) -> dict:
    return next(r for r in data["layouts"] if r["tp"] == tp and r["dp_attention"] is dp_attention)


def smallest_gpu_bytes(profile: str) -> int:
    facts, _, _ = resolve(Options(profile=profile, engine="bundled"))
    return min(g.memory_total_mib for g in facts.engine_gpus) * MIB


def sglang_tokens(profile: str, tp: int, fraction: float, weights: float, per_token: int) -> int:
    """_profile_available_bytes: (free before load - weights) - free before load x (1 - mem_fraction_static), GiB;
    DefaultPoolConfigurator: // cell_size (page size 1)."""
    pre = free_before_load_mib(smallest_gpu_bytes(profile) / MIB, tp) * MIB / GIB
    rest = (pre - weights / GIB) - pre * (1 - fraction)
    return int(rest * (1 << 30)) // per_token


def rules_fraction(profile: str, model: str, tp: int, **intent) -> float:
    """mem_fraction_static as the SGLang rules give it for this layout (not hand-computed)."""
    facts, spec, base = resolve(Options(profile=profile, model=model, engine="sglang"))
    from dataclasses import replace

    plan = plan_for(facts, spec, replace(base, tp=tp, **intent))
    return plan.decision("memory_defaults").value["mem_fraction_static"]


# -- the done-when scenarios -------------------------------------------------------------------------------------------


def test_qwen3_235b_fits_only_at_tp8_on_h100_and_tp8_is_recommended():
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-235B-A22B", "--engine", "sglang")
    assert [r["tp"] for r in data["layouts"] if r["fits"]] == [8]
    assert all(r["fits"] is False and r["why_not"] for r in data["layouts"] if r["tp"] < 8)
    fitting = row(data, 8)
    assert data["layouts"][data["recommended"]] == fitting
    assert "tp 8" in data["reason"]
    assert data["context_len"] == 40960  # SGLang's own default: the model's context
    assert "startup_out_of_memory" in row(data, 4)["problems"]
    assert "startup_out_of_memory" in row(data, 8, True)["problems"]  # DP attention replicates the attention


def test_qwen3_30b_fits_at_tp_1_2_4_with_more_kv_each_step():
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--engine", "sglang")
    rows = [row(data, tp) for tp in (1, 2, 4)]
    assert all(r["fits"] for r in rows)
    tokens = [r["kv_cache_tokens"] for r in rows]
    assert tokens[0] > 0 and tokens[0] < tokens[1] < tokens[2]
    assert [r["max_concurrency"] for r in rows] == [t // 40960 for t in tokens]


# -- KV cache against the engines' formulas ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "tp", "per_token"),
    [
        # max(1, kv_heads // tp) * (head_dim + v_head_dim) * layers * 2 bytes (bf16)
        ("Qwen/Qwen3-30B-A3B", 1, 4 * 256 * 48 * 2),
        ("Qwen/Qwen3-30B-A3B", 2, 2 * 256 * 48 * 2),
        ("Qwen/Qwen3-235B-A22B", 8, 1 * 256 * 94 * 2),  # 4 KV heads over 8 ranks: one replicated head per rank
        ("meta-llama/Llama-3.1-8B-Instruct", 2, 4 * 256 * 32 * 2),
    ],
)
def test_sglang_kv_tokens_follow_the_profile_formula(model, tp, per_token):
    data = layouts_json("--profile", "h100-sxm-8", "--model", model, "--engine", "sglang")
    r = row(data, tp)
    fraction = rules_fraction("h100-sxm-8", model, tp)
    assert r["mem_fraction_static"] == fraction
    weights = catalog_spec(model).num_params * 2 / tp
    assert r["kv_cache_tokens"] == sglang_tokens("h100-sxm-8", tp, fraction, weights, per_token)
    assert r["weights_gib_per_gpu"] == round(weights / 1024**3, 2)


def test_sglang_mla_uses_the_compressed_latent():
    """DeepSeek-V3 (fp8 weights, bf16 KV): (kv_lora_rank 512 + qk_rope_head_dim 64) * 61 layers * 2 bytes, any tp."""
    data = layouts_json("--profile", "h200-8", "--model", "deepseek-ai/DeepSeek-V3", "--engine", "sglang")
    r = row(data, 8)
    assert r["fits"] is True
    fraction = rules_fraction("h200-8", "deepseek-ai/DeepSeek-V3", 8)
    spec = catalog_spec("deepseek-ai/DeepSeek-V3")
    weights = spec.num_params * spec.bytes_per_param() / 8  # the FP8 block checkpoint, scales included
    assert r["kv_cache_tokens"] == sglang_tokens("h200-8", 8, fraction, weights, (512 + 64) * 61 * 2)
    assert {x["tp"] for x in data["layouts"] if x["fits"]} == {8}  # with and without DP attention


def test_sglang_dp_attention_pools_per_rank():
    """DP attention: attention tp = tp / dp = 1, so each pool stores all 4 KV heads; one pool per DP rank; attention and
    embedding weights are replicated."""
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B", "--engine", "sglang")
    r, plain = row(data, 4, True), row(data, 4)
    assert r["dp_size"] == 4 and r["kv_pools"] == 4
    assert r["weights_gib_per_gpu"] > plain["weights_gib_per_gpu"]
    fraction = rules_fraction("h100-sxm-8", "Qwen/Qwen3-30B-A3B", 4, dp_attention=True, dp_size=4)
    spec = catalog_spec("Qwen/Qwen3-30B-A3B")
    replicated = 48 * (2048 * 32 * 128 * 2 + 2048 * 4 * 128 * 2) + spec.vocab_size * 2048  # attention + embedding
    weights = ((spec.num_params - replicated) / 4 + replicated) * 2
    assert r["weights_gib_per_gpu"] == round(weights / 1024**3, 2)
    assert r["kv_cache_tokens"] == sglang_tokens("h100-sxm-8", 4, fraction, weights, 4 * 256 * 48 * 2)
    assert r["max_concurrency"] == 4 * (r["kv_cache_tokens"] // 40960)
    assert "flashinfer_allreduce_fusion" not in r["enabled"]  # DP attention blocks the fusion


def vllm_reserve(profile: str, model: str, tp: int) -> float:
    """The plan's estimate of what vLLM's profile run measures (activations, non-torch memory, CUDA graphs)."""
    return plan_for(*resolve(Options(profile=profile, model=model, engine="vllm", tp=tp))).startup.reserve_bytes


@needs_vllm_startup
@pytest.mark.parametrize(
    ("model", "tp", "per_token_layer"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 1, 8 * 2 * 128 * 2),  # kv heads / tp * (K + V) * head_dim * bf16
        ("meta-llama/Llama-3.1-8B-Instruct", 2, 4 * 2 * 128 * 2),
        ("Qwen/Qwen3-235B-A22B", 8, 1 * 2 * 128 * 2),
    ],
)
def test_vllm_kv_tokens_follow_gpu_memory_utilization(model, tp, per_token_layer):
    """gpu_memory_utilization x total, less the weights and the estimated profile-run reserve, cut into 16-token
    blocks over all layers (get_num_blocks)."""
    data = layouts_json("--profile", "h100-sxm-8", "--model", model, "--engine", "vllm")
    r = row(data, tp)
    utilization = default_gpu_memory_utilization(data["engine"]["rules"])  # the newest release's default
    assert r["gpu_memory_utilization"] == utilization and r["mem_fraction_static"] is None
    spec = catalog_spec(model)
    weights = spec.num_params * 2 / tp
    available = int(smallest_gpu_bytes("h100-sxm-8") * utilization - weights - vllm_reserve("h100-sxm-8", model, tp))
    page = 16 * per_token_layer * spec.num_layers  # one 16-token block over all layers
    assert r["kv_cache_tokens"] == available // page * 16
    assert all(not x["dp_attention"] for x in data["layouts"])  # DP attention is SGLang's


@needs_vllm_startup
def test_vllm_mla_block_holds_one_latent_per_token():
    """MLAAttentionSpec: block_size x 1 x (kv_lora_rank + qk_rope_head_dim) x dtype, no separate K and V, in blocks of
    the plan's block size (vllm/memory.py's MLA forcing)."""
    model = "deepseek-ai/DeepSeek-V3"
    data = layouts_json("--profile", "h200-8", "--model", model, "--engine", "vllm")
    r = row(data, 8)
    spec = catalog_spec(model)
    weights = spec.num_params * spec.bytes_per_param() / 8  # the FP8 block checkpoint, scales included
    reserve = vllm_reserve("h200-8", model, 8)
    available = int(smallest_gpu_bytes("h200-8") * r["gpu_memory_utilization"] - weights - reserve)
    assert r["gpu_memory_utilization"] == default_gpu_memory_utilization(data["engine"]["rules"])
    plan = plan_for(*resolve(Options(profile="h200-8", model=model, engine="vllm", tp=8)))
    block = plan.decision("memory_defaults").value["block_size"]  # from v0.19.1 no MLA backend forces its own
    assert r["fits"] is True and r["kv_cache_tokens"] == available // (block * 576 * 2 * 61) * block


@needs_vllm_startup
def test_vllm_refuses_when_one_sequence_does_not_fit():
    """vLLM will not start unless one max_model_len sequence fits its KV cache: Llama 8B on one 24 GB GPU holds about
    50k tokens, not one 131072-token sequence; over two GPUs it does."""
    data = layouts_json("--profile", "rtx-4090-2", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--engine", "vllm",
                        "--context-len", "131072")  # fmt: skip
    tp1, tp2 = row(data, 1), row(data, 2)
    assert tp1["fits"] is False and 0 < tp1["kv_cache_tokens"] < 131072 and "kv_cache_too_small" in tp1["why_not"]
    assert tp2["fits"] is True and tp2["kv_cache_tokens"] >= 131072
    assert data["layouts"][data["recommended"]] == tp2


def test_bundled_runtime_preallocates_slots():
    """The bundled runtime's cache is --max-batch-size slots of --max-model-len tokens, the default sequence length."""
    from launcher.engines import RUNTIME_MAX_BATCH_SIZE, RUNTIME_MAX_MODEL_LEN

    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-8B", "--engine", "bundled")
    r = row(data, 1)
    assert data["context_len"] == RUNTIME_MAX_MODEL_LEN
    assert r["kv_cache_tokens"] == RUNTIME_MAX_BATCH_SIZE * RUNTIME_MAX_MODEL_LEN
    assert r["fits"] is True and r["max_concurrency"] == RUNTIME_MAX_BATCH_SIZE
    assert data["layouts"][data["recommended"]]["tp"] == 1
    longer = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-8B", "--engine", "bundled",
                          "--context-len", "4096")  # fmt: skip
    # --context-len is the runtime's --max-model-len: it preallocates the longer slots, and the command says so
    assert longer["context_len"] == 4096 and row(longer, 1)["kv_cache_tokens"] == RUNTIME_MAX_BATCH_SIZE * 4096
    assert row(longer, 1)["max_concurrency"] == RUNTIME_MAX_BATCH_SIZE
    plan = plan_for(*resolve(Options(profile="h100-sxm-8", model="Qwen/Qwen3-8B", engine="bundled",
                                     overrides=("--max-model-len", "4096"))))  # fmt: skip
    assert plan.startup.kv_tokens == row(longer, 1)["kv_cache_tokens"] and "--max-model-len" in plan.argv


def test_no_gpu_machine_says_so():
    data = layouts_json("--profile", "cpu-only", "--engine", "sglang", "--model", "Qwen/Qwen3-8B")
    assert [(r["tp"], r["fits"], r["why_not"]) for r in data["layouts"]] == [(1, None, "no GPU")]
    assert data["recommended"] is None and data["reason"].startswith("this machine has no GPU")


def test_cpu_machine_cannot_tell_for_the_bundled_demo():
    data = layouts_json("--profile", "cpu-only")
    assert [r["tp"] for r in data["layouts"]] == [1, 2]
    assert all(r["fits"] is None for r in data["layouts"])
    assert data["recommended"] is None and "host memory" in data["reason"]


def test_nnodes_multiplies_the_candidates():
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-235B-A22B", "--engine", "sglang",
                        "--nnodes", "2")  # fmt: skip
    assert sorted({r["tp"] for r in data["layouts"]}) == [2, 4, 8, 16]
    assert all(r["nnodes"] == 2 for r in data["layouts"])
    assert data["layouts"][data["recommended"]]["tp"] == 16  # tp 8 holds only 5 sequences of 40960 tokens


def test_context_len_changes_concurrency_and_is_validated():
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-235B-A22B", "--engine", "sglang",
                        "--context-len", "8192")  # fmt: skip
    r = row(data, 8)
    assert data["context_len"] == 8192 and r["max_concurrency"] == r["kv_cache_tokens"] // 8192
    assert "at least 8 sequences" in data["reason"]
    result = invoke("layouts", "--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-8B", "--engine", "sglang",
                    "--context-len", "99999")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: --context-len 99999 (the engine's --context-length): --context-length 99999"
        " is above the 40960 tokens sglang"
    )
    assert "pass --context-length 40960 or less" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(("engine", "flag"), [("sglang", "--context-length"), ("vllm", "--max-model-len")])
def test_context_len_is_held_to_the_engines_own_bound(tmp_path, engine, flag):
    """The bound is what the engine derives (here RoPE scaling x4 over max_position_embeddings 4096), not
    max_position_embeddings: 16384 plans, 16385 is the engine's start-up refusal as a usage error."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
              "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 2, "intermediate_size": 2048,
              "vocab_size": 32000, "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
              "rope_scaling": {"rope_type": "linear", "factor": 4.0}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    common = ("--profile", "h100-sxm-8", "--model", str(tmp_path), "--engine", engine)
    assert layouts_json(*common, "--context-len", "16384")["context_len"] == 16384
    result = invoke("layouts", *common, "--context-len", "16385")
    assert result.exit_code == 2 and f"pass {flag} 16384 or less" in result.stderr
    assert result.stderr.count("\n") == 1


def test_bundled_context_len_is_held_to_max_position_embeddings():
    """The bundled runtime refuses a --max-model-len above max_position_embeddings (launcher/runtime/worker.py)."""
    result = invoke("layouts", "--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-8B", "--engine", "bundled",
                    "--context-len", "40961")  # fmt: skip
    assert result.exit_code == 2
    assert (
        result.stderr
        == "error: --context-len 40961 is out of range; pass 1..40960 (the model's max_position_embeddings)\n"
    )


def test_human_table_marks_the_recommended_row():
    result = invoke("layouts", "--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-235B-A22B", "--engine", "sglang")
    assert result.exit_code == 0, result.output
    marked = [line for line in result.stdout.splitlines() if line.startswith("| * ")]
    assert len(marked) == 1 and "| 8 " in marked[0] and "yes" in marked[0]
    assert "recommended (*): tp 8" in result.stdout
    assert "tp 4: free before load 78.6 GiB - weights 109.5 GiB" in result.stdout  # why the smaller ones do not fit


def test_machine_wide_errors_do_not_block_the_recommendation():
    """A flashinfer mismatch is an error in every layout: about the machine, so the choice still stands."""
    data = layouts_json("--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-235B-A22B", "--engine", "sglang",
                        "--with-package", "flashinfer-python==0.6.12",
                        "--with-package", "flashinfer-jit-cache==0.6.11+cu128")  # fmt: skip
    assert all("flashinfer_version_mismatch" in r["problems"] for r in data["layouts"])
    assert data["layouts"][data["recommended"]]["tp"] == 8
    assert "flashinfer_version_mismatch" in data["reason"]
