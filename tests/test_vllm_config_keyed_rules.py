"""The vLLM rules the fuzz grid (conformance/vllm/fuzz.py) found keyed on names where vLLM reads the config: RoPE
scaling of max_model_len, a ModelOpt checkpoint's KV-cache dtype, the MLA backends' head sizes, the Transformers
backend's MLA, FlashAttention without FA3 and a quantized KV cache. Each case is checked against what the release's code
does (docs/vllm.md, "Differential fuzzing"); the fuzz goldens hold the same against vLLM's own resolution."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models import load_config_dir
from conformance.vllm import fuzz
from conformance.vllm.compare import plan_for

REPO = Path(__file__).resolve().parents[1]
LLAMA = json.loads((REPO / "tests/conformance/configs/llama-3.1-8b/config.json").read_text())
DEEPSEEK = json.loads((REPO / "tests/conformance/configs/deepseek-v3/config.json").read_text())


def _plan(tmp_path: Path, config: dict, version: str = "0.33.0", profile: str = "h100-sxm-8", tp: int = 1):
    folder = tmp_path / f"m{random.randrange(10**9)}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return plan_for(version, profile, tp, load_config_dir(folder, model_id=folder.name))


def _memory(plan) -> dict:
    return plan.decision("memory_defaults").value


@settings(max_examples=25, deadline=None)
@given(factor=st.sampled_from([1.5, 2.0, 4.0]), length=st.sampled_from([2048, 8192, 32768]),
       version=st.sampled_from(["0.12.0", "0.20.2", "0.30.0", "0.33.0"]))  # fmt: skip
def test_linear_rope_scales_max_model_len(tmp_path_factory, factor: float, length: int, version: str):
    config = {**LLAMA, "max_position_embeddings": length, "rope_scaling": {"rope_type": "linear", "factor": factor}}
    plan = _plan(tmp_path_factory.mktemp("rope"), config, version)
    assert _memory(plan)["max_model_len"] == int(length * factor)


@pytest.mark.parametrize(("version", "expected"), [("0.20.2", 4 * 4096), ("0.29.0", 4 * 4096), ("0.30.0", 32768),
                                                   ("0.33.0", 32768)])  # fmt: skip
def test_yarn_scales_the_original_length_up_to_v0_29(tmp_path: Path, version: str, expected: int):
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
    plan = _plan(tmp_path, {**LLAMA, "max_position_embeddings": 32768, "rope_scaling": rope}, version)
    assert _memory(plan)["max_model_len"] == expected


def test_llama3_and_gemma3_rope_leave_the_length(tmp_path: Path):
    llama = _plan(tmp_path, LLAMA)  # rope_type llama3, factor 8: not scaled
    assert _memory(llama)["max_model_len"] == LLAMA["max_position_embeddings"]
    gemma = {**LLAMA, "model_type": "gemma3_text", "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    assert _memory(_plan(tmp_path, gemma))["max_model_len"] == LLAMA["max_position_embeddings"]


@pytest.mark.parametrize(("version", "kv", "expected"), [("0.12.0", "FP8", "auto"), ("0.14.1", "FP8", "fp8_e4m3"),
                                                         ("0.33.0", "fp8", "fp8_e4m3"), ("0.19.1", "NVFP4", "auto"),
                                                         ("0.20.2", "NVFP4", "nvfp4"), ("0.33.0", "int4", "auto")])  # fmt: skip
def test_modelopt_kv_cache_quant_algo_sets_the_kv_dtype(tmp_path: Path, version: str, kv: str, expected: str):
    quant = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": kv}
    plan = _plan(tmp_path, {**LLAMA, "quantization_config": quant}, version)
    assert _memory(plan)["kv_cache_dtype"] == expected


def test_fp8_kv_cache_leaves_flash_attention_on_ampere(tmp_path: Path):
    quant = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    config = {**LLAMA, "quantization_config": quant}
    assert _plan(tmp_path, config, profile="a100-sxm-8").decision("attention_backend").value == "FLASHINFER"
    assert _plan(tmp_path, config, profile="h100-sxm-8").decision("attention_backend").value == "FLASH_ATTN"


@pytest.mark.parametrize(("version", "rope", "expected"), [("0.33.0", 64, "FLASH_ATTN_MLA"), ("0.33.0", 128, "TRITON_MLA"),
                                                           ("0.19.1", 128, "TRITON_MLA"), ("0.17.1", 128, None)])  # fmt: skip
def test_mla_head_size_outside_the_dense_backends_list(tmp_path: Path, version: str, rope: int, expected: str | None):
    config = {**DEEPSEEK, "qk_rope_head_dim": rope}  # kv_lora_rank 512: 576 for DeepSeek's 64, 640 for 128
    assert _plan(tmp_path, config, version).decision("attention_backend").value == expected


def test_fuzz_scenarios_are_deterministic(tmp_path: Path):
    first = fuzz.scenarios("0.33.0", 6, 7, tmp_path / "a")
    second = fuzz.scenarios("0.33.0", 6, 7, tmp_path / "b")
    assert [(s["id"], s["base"], s["tags"]) for s in first] == [(s["id"], s["base"], s["tags"]) for s in second]
    for a, b in zip(first, second, strict=True):
        assert (Path(a["config_dir"]) / "config.json").read_text() == (
            Path(b["config_dir"]) / "config.json"
        ).read_text()


@pytest.mark.parametrize(("version", "expected"), [("0.27.1", "FLASH_ATTN"), ("0.33.0", "TRITON_MLA")])
def test_transformers_backend_mla_follows_kv_lora_rank(tmp_path: Path, version: str, expected: str):
    """FlexOlmo runs on the Transformers backend (_TRANSFORMERS_SUPPORTED_MODELS): from v0.28.0 its kv_lora_rank makes
    it MLA, with its standard 128-wide head size, which only Triton MLA takes."""
    config = {**LLAMA, "architectures": ["FlexOlmoForCausalLM"], "model_type": "flex_olmo", "kv_lora_rank": 256,
              "qk_rope_head_dim": 64}  # fmt: skip
    config.pop("rope_scaling")
    assert _plan(tmp_path, config, version).decision("attention_backend").value == expected


@pytest.mark.parametrize(("version", "refused"), [("0.27.1", False), ("0.28.0", True), ("0.33.0", True)])
def test_a_dropped_quantization_method_is_refused(tmp_path: Path, version: str, refused: bool):
    """bitsandbytes left QUANTIZATION_METHODS in v0.28.0: vLLM refuses such a checkpoint ('Unknown quantization
    method'); a method no release lists (auto-round, which INC's override claims) is left alone."""
    bnb = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    plan = _plan(tmp_path, {**LLAMA, "quantization_config": bnb}, version)
    assert any(p.id == "vllm_quantization_unknown" and p.severity == "error" for p in plan.problems) == refused
    auto_round = _plan(tmp_path, {**LLAMA, "quantization_config": {"quant_method": "auto-round", "bits": 4}}, version)
    assert not any(p.id == "vllm_quantization_unknown" for p in auto_round.problems)
