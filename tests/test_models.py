"""ModelSpec resolution: local directories, the offline Hugging Face cache, the bundled catalog, and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from advisor import models
from advisor.models import (
    CATALOG_DIR,
    ModelError,
    ModelSpec,
    _catalog,
    _exact_entry,
    catalog_file,
    catalog_ids,
    catalog_spec,
    dtype_bytes,
    hf_cache_ids,
    load_config_dir,
    resolve_model,
)

# the models' published config.json: id -> (architectures[0], hidden, layers, heads, kv heads, experts, top-k)
REFERENCE = {
    "Qwen/Qwen3-30B-A3B": ("Qwen3MoeForCausalLM", 2048, 48, 32, 4, 128, 8),
    "Qwen/Qwen3-235B-A22B": ("Qwen3MoeForCausalLM", 4096, 94, 64, 4, 128, 8),
    "Qwen/Qwen3-VL-30B-A3B-Instruct": ("Qwen3VLMoeForConditionalGeneration", 2048, 48, 32, 4, 128, 8),
    "Qwen/Qwen3-VL-235B-A22B-Instruct": ("Qwen3VLMoeForConditionalGeneration", 4096, 94, 64, 4, 128, 8),
    "Qwen/Qwen3-Next-80B-A3B-Instruct": ("Qwen3NextForCausalLM", 2048, 48, 16, 2, 512, 10),
    "Qwen/Qwen3-Coder-Next": ("Qwen3NextForCausalLM", 2048, 48, 16, 2, 512, 10),
    "Qwen/Qwen3-8B": ("Qwen3ForCausalLM", 4096, 36, 32, 8, None, None),
    "meta-llama/Llama-3.1-8B-Instruct": ("LlamaForCausalLM", 4096, 32, 32, 8, None, None),
    "deepseek-ai/DeepSeek-V3": ("DeepseekV3ForCausalLM", 7168, 61, 128, 128, 256, 8),
    "openai/gpt-oss-120b": ("GptOssForCausalLM", 2880, 36, 64, 8, 128, 4),
    "zai-org/GLM-4.5": ("Glm4MoeForCausalLM", 5120, 92, 96, 8, 160, 8),
    "moonshotai/Kimi-K2.5": ("KimiK25ForConditionalGeneration", 7168, 61, 64, 64, 384, 8),
}

EMPTY_ENV = {"HF_HUB_CACHE": "/nonexistent/hf-cache"}


@pytest.mark.parametrize("model_id", sorted(REFERENCE))
def test_catalog_has_every_reference_model(model_id):
    spec = resolve_model(model_id, environ=EMPTY_ENV)
    arch, hidden, layers, heads, kv, experts, topk = REFERENCE[model_id]
    assert (spec.architecture, spec.hidden_size, spec.num_layers, spec.num_heads, spec.num_kv_heads) == (
        arch, hidden, layers, heads, kv)  # fmt: skip
    assert (spec.num_experts, spec.experts_per_token) == (experts, topk)
    assert spec.origin == "catalog" and spec.path is None
    assert spec.head_dim and spec.vocab_size and spec.dtype == "bfloat16" and spec.num_params


def test_catalog_ids_start_with_demo():
    ids = catalog_ids()
    assert ids[0] == "demo" and set(REFERENCE) <= set(ids)


def test_every_catalog_entry_is_in_the_file_named_after_its_id():
    """catalog_spec reads an exact id from that one file (advisor.models.catalog_file): the same entry as the whole
    catalog gives, since no two files can hold one id."""
    files = sorted(n for n in os.listdir(CATALOG_DIR) if n.endswith(".json"))
    ids = catalog_ids()
    assert len(ids) == len(files)
    assert sorted(os.path.basename(catalog_file(i)) for i in ids) == files
    for model_id in ids:
        assert _exact_entry(model_id) == _catalog()[model_id]
        assert catalog_spec(model_id) == catalog_spec(model_id.upper())  # the case-insensitive search finds it too
    assert _exact_entry("Qwen/no-such-model") is None and _exact_entry("qwen/qwen3-8b") is None


def test_demo_entry_is_the_bundled_runtime_model():
    spec = resolve_model("demo", environ=EMPTY_ENV)
    assert spec.architecture == "Qwen3MoeForCausalLM"
    assert (spec.hidden_size, spec.num_layers, spec.num_heads, spec.num_kv_heads, spec.head_dim) == (256, 4, 8, 4, 32)
    assert (spec.intermediate_size, spec.moe_intermediate_size, spec.num_experts, spec.experts_per_token) == (512, 256, 8, 2)
    assert (spec.vocab_size, spec.dtype) == (384, "float32")
    # embeddings + lm head + 4 x (attention + 8 experts + router + 2 norms) + final norm
    attn = 256 * 8 * 32 * 2 + 256 * 4 * 32 * 2
    moe = 8 * 3 * 256 * 256 + 256 * 8
    assert spec.num_params == 2 * 384 * 256 + 4 * (attn + moe + 2 * 256) + 256


def test_special_facts_of_catalog_models():
    ds = resolve_model("deepseek-ai/DeepSeek-V3", environ=EMPTY_ENV)
    assert ds.uses_mla and ds.head_dim == 192 and ds.quantization == "fp8" and ds.moe_intermediate_size == 2048
    assert resolve_model("openai/gpt-oss-120b", environ=EMPTY_ENV).quantization == "mxfp4"
    assert not resolve_model("Qwen/Qwen3-8B", environ=EMPTY_ENV).is_moe
    assert resolve_model("qwen/qwen3-8b", environ=EMPTY_ENV).id == "Qwen/Qwen3-8B"  # ids are case-insensitive


def write_config(directory: Path, config) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (directory / "config.json").write_text(text, encoding="utf-8")
    return directory


VL_CONFIG = {
    "architectures": ["Qwen3VLMoeForConditionalGeneration"],
    "model_type": "qwen3_vl_moe",
    "text_config": {
        "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
        "num_experts_per_tok": 8, "vocab_size": 151936, "dtype": "bfloat16",
    },
    "vision_config": {"hidden_size": 1152, "depth": 27},
}  # fmt: skip


def test_vl_config_reads_text_config(tmp_path):
    spec = load_config_dir(write_config(tmp_path / "vl", VL_CONFIG))
    assert spec.architecture == "Qwen3VLMoeForConditionalGeneration"
    assert (spec.hidden_size, spec.num_layers, spec.num_experts, spec.moe_intermediate_size) == (2048, 48, 128, 768)
    assert spec.dtype == "bfloat16" and spec.origin == "directory" and spec.path == str(tmp_path / "vl")
    assert spec.num_params and 29e9 < spec.num_params < 32e9


def test_directory_config_variants(tmp_path):
    llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
             "num_hidden_layers": 2, "vocab_size": 1000, "intermediate_size": 11008, "torch_dtype": "float16"}  # fmt: skip
    spec = resolve_model(str(write_config(tmp_path / "llama", llama)), environ=EMPTY_ENV)
    assert spec.head_dim == 128 and spec.num_kv_heads == 32 and spec.dtype == "float16" and spec.quantization is None
    nvfp4 = {**llama, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}
    assert load_config_dir(write_config(tmp_path / "fp4", nvfp4)).quantization == "modelopt_fp4"
    gpt = {**llama, "num_local_experts": 32, "experts_per_token": 4}
    assert load_config_dir(write_config(tmp_path / "gpt", gpt)).num_experts == 32


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ("{not json", "malformed JSON (line 1"),
        ("[" * 100_000, "not usable JSON (nested too deeply)"),
        ('{"hidden_size": ' + "9" * 5000 + "}", "not usable JSON (Exceeds the limit"),
        ("[1, 2]", "must hold a JSON object"),
        ({"model_type": "llama"}, "no `architectures`"),
        ({"architectures": []}, "no `architectures`"),
    ],
)
def test_bad_configs_give_one_line_errors(tmp_path, config, needle):
    directory = write_config(tmp_path / "bad", config)
    with pytest.raises(ModelError) as info:
        resolve_model(str(directory), environ=EMPTY_ENV)
    message = str(info.value)
    assert needle in message and "\n" not in message and "config.json" in message


def test_missing_directory_and_missing_config(tmp_path):
    with pytest.raises(ModelError, match="no such model directory"):
        resolve_model(str(tmp_path / "absent"), environ=EMPTY_ENV)
    with pytest.raises(ModelError, match="no such model directory"):
        resolve_model("./absent-model-dir", environ=EMPTY_ENV)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path / "empty"), environ=EMPTY_ENV)


def test_unknown_id_offline_names_the_fix(tmp_path):
    with pytest.raises(ModelError) as info:
        resolve_model("nobody/no-such-model", environ={"HF_HUB_CACHE": str(tmp_path)})
    message = str(info.value)
    assert "\n" not in message and "hf download nobody/no-such-model" in message and str(tmp_path) in message
    with pytest.raises(ModelError, match="empty model reference"):
        resolve_model("  ")


def make_snapshot(hub: Path, model_id: str, revision: str, config: dict, mtime: float | None = None) -> Path:
    snap = write_config(hub / ("models--" + model_id.replace("/", "--")) / "snapshots" / revision, config)
    if mtime is not None:
        os.utime(snap / "config.json", (mtime, mtime))
    return snap


def test_hf_cache_lookup_prefers_cache_over_catalog(tmp_path):
    hub = tmp_path / "hub"
    cfg = {**VL_CONFIG, "text_config": {**VL_CONFIG["text_config"], "num_hidden_layers": 3}}
    make_snapshot(hub, "Qwen/Qwen3-VL-30B-A3B-Instruct", "abc123", cfg)
    spec = resolve_model("Qwen/Qwen3-VL-30B-A3B-Instruct", environ={"HF_HUB_CACHE": str(hub)})
    assert spec.origin == "hf-cache" and spec.num_layers == 3 and spec.path.endswith("snapshots/abc123")
    assert spec.id == "Qwen/Qwen3-VL-30B-A3B-Instruct"


def test_hf_cache_newest_snapshot_or_refs_main(tmp_path):
    hub = tmp_path / "hub"
    make_snapshot(hub, "org/model", "old", {"architectures": ["OldArch"]}, mtime=1_000_000)
    make_snapshot(hub, "org/model", "new", {"architectures": ["NewArch"]}, mtime=2_000_000)
    env = {"HF_HUB_CACHE": str(hub)}
    assert resolve_model("org/model", environ=env).architecture == "NewArch"
    refs = hub / "models--org--model" / "refs"
    refs.mkdir()
    (refs / "main").write_text("old\n")
    assert resolve_model("org/model", environ=env).architecture == "OldArch"


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_refs_main_is_read_by_the_bounded_reader(tmp_path, kind):
    """A FIFO at refs/main must not hang, a link to /dev/zero must not eat memory, a huge file must not become a huge
    error line: refs/main goes through launcher.files.read_text like every other file the advisor reads."""
    hub = tmp_path / "hub"
    make_snapshot(hub, "org/model", "r1", {"architectures": ["X"]})
    refs = hub / "models--org--model" / "refs"
    refs.mkdir()
    if kind == "fifo":
        os.mkfifo(refs / "main")
    elif kind == "zero":
        (refs / "main").symlink_to("/dev/zero")
    else:
        (refs / "main").write_text("r" * 5_000_000)
    with pytest.raises(ModelError) as caught:
        resolve_model("org/model", environ={"HF_HUB_CACHE": str(hub)})
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400 and "re-download org/model" in message


def test_a_home_directory_of_an_unknown_user_is_one_line(tmp_path):
    with pytest.raises(ModelError, match="names no user"):
        resolve_model("~no-such-user-here-x/model")
    with pytest.raises(ModelError, match="HF_HOME"):
        resolve_model("org/model", environ={"HF_HOME": "~no-such-user-here-x/hf"})


def test_hf_cache_location_from_environment(tmp_path):
    make_snapshot(tmp_path / "home" / "hub", "a/b", "r1", {"architectures": ["X"]})
    make_snapshot(tmp_path / "user" / ".cache" / "huggingface" / "hub", "c/d", "r1", {"architectures": ["Y"]})
    (tmp_path / "home" / "hub" / "models--e--f" / "snapshots").mkdir(parents=True)  # a download without config.json
    assert hf_cache_ids({"HF_HOME": str(tmp_path / "home")}) == ["a/b"]
    assert hf_cache_ids({"HOME": str(tmp_path / "user")}) == ["c/d"]
    assert hf_cache_ids({"HF_HUB_CACHE": str(tmp_path / "none")}) == []
    assert models.hf_cache_dir({"HF_HUB_CACHE": "/x", "HF_HOME": "/y"}) == Path("/x")


def test_malformed_config_in_hf_cache_is_one_line(tmp_path):
    hub = tmp_path / "hub"
    make_snapshot(hub, "org/broken", "r", {"architectures": ["X"]})
    (hub / "models--org--broken" / "snapshots" / "r" / "config.json").write_text("{", encoding="utf-8")
    with pytest.raises(ModelError, match="malformed JSON"):
        resolve_model("org/broken", environ={"HF_HUB_CACHE": str(hub)})


def test_dtype_bytes_one_table_for_every_spelling():
    assert [dtype_bytes(d) for d in ("bfloat16", "bf16", "torch.float16", "half", "float32", "float8_e4m3fn")] == [
        2, 2, 2, 2, 4, 1]  # fmt: skip
    assert dtype_bytes(None) is None and dtype_bytes("auto") is None and dtype_bytes("int3") is None
    assert ModelSpec(id="m", architecture="A", dtype="bfloat16").dtype_bytes == 2


# -- weight sizes -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", catalog_ids())
def test_every_catalog_model_has_a_weight_size(model_id):
    """Every catalog model gives a parameter count and bytes per parameter, so every layout gets a memory verdict."""
    spec = catalog_spec(model_id)
    per_param = spec.bytes_per_param()
    assert spec.num_params and spec.num_params > 0
    assert per_param is not None and 0.25 < per_param <= 4


def test_quantized_catalog_checkpoints_are_sized_from_their_quantization_config():
    """Kimi-K2.5: INT4 routed experts (compressed-tensors pack-quantized, group 32, a bf16 scale per group) -> 4.5 bits;
    DeepSeek-V3: FP8 with an fp32 scale per 128 x 128 block; gpt-oss: MXFP4 (an E8M0 scale per 32)."""
    kimi, deepseek, oss = (catalog_spec(m) for m in ("moonshotai/Kimi-K2.5", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b"))
    assert kimi.quantization == "compressed-tensors" and kimi.weight_bits == 4 + 16 / 32
    assert 590e9 < kimi.num_params * kimi.bytes_per_param() < 600e9  # the checkpoint is about 594 GB
    assert deepseek.weight_bits == 8 + 32 / (128 * 128) and 670e9 < deepseek.num_params * deepseek.bytes_per_param() < 690e9
    assert oss.weight_bits == 4.25


@pytest.mark.parametrize(
    ("qc", "bits"),
    [
        ({"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}},
         4 + 16 / 128),
        ({"quant_method": "compressed-tensors", "format": "int-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}}, 8),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                              "group_size": 16}}}}, 4.5),
        ({"quant_method": "compressed-tensors", "format": "float-quantized"}, 8),  # FP8 block, groups left out
        ({"quant_method": "compressed-tensors", "format": "something-new"}, None),
        ({"quant_method": "fp8"}, 8),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, 4.5),
        ({"quant_method": "awq", "bits": 4}, None),  # the per-method estimate applies
        ("not a mapping", None),
    ],
)  # fmt: skip
def test_quantized_weight_bits(qc, bits):
    assert models.quantized_weight_bits(qc) == bits


def test_weight_bytes_per_param_prefers_the_stated_bits():
    assert models.weight_bytes_per_param("bfloat16", "compressed-tensors") is None  # INT4, INT8 or FP8: unknown
    assert models.weight_bytes_per_param("bfloat16", "compressed-tensors", 4.5) == 0.5625
    assert models.weight_bytes_per_param("bfloat16", "awq") == 0.5625 and models.weight_bytes_per_param("bf16", None) == 2


def test_a_local_compressed_tensors_checkpoint_reads_its_config_groups(tmp_path):
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "torch_dtype": "bfloat16",
              "quantization_config": {"quant_method": "compressed-tensors", "format": "int-quantized",
                                      "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int",
                                                                          "strategy": "channel"}}}}}  # fmt: skip
    spec = load_config_dir(write_config(tmp_path / "w8a8", config))
    assert spec.quantization == "compressed-tensors" and spec.bytes_per_param() == 1.0
