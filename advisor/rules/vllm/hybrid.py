"""The attention block size of a hybrid model (Mamba or linear-attention layers beside attention) up to v0.19.x.

HybridAttentionMambaModelConfig.verify_and_update_config (vllm/model_executor/models/config.py) raises the attention
block size until one attention page holds a layer's whole recurrent state: ``align * cdiv(state bytes, align *
attention bytes per token)``, align 16 (32 on SM10x for head size 256 up to v0.17.x, FlashInfer's kernel), attention bytes per token
``2 * kv heads per rank * head size * dtype bytes``. The state comes from the model class's
get_mamba_state_shape_from_config / get_mamba_state_dtype_from_config (vllm/model_executor/layers/mamba/mamba_utils.py,
MambaStateShapeCalculator): Mamba2 (Nemotron-H) and gated delta net (Qwen3-Next, Qwen3.5) are read here; other hybrid
families keep the block given. By v0.20.2 the block is settled later, at KV-cache set-up, so the config keeps 16.
"""

from __future__ import annotations

from math import prod

from advisor.models import dtype_bytes
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import attention_kind, fixup_names, uses_mla

HYBRID_BLOCK_AT_CONFIG: list[tuple[str, bool]] = [("0.12.0", True), ("0.20.2", False)]
# The 32-token alignment on SM10x at head size 256 (FlashInfer's kernel): up to v0.17.x; v0.19.1 aligns to 16 everywhere.
ALIGN_32_ON_SM10X: list[tuple[str, bool]] = [("0.12.0", True), ("0.19.1", False)]
# From v0.14.1 NemotronHForCausalLMConfig sets mamba_ssm_cache_dtype from the config (transformers' NemotronHConfig
# defaults it to float32); v0.12.0 keeps the model dtype for the SSM state.
NEMOTRON_SSM_DTYPE_FROM_CONFIG: list[tuple[str, bool]] = [("0.12.0", False), ("0.14.1", True)]
NEMOTRON_FIXUP = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _divide(n: int, tp: int) -> int:
    return n // tp


def state_bytes(model, tp: int, version: str) -> int | None:
    """One layer's recurrent state per sequence, in bytes; None for a family not read here."""
    c = dict(model.state_config)
    elem = model.dtype_bytes or 2
    if "linear_num_value_heads" in c:  # gated delta net: conv (kernel-1, conv_dim/tp), state (v heads/tp, v dim, k dim)
        k_heads, v_heads = c.get("linear_num_key_heads"), c["linear_num_value_heads"]
        k_dim, v_dim, kernel = (
            c.get("linear_key_head_dim"),
            c.get("linear_value_head_dim"),
            c.get("linear_conv_kernel_dim"),
        )
        if None in (k_heads, k_dim, v_dim, kernel):
            return None
        conv = (kernel - 1) * _divide(k_dim * k_heads * 2 + v_dim * v_heads, tp)
        return (conv + _divide(v_heads, tp) * v_dim * k_dim) * elem
    if "mamba_num_heads" in c:  # Mamba2 (Nemotron-H naming): conv (kernel-1, conv_dim/tp), ssm (heads/tp, dim, state)
        heads, dim, groups = c["mamba_num_heads"], c.get("mamba_head_dim"), c.get("n_groups")
        state, kernel = c.get("ssm_state_size"), c.get("conv_kernel")
        if None in (dim, groups, state, kernel):
            return None
        if groups % tp:  # groups replicated to follow the head shards (extra_groups_for_head_shards)
            groups = tp
        conv = (kernel - 1) * _divide(heads * dim + 2 * groups * state, tp)
        ssm_elem = elem
        if fixup_names(model, version) & NEMOTRON_FIXUP and at(NEMOTRON_SSM_DTYPE_FROM_CONFIG, version):
            ssm_elem = DTYPE_BYTES.get(str(c.get("mamba_ssm_cache_dtype") or "float32"), 4)
        return conv * elem + prod((_divide(heads, tp), dim, state)) * ssm_elem
    return None


def hybrid_block_size(s, version: str, block: int, kv_cache_dtype: str) -> int:
    """The block size after HybridAttentionMambaModelConfig (``block`` unchanged where it does not apply)."""
    model, cap = s.model, s.capability
    if (model is None or not at(HYBRID_BLOCK_AT_CONFIG, version) or attention_kind(model, version) != "hybrid"
            or uses_mla(model, version)):  # fmt: skip
        return block
    mamba = state_bytes(model, max(s.tp, 1), version)
    # a config that states no dtype runs in a 2-byte one (vLLM's auto dtype: bfloat16, float16 for some pooling models)
    kv_bytes = (dtype_bytes(model.dtype) or 2) if kv_cache_dtype == "auto" else (1 if kv_cache_dtype.startswith("fp8") else 2)
    if not mamba or not model.head_dim or not model.num_kv_heads or not kv_bytes:
        return block
    per_token = 2 * max(1, model.num_kv_heads // max(s.tp, 1)) * model.head_dim * kv_bytes
    wide = at(ALIGN_32_ON_SM10X, version) and cap is not None and cap[0] == 10 and model.head_dim == 256
    align = 32 if wide else 16
    needed = align * -(-mamba // (align * per_token))
    return needed if block < needed else block
