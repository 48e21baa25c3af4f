"""The prefill (piecewise) CUDA graph as settings of the memory decision: whether SGLang captures it, and the largest
number of tokens it captures. Whether it is on is memory.prefill_graph_kind's verdict, the one that sizes its reserve.

SGLang's fields: up to v0.5.9 --enable-piecewise-cuda-graph (off by default), v0.5.10 to v0.5.13
--disable-piecewise-cuda-graph (on by default, switched off by _handle_piecewise_cuda_graph), both with
piecewise_cuda_graph_max_tokens; from v0.5.14 the prefill phase of cuda_graph_config (backend, max_bs), whose max_bs is
reported as piecewise_cuda_graph_max_tokens.
"""

from __future__ import annotations

from advisor.rules.engine import Scenario, Setting, parse_release
from advisor.rules.releases import within
from advisor.rules.sglang.attention import attention_decision, attention_kind
from advisor.rules.sglang.common import MEMORY_HOOK, SERVER_ARGS
from advisor.rules.sglang.moe_runner import moe_runner_decision

# piecewise_cuda_graph_max_tokens (from v0.5.14 cuda_graph_config.prefill.max_bs) when not given: the chunked-prefill
# size as _handle_gpu_memory_settings picked it (before DP attention divides it); from v0.5.8 2048 for MLA models
# ("For MLA backend ... we set the max tokens to 2048 by default", PR #15927; server_args.py v0.5.8).
MLA_MAX_TOKENS, MLA_MAX_TOKENS_FROM = 2048, "0.5.8"
# v0.5.23 makes it the chunked-prefill size capped at 8192 ("cap MLA capture at 8192 tokens"; arg_groups/memory_hook.py
# handle_gpu_memory_settings).
MLA_MAX_TOKENS_CAP, MLA_MAX_TOKENS_CAP_FROM = 8192, "0.5.23"
# From v0.5.14 the size is cuda_graph_config.prefill.max_bs, set by the same rule (server_args.py
# _handle_gpu_memory_settings, arg_groups/memory_hook.py from v0.5.19), then clamped only where the graph is captured:
# From v0.5.16 with DP attention it is re-clamped to the chunked-prefill size per DP rank, "so breakable CUDA graph
# capture never exceeds the MoE all-to-all's max_num_tokens budget" (server_args.py _handle_data_parallelism,
# arg_groups/parallel_hook.py from v0.5.19). Before v0.5.17 DP attention keeps the prefill graph off, so nothing changes.
DP_RECLAMP_FROM = "0.5.16"
# From v0.5.17 with DeepEP the breakable graph's sizes are generated from 2048 before max_bs is resolved and rounded up to
# multiples of 8 ("Non-multiple-of-8 prefill buckets can hang DeepEP a2a capture"), and max_bs becomes the largest
# (server_args.py _apply_deepep_adjustments, arg_groups/cuda_graph_hook.py from v0.5.19).
DEEPEP_MAX_BS_FROM = "0.5.17"
CHUNKED_PREFILL = "--chunked-prefill-size"
# From v0.5.10 the default size is capped "For Llama2 series models" at 4096, by "llama-2" in the model path
# (server_args.py _handle_gpu_memory_settings, arg_groups/memory_hook.py from v0.5.19). The cap by --max-total-tokens
# beside it is not modelled (the advisor does not read that argument).
LLAMA2_MAX_TOKENS, LLAMA2_CAP_FROM = 4096, "0.5.10"
# v0.5.10 to v0.5.12 switch the piecewise graph off for these MoE runners ("bypassed topk is incompatible with
# torch.compile"; server_args.py _handle_moe_kernel_config), but GPT-OSS. This runs after _handle_gpu_memory_settings,
# so the reserve for the graph stays in mem_fraction_static.
TOPK_BYPASS_RUNNERS = frozenset({"flashinfer_trtllm", "flashinfer_mxfp4"})
TOPK_BYPASS_FIRST, TOPK_BYPASS_LAST = "0.5.10", "0.5.12"
# From v0.5.15 the prefill graph is switched off for DeepSeek V3 (architectures has DeepseekV3ForCausalLM) whose prefill
# attention backend is trtllm_mla ("a captured prefill graph forces a FlashAttention fallback that regresses prefill";
# server_args.py _disable_prefill_cuda_graph_for_deepseek_trtllm_mla, arg_groups/cuda_graph_hook.py from v0.5.19), unless
# the prefill graph backend is passed; also after the memory reserve.
DSR1_TRTLLM_MLA_OFF_FROM = "0.5.15"


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """The prefill (piecewise) CUDA-graph capture sizes up to max_tokens (v0.5.14 _generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64), *range(1280, 4097, 256),
             *range(4608, max_tokens + 1, 512)]  # fmt: skip
    return [n for n in sizes if n <= max_tokens]


DEEPEP_PREFILL_MAX_BS = (
    2048  # v0.5.17 server_args.py _apply_deepep_adjustments: the breakable graph's sizes with DeepEP
)


# Inkling opts into the full prefill CUDA graph before the breakable graph's checks (v0.5.18-v0.5.22 server_args.py
# ServerArgs._apply_inkling_prefill_cuda_graph_default, v0.5.23 arg_groups/cuda_graph_hook.py
# apply_inkling_prefill_cuda_graph_default), for the names the release lists there (the model and its MTP draft), so
# neither its multimodal wrapper nor DP attention or an a2a backend turns the prefill graph off.
FULL_PREFILL_GRAPH_STEPS = (
    "server_args.py:ServerArgs._apply_inkling_prefill_cuda_graph_default",
    "arg_groups/cuda_graph_hook.py:apply_inkling_prefill_cuda_graph_default",
)


def full_prefill_graph(model, release: str) -> bool:
    """The release sets the full prefill graph for this model (FULL_PREFILL_GRAPH_STEPS)."""
    from advisor.rules.sglang.architectures import loaded_architecture, placed_in

    return model is not None and placed_in(loaded_architecture(model, release), release, *FULL_PREFILL_GRAPH_STEPS)


# MuseGlimmer's step (arg_groups/cuda_graph_hook.py apply_muse_glimmer_prefill_cuda_graph_max_bs_default, v0.5.18+, for
# the names the release lists there) sets cuda_graph_max_bs_prefill to 512 unless it is given, before the prefill phase
# is resolved: the graph captures up to 512 tokens and its reserve counts the sizes up to 512. Not modelled with DeepEP
# (whose own sizes are generated in the same hook).
MUSE_GLIMMER_STEP = "arg_groups/cuda_graph_hook.py:apply_muse_glimmer_prefill_cuda_graph_max_bs_default"
MUSE_GLIMMER_MAX_BS = 512
PREFILL_MAX_BS_FLAG = "--cuda-graph-max-bs-prefill"


def step_prefill_max_bs(s: Scenario, release: str) -> int | None:
    """The prefill graph's largest size a model step sets (MuseGlimmer's 512); None: the default rule decides."""
    from advisor.rules.sglang.architectures import loaded_architecture, placed_in

    if s.model is None or s.flag(PREFILL_MAX_BS_FLAG) or s.intent.moe_a2a_backend == "deepep":
        return None
    return MUSE_GLIMMER_MAX_BS if placed_in(loaded_architecture(s.model, release), release, MUSE_GLIMMER_STEP) else None


def deepep_prefill_graph_sizes() -> list[int]:
    """With DeepEP the breakable prefill graph captures sizes up to 2048, rounded up to multiples of 8 (v0.5.17)."""
    return sorted({(n + 7) // 8 * 8 for n in prefill_graph_sizes(DEEPEP_PREFILL_MAX_BS)})


def where(release: tuple[int, ...]) -> str:
    """The file that sets the prefill graph's size: server_args.py, arg_groups/memory_hook.py from v0.5.19."""
    return MEMORY_HOOK if release >= (0, 5, 19) else SERVER_ARGS


