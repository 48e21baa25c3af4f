"""The model as vLLM reads config.json through its config class (advisor/rules/vllm/hf_config.py): a composite class's
default text sub-config where config.json has no text_config, class defaults for left-out MLA keys, head_dim set from
qk_rope_head_dim, DeepSeek V4's compress_rates and the sparse MLA attributes its class lacks. Each case was found by
the vLLM fuzz grid (conformance/vllm/fuzz.py) and checked against v0.33.0's code (docs/vllm.md)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from advisor.models import load_config_dir
from advisor.rules.vllm.attention import NO_BACKEND
from advisor.rules.vllm.hf_config import vllm_model
from advisor.rules.vllm.text_config import READ_ONLY_KEY, TEXT_CONFIG_DICT
from conformance.vllm.compare import plan_for

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "tests/conformance/configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name / "config.json").read_text())


def _model(tmp_path: Path, config: dict):
    folder = tmp_path / f"m{random.randrange(10**9)}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return load_config_dir(folder, model_id=folder.name)


def _plan(tmp_path: Path, config: dict, profile: str = "h100-sxm-8", tp: int = 1, version: str = "0.33.0"):
    return plan_for(version, profile, tp, _model(tmp_path, config))


def _flattened(config: dict) -> dict:
    text = config.pop("text_config")
    return {**text, **config}


def test_composite_without_text_config_reads_the_class_default(tmp_path: Path):
    """Qwen3-VL's keys at the top level do not reach Qwen3VLConfig's text sub-config: vLLM reads its default (128000)."""
    config = _flattened(_config("qwen3-vl-30b-a3b"))
    assert config["max_position_embeddings"] == 262144
    plan = _plan(tmp_path, config)
    assert plan.decision("memory_defaults").value["max_model_len"] == 128000
    nested = _plan(tmp_path, _config("qwen3-vl-30b-a3b"))  # the text_config as written is read
    assert nested.decision("memory_defaults").value["max_model_len"] == 262144


def test_composite_view_keeps_the_top_level_facts(tmp_path: Path):
    config = {**_flattened(_config("qwen3-vl-30b-a3b")), "quantization_config": {"quant_method": "fp8"}}
    model = _model(tmp_path, config)
    seen = vllm_model(model, "0.33.0")
    assert (seen.architecture, seen.model_type, seen.quant_method) == (model.architecture, "qwen3_vl_moe", "fp8")
    assert seen.text_model_type == "qwen3_vl_moe_text" and seen.max_position_embeddings == 128000
    # every modelled release's classes are read: v0.20.2's Qwen3-VL class builds the same default text config
    assert vllm_model(model, "0.20.2").max_position_embeddings == 128000


def test_left_out_kv_lora_rank_is_the_class_default(tmp_path: Path):
    """DeepseekV3Config gives kv_lora_rank 512: a DeepSeek-V3 config without it is MLA to vLLM (FlashInfer MLA)."""
    config = _config("named-DeepseekV3ForCausalLM")
    for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"):
        config.pop(key, None)
    plan = _plan(tmp_path, config, "b200-8", 2)
    assert plan.decision("attention_backend").value == "FLASHINFER_MLA"
    seen = vllm_model(plan.model, "0.33.0")
    assert (seen.kv_lora_rank, seen.qk_rope_head_dim, seen.q_lora_rank) == (512, 64, 1536)


def test_written_null_is_not_filled(tmp_path: Path):
    config = {**_config("named-DeepseekV3ForCausalLM"), "q_lora_rank": None, "kv_lora_rank": None}
    seen = vllm_model(_model(tmp_path, config), "0.33.0")
    assert seen.q_lora_rank is None and seen.kv_lora_rank is None


def test_minicpm3_head_dim_is_its_rope_width(tmp_path: Path):
    """MiniCPM3Config sets head_dim to qk_rope_head_dim over a written one: a 512 there is 32 to the selector."""
    config = {**_config("named-MiniCPM3ForCausalLM"), "head_dim": 512}
    for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"):
        config.pop(key, None)
    plan = _plan(tmp_path, config, "b200-8", 1)
    assert plan.decision("attention_backend").value == "FLASH_ATTN"  # FlashInfer takes no 32-wide head


def test_deepseek_v4_class_config_has_no_sparse_backend(tmp_path: Path):
    """transformers' DeepseekV4Config: compress_rates make it compressed MLA, and the sparse backends read its missing
    kv_lora_rank: vLLM fails at start-up on every GPU, whatever its KV heads."""
    config = _config("named-DeepseekV4ForCausalLM")
    for profile in ("h100-sxm-8", "b200-8", "a100-sxm-8"):
        for heads in (1, 8):
            plan = _plan(tmp_path, {**config, "num_key_value_heads": heads}, profile, 2)
            assert plan.decision("attention_backend").value is None
            problem = next(p for p in plan.problems if p.id == NO_BACKEND)
            assert "kv_lora_rank" in problem.message
    written = {**config, "kv_lora_rank": 512, "qk_nope_head_dim": 448}
    assert _plan(tmp_path, written, "b200-8", 2).decision("attention_backend").value is not None


def test_a_text_config_under_a_class_without_one_is_refused(tmp_path: Path):
    """LlamaConfig and vLLM's own DeepseekV3Config (deepseek_v32) keep a text_config as a dict: vLLM refuses."""
    llama = _config("llama-3.1-8b")
    text = {k: llama.pop(k) for k in list(llama) if k not in ("architectures", "model_type")}
    nested = {**llama, "text_config": {**text, "model_type": "llama"}}
    assert any(p.id == TEXT_CONFIG_DICT for p in _plan(tmp_path, nested).problems)
    v32 = _config("deepseek-v3.2")
    text = {k: v32.pop(k) for k in list(v32) if k not in ("architectures", "model_type")}
    assert any(p.id == TEXT_CONFIG_DICT for p in _plan(tmp_path, {**v32, "text_config": text}).problems)


