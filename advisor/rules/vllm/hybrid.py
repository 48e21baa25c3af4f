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

from math import lcm

from advisor.models import dtype_bytes
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import attention_kind, fixup_names, uses_mla
from advisor.rules.vllm.scheduling import switch_decision

HYBRID_BLOCK_AT_CONFIG: list[tuple[str, bool]] = [("0.12.0", True), ("0.20.2", False)]
# The 32-token alignment on SM10x at head size 256 (FlashInfer's kernel): up to v0.17.x; v0.19.1 aligns to 16 everywhere.
ALIGN_32_ON_SM10X: list[tuple[str, bool]] = [("0.12.0", True), ("0.19.1", False)]
# From v0.14.1 NemotronHForCausalLMConfig sets mamba_ssm_cache_dtype from the config (transformers' NemotronHConfig
# defaults it to float32); v0.12.0 keeps the model dtype for the SSM state.
NEMOTRON_SSM_DTYPE_FROM_CONFIG: list[tuple[str, bool]] = [("0.12.0", False), ("0.14.1", True)]
NEMOTRON_FIXUP = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
DEFAULT_MAMBA_CHUNK = 2048


def _mamba1(intermediate: int, state: int, kernel: int, tp: int) -> tuple[int, int]:
    """(conv, ssm) elements of MambaStateShapeCalculator.mamba1_state_shape: (kernel-1, inner/tp), (inner/tp, state)."""
    return (kernel - 1) * (intermediate // tp), intermediate // tp * state


def _mamba2(intermediate: int, groups: int, heads: int, head_dim: int, state: int, kernel: int, tp: int) -> tuple[int, int]:
    """(conv, ssm) elements of MambaStateShapeCalculator.mamba2_state_shape: groups replicated to follow the head shards
    (extra_groups_for_head_shards), conv (kernel-1, (inner + 2 groups state)/tp), ssm (heads/tp, head dim, state)."""
    if groups % tp:
        groups = tp
    return (kernel - 1) * ((intermediate + 2 * groups * state) // tp), heads // tp * head_dim * state


def _state_elements(c: dict, hidden: int | None, tp: int) -> tuple[int, int] | None:
    """(conv, ssm) elements of one layer's state, by the naming the config uses (each family's model class reads its own
    keys in get_mamba_state_shape_from_config); None for a family not read here or a config missing a size."""
    if "linear_num_value_heads" in c:  # gated delta net: conv (kernel-1, conv_dim/tp), state (v heads/tp, v dim, k dim)
        k_heads, v_heads = c.get("linear_num_key_heads"), c["linear_num_value_heads"]
        k_dim, v_dim, kernel = c.get("linear_key_head_dim"), c.get("linear_value_head_dim"), c.get("linear_conv_kernel_dim")
        if None in (k_heads, k_dim, v_dim, kernel):
            return None
        return (kernel - 1) * ((k_dim * k_heads * 2 + v_dim * v_heads) // tp), v_heads // tp * v_dim * k_dim
    if "mamba_num_heads" in c:  # Nemotron-H: the inner width is heads x head dim
        heads, dim, groups = c["mamba_num_heads"], c.get("mamba_head_dim"), c.get("n_groups")
        state, kernel = c.get("ssm_state_size"), c.get("conv_kernel")
        if None in (dim, groups, state, kernel):
            return None
        return _mamba2(heads * dim, groups, heads, dim, state, kernel, tp)
    state, kernel, expand = c.get("mamba_d_state"), c.get("mamba_d_conv"), c.get("mamba_expand")
    # Falcon-H1 takes mamba_d_ssm when set, the others mamba_expand x hidden_size (falcon_h1.py, granitemoehybrid.py,
    # bamba.py, zamba2.py, jamba.py)
    intermediate = c.get("mamba_d_ssm") or (expand * hidden if expand and hidden else None)
    if None in (state, kernel, intermediate):
        return None
    if "mamba_n_heads" in c:  # Falcon-H1, Granite 4 (GraniteMoeHybrid), Bamba
        heads, dim, groups = c["mamba_n_heads"], c.get("mamba_d_head"), c.get("mamba_n_groups")
    elif "n_mamba_heads" in c:  # Zamba2
        heads, dim, groups = c["n_mamba_heads"], c.get("mamba_headdim"), c.get("mamba_ngroups")
    else:  # Mamba1 (Jamba)
        return _mamba1(intermediate, state, kernel, tp)
    if None in (dim, groups):
        return None
    return _mamba2(intermediate, groups, heads, dim, state, kernel, tp)


def state_bytes(model, tp: int, version: str) -> int | None:
    """One layer's recurrent state per sequence, in bytes; None for a family not read here."""
    c = dict(model.state_config)
    elements = _state_elements(c, model.hidden_size, tp)
    if elements is None:
        return None
    conv, ssm = elements
    elem = model.dtype_bytes or 2  # MambaStateDtypeCalculator: the model dtype for both unless a cache dtype is set
    ssm_elem = elem
    if "mamba_num_heads" in c and fixup_names(model, version) & NEMOTRON_FIXUP and at(NEMOTRON_SSM_DTYPE_FROM_CONFIG, version):
        ssm_elem = DTYPE_BYTES.get(str(c.get("mamba_ssm_cache_dtype") or "float32"), 4)
    return conv * elem + ssm * ssm_elem


def mamba_chunk_size(model) -> int:
    """ModelConfig.get_mamba_chunk_size (vllm/config/model.py): mamba_chunk_size, else chunk_size, else 2048 (Mamba1
    has no chunk)."""
    c = dict(model.state_config)
    return c.get("mamba_chunk_size") or c.get("chunk_size") or DEFAULT_MAMBA_CHUNK


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
    if switch_decision(s, version, "prefix_caching").enabled:
        # with prefix caching the block is a whole number of Mamba kernel chunks (--mamba-block-size, else the
        # model's chunk) that holds the state
        given = s.int_flag("--mamba-block-size")
        chunk = lcm(given if given and given > 0 else mamba_chunk_size(model), align)
        tokens = -(-mamba // per_token)
        needed = chunk * -(-tokens // chunk)
    else:
        needed = align * -(-mamba // (align * per_token))
    return needed if block < needed else block