def prefill_graph_settings(
    s: Scenario, release: str, prefill_graph: str | None, chunk: int | None
) -> tuple[tuple[Setting, ...], str]:
    """(the settings piecewise_cuda_graph and piecewise_cuda_graph_max_tokens, a note saying why). ``prefill_graph``:
    memory.prefill_graph_kind's verdict (None: off); ``chunk``: the chunked-prefill size before DP attention divides it
    (None when the GPU memory is unknown)."""
    given = s.int_flag(CHUNKED_PREFILL)
    if given is not None:
        chunk = given
    r = parse_release(release)
    dp = s.intent.dp_size if s.intent.dp_attention and s.intent.dp_size > 1 else 1
    deepep_sizes = (prefill_graph is not None and r >= parse_release(DEEPEP_MAX_BS_FROM)
                    and s.intent.moe_a2a_backend == "deepep" and not full_prefill_graph(s.model, release))  # fmt: skip
    stepped = step_prefill_max_bs(s, release)
    if stepped is not None:
        max_tokens, why = stepped, f"up to {stepped} tokens, set by the model's step ({MUSE_GLIMMER_STEP})"
    elif deepep_sizes:  # set before the default, which then stands aside
        max_tokens = deepep_prefill_graph_sizes()[-1]
        why = f"up to {max_tokens} tokens, DeepEP's breakable graph sizes"
    elif attention_kind(s.model, release) == "mla" and r >= parse_release(MLA_MAX_TOKENS_CAP_FROM):
        max_tokens = None if chunk is None else min(MLA_MAX_TOKENS_CAP, chunk)
        why = f"up to the chunked-prefill size capped at {MLA_MAX_TOKENS_CAP} tokens for MLA models"
    elif attention_kind(s.model, release) == "mla" and r >= parse_release(MLA_MAX_TOKENS_FROM):
        max_tokens, why = MLA_MAX_TOKENS, f"up to {MLA_MAX_TOKENS} tokens for MLA models"
    else:
        max_tokens, why = chunk, ("up to the chunked-prefill size (unknown: GPU memory unknown)" if chunk is None
                                  else f"up to {chunk} tokens, the chunked-prefill size")  # fmt: skip
    if (max_tokens is not None and max_tokens > LLAMA2_MAX_TOKENS and r >= parse_release(LLAMA2_CAP_FROM)
            and not deepep_sizes and s.model is not None and "llama-2" in s.model.id.lower()):  # fmt: skip
        max_tokens, why = LLAMA2_MAX_TOKENS, f"up to {LLAMA2_MAX_TOKENS} tokens for Llama 2 models (by the model path)"
    on, off_why = prefill_graph is not None, ""
    if on and within(r, TOPK_BYPASS_FIRST, TOPK_BYPASS_LAST) and s.model is not None:
        runner = moe_runner_decision(s, release).value
        if runner in TOPK_BYPASS_RUNNERS and s.model.architecture != "GptOssForCausalLM":
            on, off_why = False, f" (off for the MoE runner {runner}, after its memory reserve was counted)"
    if (on and r >= parse_release(DSR1_TRTLLM_MLA_OFF_FROM) and s.model is not None
            and s.model.architecture == "DeepseekV3ForCausalLM" and not s.flag("--cuda-graph-backend-prefill")
            and attention_decision(s, release).value == "trtllm_mla"):  # fmt: skip
        on, off_why = False, " (off for DeepSeek V3 on trtllm_mla, after its memory reserve was counted)"
    # after the switches above: a graph they turned off keeps its size (the v0.5.23 b200-8/deepseek-v3/dpa8 goldens)
    if (on and dp > 1 and r >= parse_release(DP_RECLAMP_FROM) and chunk is not None and max_tokens is not None
            and max_tokens > chunk // dp):  # fmt: skip
        max_tokens, why = chunk // dp, f"up to {chunk // dp} tokens, the chunked-prefill size per DP-attention rank"
    note = f"prefill (piecewise) CUDA graph {'on' if on else 'off'}{off_why}; {why} (sglang v{release}, {where(r)})"
    return (Setting("piecewise_cuda_graph", on), Setting("piecewise_cuda_graph_max_tokens", max_tokens)), note