def test_a_text_config_the_class_does_not_take_leaves_the_default(tmp_path: Path):
    """ColPali keeps its language model in vlm_config: a text_config (with a 131072 length) does not reach it, so vLLM
    reads PaliGemma's default Gemma text config (8192); with the vlm_config at the top, its text_config is read."""
    base = _config("vllm-ColPaliForRetrieval")
    vlm = base.pop("vlm_config")
    nested = {**base, "text_config": {"model_type": "colpali", "max_position_embeddings": 131072, "vlm_config": vlm}}
    assert _plan(tmp_path, nested).decision("memory_defaults").value["max_model_len"] == 8192
    vlm["text_config"]["num_attention_heads"] = 16  # handed in vlm_config, its text_config is read
    seen = vllm_model(_model(tmp_path, {**base, "vlm_config": vlm}), "0.33.0")
    assert (seen.text_model_type, seen.num_heads) == ("gemma", 16)


def test_a_text_config_the_class_takes_is_read(tmp_path: Path):
    """vLLM's Qwen3-ASR class keeps its text in thinker_config, but takes a text_config too (v0.33.0 reads its 65536)."""
    config = _config("named-Qwen3ASRForConditionalGeneration")
    assert config["text_config"]["max_position_embeddings"] == 65536
    assert _plan(tmp_path, config).decision("memory_defaults").value["max_model_len"] == 65536


