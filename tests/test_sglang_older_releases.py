"""SGLang v0.5.7 to v0.5.17: the steps that changed between releases, as the named and configs goldens of those releases
show them (issue 31), checked through the whole plan with the configs the goldens were run on."""

from __future__ import annotations

import pytest

from advisor.models import spec_from_config
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.sglang.model_overrides import deepseek_branch, override_step

MLA = {"hidden_size": 7168, "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
       "qk_nope_head_dim": 128, "v_head_dim": 128, "num_hidden_layers": 61, "n_routed_experts": 256,
       "num_experts_per_tok": 8, "moe_intermediate_size": 2048}  # fmt: skip
FP8 = {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}


def plan(profile: str, config: dict, release: str, tp: int = 8):
    model = spec_from_config(config, model_id="t", path=None, origin="directory", where="test")
    return build_plan(load_profile(profile), model, Intent(tp=tp, engine="sglang", engine_version=release))


def deepseek(arch: str, model_type: str = "deepseek_v3", **keys) -> dict:
    return {"architectures": [arch], "model_type": model_type, **MLA, **keys}


@pytest.mark.parametrize("profile", ["a100-sxm-8", "h100-sxm-8", "b200-8"])
def test_gemma4_takes_triton_everywhere_in_v0_5_11_and_v0_5_12(profile):
    gemma4 = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "hidden_size": 2560,
              "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 34}  # fmt: skip
    for release in ("0.5.11", "0.5.12"):
        assert plan(profile, gemma4, release).decision("attention_backend").value == "triton", release
    assert (plan(profile, gemma4, "0.5.13").decision("attention_backend").value == "trtllm_mha") is (
        profile == "b200-8"
    )


def test_step3p5_sets_its_backend_from_v0_5_13_only():
    assert override_step("Step3p5ForCausalLM", "0.5.12") is None
    assert override_step("Step3p5ForCausalLM", "0.5.13") is not None


def test_deepseek_v3_without_quantization_stays_on_auto_in_v0_5_11():
    """v0.5.10 defaults it to fp8, v0.5.11 keeps bf16 (no FP8 experts in the checkpoint), v0.5.12 takes bf16 too."""
    v3 = deepseek("DeepseekV3ForCausalLM")
    runner = {r: plan("b200-8", v3, r).decision("moe_runner_backend").value for r in ("0.5.10", "0.5.11", "0.5.12")}
    assert runner == {"0.5.10": "flashinfer_trtllm", "0.5.11": "auto", "0.5.12": "flashinfer_trtllm"}


def test_the_inline_deepseek_branch_names_set_trtllm_mla_and_the_moe_runner():
    """Mistral Large 3 is in the branch from v0.5.7, Kimi K2.5 only from v0.5.9."""
    assert "MistralLarge3ForCausalLM" in deepseek_branch("0.5.7")
    assert "KimiK25ForConditionalGeneration" not in deepseek_branch("0.5.8")
    assert deepseek_branch("0.5.15") is None
    mistral = plan("b200-8", deepseek("MistralLarge3ForCausalLM", **FP8), "0.5.8")
    assert mistral.decision("moe_runner_backend").value == "flashinfer_trtllm"
    kimi = deepseek("KimiK25ForConditionalGeneration", "kimi_k25", **FP8)
    assert plan("b200-8", kimi, "0.5.8").decision("moe_runner_backend").value == "auto"
    assert plan("b200-8", kimi, "0.5.9").decision("moe_runner_backend").value == "flashinfer_trtllm"


def test_v0_5_7_keeps_the_fusion_off_for_deepseek_sparse_attention():
    """v0.5.7 loads DeepSeek V3.2 as V3 (on its fusion list) but first turns DP attention on for it."""
    v32 = deepseek("DeepseekV32ForCausalLM", "deepseek_v32", index_topk=2048)
    decision = plan("h100-sxm-8", v32, "0.5.7").decision("flashinfer_allreduce_fusion")
    failed = {c.id for c in decision.conditions if c.ok is False}
    assert failed == {"not_nsa_dp_attention"} and not decision.enabled
    assert (
        plan("h100-sxm-8", deepseek("DeepseekV3ForCausalLM"), "0.5.7").decision("flashinfer_allreduce_fusion").enabled
    )


def test_granite_hybrid_sm100_default_follows_the_release():
    granite = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 1536,
               "num_attention_heads": 12, "num_key_value_heads": 4, "num_hidden_layers": 4,
               "layer_types": ["mamba", "mamba", "mamba", "attention"]}  # fmt: skip
    backend = {r: plan("b200-8", granite, r).decision("attention_backend").value for r in ("0.5.8", "0.5.9", "0.5.13")}
    assert backend == {"0.5.8": "trtllm_mha", "0.5.9": "triton", "0.5.13": "flashinfer"}


def test_interns2_preview_takes_the_qwen3_5_hybrid_steps_from_v0_5_12():
    interns2 = {"architectures": ["InternS2PreviewForConditionalGeneration"], "model_type": "interns2",
                "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768}  # fmt: skip
    for release, backend, runner in (("0.5.11", "trtllm_mha", "auto"), ("0.5.12", "triton", "flashinfer_trtllm"),
                                     ("0.5.15", "triton", "flashinfer_trtllm")):  # fmt: skip
        p = plan("b200-8", interns2, release)
        assert p.decision("attention_backend").value == backend, release
        assert p.decision("moe_runner_backend").value == runner, release


STANDARD = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 32}  # fmt: skip


@pytest.mark.parametrize("release", ["0.5.7", "0.5.10", "0.5.11", "0.5.23"])
def test_phi4_multimodal_vision_tower_is_sglang_fixed_siglip_in_every_release(release):
    """get_config swaps the config's 27-layer tower for 26 x 1152 (v0.5.7 on); the VLM memory factor reads that."""
    from advisor.rules.sglang.model_config import multimodal_vision

    config = {"architectures": ["Phi4MMForCausalLM"], "model_type": "phi4_multimodal", **STANDARD,
              "vision_config": {"num_hidden_layers": 27, "hidden_size": 1152}}  # fmt: skip
    model = spec_from_config(config, model_id="t", path=None, origin="directory", where="test")
    assert multimodal_vision(model, release) == (26, 1152)
