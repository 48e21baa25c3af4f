"""Model-specific steps of SGLang the fuzz run found: MiniMax M2's MoE runner (moe_runner.py), MuseGlimmer's prefill graph
size (prefill_graph.py), on the named grid's configs."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.models import load_config_dir
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile

CONFIGS = Path(__file__).resolve().parent / "conformance" / "configs"


def _model(tmp_path: Path, architecture: str, **changes):
    config = json.loads((CONFIGS / f"named-{architecture}" / "config.json").read_text())
    config.update(changes)
    folder = tmp_path / architecture / str(len(list(tmp_path.glob(f"{architecture}/*"))))
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    return load_config_dir(folder, model_id=architecture)


def _runner(model, profile: str, release: str) -> str | None:
    plan = build_plan(load_profile(profile), model, Intent(tp=8, engine="sglang", engine_version=release))
    return plan.decision("moe_runner_backend").value


def test_minimax_m2_takes_the_routed_trtllm_runner_for_nvfp4_on_sm10x(tmp_path):
    """MiniMax M2's step (v0.5.18+): SM10x, runner auto, a modelopt_fp4 checkpoint -> flashinfer_trtllm_routed."""
    nvfp4 = {"quant_method": "modelopt_fp4", "quant_algo": "NVFP4", "group_size": 16}
    fp4 = _model(tmp_path, "MiniMaxM2ForCausalLM", quantization_config=nvfp4)
    assert _runner(fp4, "b200-8", "0.5.23") == "flashinfer_trtllm_routed"
    assert _runner(fp4, "b200-8", "0.5.18") == "flashinfer_trtllm_routed"
    assert _runner(fp4, "b200-8", "0.5.17") == "auto"  # v0.5.17's step set only TF32 matmul
    assert _runner(fp4, "h100-sxm-8", "0.5.23") == "auto"
    assert _runner(_model(tmp_path, "MiniMaxM2ForCausalLM"), "b200-8", "0.5.23") == "auto"
    modelopt = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}
    assert _runner(_model(tmp_path, "MiniMaxM2ForCausalLM", quantization_config=modelopt), "b200-8", "0.5.23") == (
        "flashinfer_trtllm_routed"
    )


def test_muse_glimmer_caps_the_prefill_graph_at_512_and_its_reserve_follows(tmp_path):
    """v0.5.18+ apply_muse_glimmer_prefill_cuda_graph_max_bs_default (arg_groups/cuda_graph_hook.py): the prefill graph
    captures up to 512 tokens, and the static fraction's reserve counts only the sizes up to 512."""
    from advisor.rules.sglang.memory import prefill_graph_reserve

    config = json.loads((CONFIGS / "named-MuseGlimmerForConditionalGeneration" / "config.json").read_text())
    for key, value in config.pop("text_config").items():  # the fuzz case: text keys at the top level
        config.setdefault(key, value)
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = load_config_dir(tmp_path, model_id="MuseGlimmerForConditionalGeneration")
    plan = build_plan(load_profile("h100-sxm-8"), model, Intent(tp=1, engine="sglang", engine_version="0.5.23"))
    memory = plan.decision("memory_defaults")
    assert {s.name: s.value for s in memory.settings}["piecewise_cuda_graph_max_tokens"] == 512
    assert prefill_graph_reserve(8192, "standard", max_bs=512) < prefill_graph_reserve(8192, "standard")
    old = build_plan(load_profile("h100-sxm-8"), model, Intent(tp=1, engine="sglang", engine_version="0.5.17"))
    assert {s.name: s.value for s in old.decision("memory_defaults").settings}["piecewise_cuda_graph_max_tokens"] != 512


def test_kimi_k3_takes_trtllm_mla_on_sm100_and_sm103(tmp_path):
    """Kimi K3's step (v0.5.17+, _kimi_k3_overrides) sets trtllm_mla for prefill and decode on SM100/SM103 when no
    backend is given; elsewhere the MLA default stays (FlashInfer on other SM10x, fa3 on Hopper)."""
    config = json.loads((CONFIGS / "named-KimiK3ForConditionalGeneration" / "config.json").read_text())
    mla = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
    config["text_config"] = {**config["text_config"], **mla}
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = load_config_dir(tmp_path, model_id="KimiK3ForConditionalGeneration")

    def backend(profile: str, release: str) -> str | None:
        plan = build_plan(load_profile(profile), model, Intent(tp=1, engine="sglang", engine_version=release))
        return plan.decision("attention_backend").value

    assert backend("b200-8", "0.5.23") == "trtllm_mla"
    assert backend("b200-8", "0.5.17") == "trtllm_mla"
    assert backend("h100-sxm-8", "0.5.23") != "trtllm_mla"