def test_gemma4_mixed_head_widths_run_triton_without_fa4(tmp_path: Path):
    """Gemma4Config's fix-up: full-attention layers 512 wide (the class's global_head_dim) beside 256-wide sliding ones
    run Triton where FA4 does not (an A100), and FA4's FlashAttention on an H100; equal widths leave the usual order."""
    config = _config("named-Gemma4ForCausalLM")
    assert _plan(tmp_path, config, "a100-sxm-8").decision("attention_backend").value == "TRITON_ATTN"
    assert _plan(tmp_path, config, "h100-sxm-8").decision("attention_backend").value == "FLASH_ATTN"
    same = {**config, "global_head_dim": config["head_dim"]}
    assert _plan(tmp_path, same, "a100-sxm-8").decision("attention_backend").value == "FLASH_ATTN"
    wide = {**config, "global_head_dim": 1024}  # past FA4's 512: Triton on an H100 too
    assert _plan(tmp_path, wide, "h100-sxm-8").decision("attention_backend").value == "TRITON_ATTN"
    folder = tmp_path / "chosen"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    chosen = plan_for("0.33.0", "a100-sxm-8", 1, load_config_dir(folder), ("--attention-backend", "FLASH_ATTN"))
    assert chosen.decision("attention_backend").value == "FLASH_ATTN"


def test_a_text_config_one_level_down_is_read(tmp_path: Path):
    """Qwen3-Omni keeps its language model in thinker_config.text_config: 2048 / 28 heads = 73 wide, which only Triton
    takes (the top level has no sizes)."""
    config = _config("named-Qwen3OmniMoeForConditionalGeneration")
    assert config["thinker_config"]["text_config"]["num_attention_heads"] == 28
    for profile in ("h100-sxm-8", "b200-8", "a100-sxm-8"):
        assert _plan(tmp_path, config, profile).decision("attention_backend").value == "TRITON_ATTN"


def test_a_class_dropping_rope_scaling_beside_nested_rope_parameters(tmp_path: Path):
    """vLLM's Step3p7TextConfig keeps rope_parameters nested by layer type and drops a legacy rope_scaling beside it,
    where transformers' classes let rope_scaling win (a linear factor 2 then doubles Llama's length)."""
    config = _config("named-Step3p7ForConditionalGeneration")
    text = config["text_config"]
    assert "full_attention" in (text.get("rope_parameters") or {})
    length = text["max_position_embeddings"]
    text["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
    assert _plan(tmp_path, config).decision("memory_defaults").value["max_model_len"] == length
    llama = {**_config("llama-3.1-8b"), "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    doubled = 2 * llama["max_position_embeddings"]
    assert _plan(tmp_path, llama).decision("memory_defaults").value["max_model_len"] == doubled


def test_a_read_only_key_at_the_top_level_is_refused(tmp_path: Path):
    """KimiK3Config derives hidden_size (a property without a setter): a flattened KimiK3 config writing it at the top
    level stops vLLM's config build; the config as published plans. FalconMambaConfig's read-only layer_types is
    vllm_config_class_refuses' finding, not said twice."""
    kimi = _config("named-KimiK3ForConditionalGeneration")
    assert not any(p.id == READ_ONLY_KEY for p in _plan(tmp_path, kimi).problems)
    flat = _flattened(kimi)
    assert any(p.id == READ_ONLY_KEY and "hidden_size" in p.message for p in _plan(tmp_path, flat).problems)
    falcon = _config("named-FalconMambaForCausalLM")
    typed = {**falcon, "layer_types": ["full_attention"] * falcon["num_hidden_layers"]}
    found = {p.id for p in _plan(tmp_path, typed).problems if p.severity == "error"}
    assert READ_ONLY_KEY not in found and "vllm_config_class_refuses" in found


def test_a_newer_release_reads_the_newest_classes(tmp_path: Path):
    model = _model(tmp_path, _flattened(_config("qwen3-vl-30b-a3b")))
    assert vllm_model(model, "0.99.0") == vllm_model(model, "0.33.0") != model


def test_refusal_checks_judge_config_json_as_written(tmp_path: Path):
    """The class view fills a flattened composite's text from the class's defaults (layer_types and null sizes among
    them); the checks of what a class refuses still see config.json as written, so they find nothing here."""
    config = _flattened(_config("qwen3.5-397b-a17b"))
    config.pop("layer_types", None)
    plan = _plan(tmp_path, config, "h100-sxm-8", 8)
    assert "vllm_config_class_refuses" not in {p.id for p in plan.problems}
    assert plan.decision("memory_defaults").value["max_model_len"] == 32768  # Qwen3.5-MoE's default text config
