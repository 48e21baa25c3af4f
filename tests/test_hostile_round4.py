"""Fourth hostile round (issue 31): config.json files an attacker or a careless user would give the advisor, through
every face that reads a model (`check --json`, `layouts`, `explain`, `launch --dry-run`, `launch --on slurm -o`).
One test (hypothesis where inputs vary) per defect class the sweep found:

1. a model_type that is not a string (a list, an object) crashed vLLM's MLA check with a traceback;
2. a size written as a string, a boolean or a float (NaN and Infinity included) was dropped without a word, so the plan
   said "go" for a config whose shape arithmetic stops the engine (and a float context length crashed `explain`);
3. an architecture SGLang's release lists as MLA whose config has no kv_lora_rank (null, a list) crashed the KV-cache
   arithmetic with a traceback (None + int);
4. a config with no max_position_embeddings: SGLang's start-up arithmetic ran with a context of 1 token (a false
   kv_cache_too_small error where SGLang uses its default 2048), and `explain memory_defaults` crashed formatting the
   missing length;
5. a quantization_config that is not an object, or whose quant_method is not a string, was taken for an unquantized
   checkpoint (the plan said go) where both engines stop reading it (SGLang .to_dict() / .lower(), vLLM ["quant_method"]);
6. a text_config / vision_config / llm_config that is a list, a string or a number was ignored, so a VL model's sizes
   were unknown and the plan still said go where the engines cannot read the sub-config's sizes;
7. an architectures[0] that can name no class ("", spaces, control characters, 100,000 characters) got a plan ("go"
   for SGLang, the output flooded or carrying the control characters) where both engines refuse the model;
8. num_key_value_heads that does not divide num_attention_heads (64 KV heads for 32 query heads) got "go", where
   vLLM's Attention asserts the grouping at start-up and SGLang's attention kernels need it;
9. a rope_scaling that is not an object, or whose factor is NaN, Infinity, a string or not positive, got "go" where
   both engines multiply the context length by it and stop (SGLang's get_context_length, vLLM's _get_and_verify_max_len);
10. hidden_size smaller than num_attention_heads without a head_dim (a head of width 0) got "go" with the KV cache
    unknown, where no attention backend of either engine takes a head of width 0;
11. the Mamba2 / gated-delta-net state sizes were kept as written: a string crashed vLLM's hybrid block size (up to
    v0.19.x) with a traceback, a negative one gave a block size from a negative state;
12. a config without a dtype SGLang knows (none, "int4", "float8_e4m3fn") left SGLang's start-up verdict unknown
    ("weights unknown"), and a float32 one was sized at 4 bytes a parameter: SGLang reads both as float32 and loads
    them in float16 (bfloat16 for Gemma) under --dtype auto.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.models import MAX_MODEL_SIZE, ZERO_MEANS_NONE, ModelError, spec_from_config
from advisor.report.startup_text import startup_lines
from advisor.rules.startup import Startup

# A dense model no release names: every rule takes its default path, so only what the config says decides.
BASE = {"architectures": ["HostileForCausalLM"], "model_type": "hostile", "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 11008,
        "vocab_size": 32000, "torch_dtype": "bfloat16", "max_position_embeddings": 32768}  # fmt: skip
ENGINES = ("sglang", "vllm")
# Every face that reads the model; explain takes a decision each engine has.
FACES = (["check", "--json"], ["layouts", "--json"], ["explain", "memory_defaults", "--json"], ["launch", "--dry-run"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


def spec(config: dict):
    return spec_from_config(config, model_id="hostile", path=None, origin="directory", where="config.json")


def model_dir(root: Path, config: dict) -> str:
    """A model directory under ``root`` holding ``config`` (NaN and Infinity written as Python's json writes them)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config, allow_nan=True))
    return str(root)


def run_face(model: str, engine: str, face: list[str]):
    result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--model", model, "--engine", engine, *face])
    assert result.exception is None or isinstance(result.exception, SystemExit), (face, result.exception)
    return result


def assert_refused_in_one_line(model: str, needle: str) -> None:
    """Every face of every engine refuses the model with one `error:` line holding ``needle``, exit 1."""
    for engine in ENGINES:
        for face in FACES:
            result = run_face(model, engine, face)
            assert result.exit_code == 1, (engine, face, result.output)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], (engine, face, lines)


# -- 1. a model_type that is not a string -----------------------------------------------------------------------------

NOT_A_NAME = JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, str))


@given(value=NOT_A_NAME, nested=st.booleans())
def test_a_model_type_that_is_no_string_is_refused_by_name(value, nested):
    config = {**BASE, "text_config": {"model_type": value}} if nested else {**BASE, "model_type": value}
    with pytest.raises(ModelError, match="model_type is .*not a name"):
        spec(config)


@settings(max_examples=6, deadline=None, suppress_health_check=FIXTURE_OK)
@given(value=st.sampled_from([["deepseek_v3"], {"a": 1}, 5, True]))
def test_every_face_refuses_a_model_type_that_is_no_string(value, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "model_type": value}), "model_type")


# -- 2. a size that is not a whole number -------------------------------------------------------------------------------

SIZE_KEYS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "intermediate_size",
             "vocab_size", "head_dim", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
             "kv_lora_rank", "qk_rope_head_dim", "sliding_window", "full_attention_interval", "index_topk",
             "max_position_embeddings")  # fmt: skip
NOT_WHOLE = st.one_of(st.text(max_size=6), st.just(True), st.floats(allow_nan=True, allow_infinity=True))


def _tolerated(key: str, value) -> bool:
    """What _size reads without refusing: False where zero means none; a whole float context length."""
    if value is False and key in ZERO_MEANS_NONE:
        return True
    return (key == "max_position_embeddings" and isinstance(value, float) and math.isfinite(value)
            and value.is_integer() and 1 <= value <= MAX_MODEL_SIZE)  # fmt: skip


@given(key=st.sampled_from(SIZE_KEYS), value=NOT_WHOLE, where=st.sampled_from(["top", "text_config"]))
def test_a_size_that_is_no_whole_number_is_refused_by_name(key, value, where):
    config = {**BASE, key: value} if where == "top" else {**BASE, "text_config": {key: value}}
    if _tolerated(key, value):
        spec(config)
        return
    with pytest.raises(ModelError, match=f"{key} is .*not a (whole number|size a model can have)"):
        spec(config)


def test_a_whole_float_context_length_is_that_integer_as_the_engines_read_it():
    assert spec({**BASE, "max_position_embeddings": 4096.0}).max_position_embeddings == 4096
    assert spec({**BASE, "sliding_window": False}).sliding_window is None  # a disabled window, as zero


@settings(max_examples=8, deadline=None, suppress_health_check=FIXTURE_OK)
@given(key=st.sampled_from(["hidden_size", "num_hidden_layers", "max_position_embeddings", "num_experts"]),
       value=st.sampled_from(["4096", True, math.nan, math.inf, 2.5, 1e308]))  # fmt: skip
def test_every_face_refuses_a_size_that_is_no_whole_number(key, value, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, key: value}), key)


@pytest.mark.parametrize("where", ["top", "text_config"])
def test_a_bad_size_under_a_class_alias_is_named_as_config_json_spells_it(where):
    # deepseek_v3's attribute_map sends num_local_experts to n_routed_experts: the error names the key in the file
    fields = {"model_type": "deepseek_v3", "n_routed_experts": math.inf}
    config = {**BASE, **fields} if where == "top" else {**BASE, "text_config": fields}
    with pytest.raises(ModelError, match=r"n_routed_experts is Infinity, not a whole number; write it as one \(e.g. "
                       r'"n_routed_experts": 128\)'):  # fmt: skip
        spec(config)


# -- 3. an MLA architecture without its latent width ------------------------------------------------------------------

DEEPSEEK = {**BASE, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_key_value_heads": 32,
            "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "n_routed_experts": 64,
            "num_experts_per_tok": 6, "moe_intermediate_size": 1408}  # fmt: skip


@settings(max_examples=4, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rank=st.sampled_from([None, [512], {"rank": 512}]))
def test_an_mla_architecture_without_kv_lora_rank_gets_a_verdict_not_a_traceback(rank, tmp_path_factory):
    model = model_dir(tmp_path_factory.mktemp("m"), {**DEEPSEEK, "kv_lora_rank": rank})
    for engine in ENGINES:
        for face in [*FACES, ["explain", "attention_backend"]]:
            result = run_face(model, engine, face)
            assert result.exit_code in (0, 1) and "Traceback" not in result.output, (engine, face, result.output)


# -- 4. no context length in config.json --------------------------------------------------------------------------------


@given(kv_tokens=st.integers(0, 10**9), sequences=st.one_of(st.none(), st.integers(0, 100)))
def test_the_start_up_text_needs_no_context_length(kv_tokens, sequences):
    startup = Startup(None, "unknown", starts=bool(sequences), kv_tokens=kv_tokens, sequences=sequences)
    lines = startup_lines(startup, "sglang")
    assert any(line.startswith("KV pool: ") for line in lines)


@settings(max_examples=6, deadline=None, suppress_health_check=FIXTURE_OK)
@given(tp=st.sampled_from([1, 2, 8]), layers=st.sampled_from([2, 32, 400]))
def test_sglang_takes_its_default_context_when_the_config_names_none(tp, layers, tmp_path_factory):
    config = {**BASE, "num_hidden_layers": layers}
    del config["max_position_embeddings"]
    model = model_dir(tmp_path_factory.mktemp("m"), config)
    for face in FACES:
        result = run_face(model, "sglang", [*face, "--tp", str(tp)] if face[0] != "launch" else face)
        assert result.exit_code in (0, 1) and "Traceback" not in result.output, (face, result.output)
    plan = json.loads(run_face(model, "sglang", ["check", "--json", "--tp", str(tp)]).stdout)
    assert plan["startup"]["context_len"] == 2048
    # 2048 tokens fit whatever the tp: the pool never comes out too small for one request
    assert plan["startup"]["starts"] or plan["startup"]["error"]["id"] != "kv_cache_too_small"
    if layers == 2:
        assert plan["startup"]["starts"] is True


# -- 5. a quantization_config neither engine can read -------------------------------------------------------------------


@given(qc=JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, dict)), nested=st.booleans())
def test_a_quantization_config_that_is_no_object_is_refused(qc, nested):
    config = {**BASE, "text_config": {"quantization_config": qc}} if nested else {**BASE, "quantization_config": qc}
    with pytest.raises(ModelError, match="quantization_config is .*not an object"):
        spec(config)


@given(method=JSON_VALUES.filter(lambda v: not isinstance(v, str)))
def test_a_quant_method_that_is_no_name_is_refused(method):
    with pytest.raises(ModelError, match="quant_method is .*not a name"):
        spec({**BASE, "quantization_config": {"quant_method": method, "bits": 4}})


def test_a_readable_quantization_config_is_kept():
    assert spec({**BASE, "quantization_config": {"quant_method": "FP8"}}).quantization == "fp8"
    assert spec({**BASE, "quantization_config": {"bits": 4}}).quantization is None  # SGLang's modelopt probe reads it


@settings(max_examples=4, deadline=None, suppress_health_check=FIXTURE_OK)
@given(qc=st.sampled_from(["fp8", [1], {"quant_method": 5}, {"quant_method": ["fp8"]}]))
def test_every_face_refuses_an_unreadable_quantization_config(qc, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "quantization_config": qc}),
                               "quant")  # fmt: skip


# -- 6. a sub-config that is no object ------------------------------------------------------------------------------


@given(key=st.sampled_from(["text_config", "vision_config", "llm_config", "language_config", "thinker_config"]),
       value=JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, dict)))  # fmt: skip
def test_a_sub_config_that_is_no_object_is_refused_by_name(key, value):
    with pytest.raises(ModelError, match=f"{key} is .*not an object"):
        spec({**BASE, key: value})


def test_a_null_sub_config_is_an_absent_one():
    assert spec({**BASE, "vision_config": None, "text_config": None}).hidden_size == 4096


@settings(max_examples=3, deadline=None, suppress_health_check=FIXTURE_OK)
@given(value=st.sampled_from([[{"hidden_size": 4096}], "gemma3_text", 5]))
def test_every_face_refuses_a_text_config_that_is_no_object(value, tmp_path_factory):
    config = {"architectures": ["HostileVLForConditionalGeneration"], "model_type": "hostile_vl", "text_config": value}
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), config), "text_config")


# -- 7. an architectures entry that is no class name ---------------------------------------------------------------

NOT_A_CLASS = st.one_of(st.sampled_from(["", " ", "Llama ForCausalLM", "A\x00B", "A\nB\x1b[31m", "X" * 201, "\u202eLlama",
                                         "Qwen2.5ForCausalLM", "9Llama"]),
                        st.text(max_size=12).filter(lambda t: not t.isidentifier()))  # fmt: skip


@given(name=NOT_A_CLASS, more=st.lists(st.just("LlamaForCausalLM"), max_size=2))
def test_an_architecture_that_is_no_class_name_is_refused(name, more):
    with pytest.raises(ModelError, match=r"architectures\[0\] is .*not a model class name"):
        spec({**BASE, "architectures": [name, *more]})


@given(name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,60}", fullmatch=True))
def test_any_class_name_is_taken(name):
    assert spec({**BASE, "architectures": [name]}).architecture == name


@settings(max_examples=3, deadline=None, suppress_health_check=FIXTURE_OK)
@given(name=st.sampled_from(["", "A\nB\x1b[31m", "X" * 5000]))
def test_every_face_refuses_an_architecture_that_is_no_class_name(name, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "architectures": [name]}),
                               "architectures[0]")  # fmt: skip


# -- 8. KV heads that do not group the query heads ----------------------------------------------------------------


@given(heads=st.integers(1, 256), kv=st.integers(1, 256), mla=st.booleans())
def test_kv_heads_must_divide_the_query_heads_unless_mla(heads, kv, mla):
    config = {**BASE, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": 128}
    if mla:
        config.update(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
    if heads % kv and not mla:
        with pytest.raises(ModelError, match="does not divide num_attention_heads"):
            spec(config)
    else:
        assert spec(config).num_kv_heads == kv


@settings(max_examples=2, deadline=None, suppress_health_check=FIXTURE_OK)
@given(kv=st.sampled_from([64, 12]))
def test_every_face_refuses_kv_heads_that_do_not_group_the_query_heads(kv, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "num_key_value_heads": kv}),
                               "num_key_value_heads")  # fmt: skip


# -- 9. a rope_scaling neither engine can read --------------------------------------------------------------------------

BAD_FACTOR = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, 0, -2.0, "4", True, [4], {"f": 4}]),
                       st.floats(max_value=0) | st.text(max_size=4))  # fmt: skip


@given(factor=BAD_FACTOR, key=st.sampled_from(["rope_scaling", "rope_parameters"]), nested=st.booleans())
def test_a_rope_factor_that_is_no_positive_number_is_refused(factor, key, nested):
    rope = {key: {"rope_type": "yarn", "factor": factor}}
    with pytest.raises(ModelError, match=f"{key}.factor is .*not a positive number"):
        spec({**BASE, "text_config": rope} if nested else {**BASE, **rope})


@given(rope=JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, dict)))
def test_a_rope_scaling_that_is_no_object_is_refused(rope):
    with pytest.raises(ModelError, match="rope_scaling is .*not an object"):
        spec({**BASE, "rope_scaling": rope})


@given(factor=st.one_of(st.none(), st.floats(min_value=0.01, max_value=1e6), st.integers(1, 64)))
def test_a_readable_rope_scaling_is_taken(factor):
    spec({**BASE, "rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 4096}})


@settings(max_examples=3, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rope=st.sampled_from([{"type": "yarn", "factor": math.nan}, {"type": "linear", "factor": "2"}, [1]]))
def test_every_face_refuses_an_unreadable_rope_scaling(rope, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "rope_scaling": rope}), "rope_scaling")


# -- 10. a head with no width ---------------------------------------------------------------------------------------------


@given(hidden=st.integers(1, 512), heads=st.integers(1, 512), head_dim=st.one_of(st.none(), st.integers(1, 256)))
def test_a_head_width_of_zero_is_refused_unless_head_dim_is_given(hidden, heads, head_dim):
    config = {**BASE, "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": 1,
              "head_dim": head_dim}  # fmt: skip
    if head_dim is None and hidden < heads:
        with pytest.raises(ModelError, match="smaller than num_attention_heads"):
            spec(config)
    else:
        assert spec(config).head_dim == (head_dim or hidden // heads) > 0


@settings(max_examples=1, deadline=None, suppress_health_check=FIXTURE_OK)
@given(hidden=st.just(16))
def test_every_face_refuses_a_head_with_no_width(hidden, tmp_path_factory):
    assert_refused_in_one_line(model_dir(tmp_path_factory.mktemp("m"), {**BASE, "hidden_size": hidden}), "head_dim")


# -- 11. Mamba / gated-delta-net state sizes ------------------------------------------------------------------------------

QWEN3_NEXT = {**BASE, "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "head_dim": 256,
              "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
              "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}  # fmt: skip
STATE_SIZES = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
               "linear_conv_kernel_dim", "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size",
               "conv_kernel")  # fmt: skip


@given(key=st.sampled_from(STATE_SIZES),
       value=st.one_of(NOT_WHOLE, st.integers(max_value=0), st.integers(min_value=MAX_MODEL_SIZE + 1)))  # fmt: skip
def test_a_state_size_is_checked_as_every_size(key, value):
    with pytest.raises(ModelError, match=f"{key} is .*not a (whole number|size a model can have)"):
        spec({**QWEN3_NEXT, key: value})


def test_the_state_sizes_and_the_ssm_dtype_are_kept():
    state = dict(spec({**QWEN3_NEXT, "mamba_ssm_cache_dtype": "float32"}).state_config)
    assert state["linear_conv_kernel_dim"] == 4 and state["mamba_ssm_cache_dtype"] == "float32"


@settings(max_examples=2, deadline=None, suppress_health_check=FIXTURE_OK)
@given(value=st.sampled_from(["4", -3]))
def test_vllms_hybrid_block_size_never_sees_a_state_size_that_is_no_size(value, tmp_path_factory):
    model = model_dir(tmp_path_factory.mktemp("m"), {**QWEN3_NEXT, "linear_conv_kernel_dim": value})
    result = CliRunner().invoke(main, ["--profile", "h100-sxm-8", "--model", model, "--engine", "vllm",
                                       "--engine-version", "0.17.1", "check", "--json"])  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and "linear_conv_kernel_dim" in result.stderr


# -- 12. SGLang's weights dtype for a config that names none it knows ----------------------------------------------------


@settings(max_examples=6, deadline=None, suppress_health_check=FIXTURE_OK)
@given(dtype=st.sampled_from([None, "int4", "float8_e4m3fn", "float32", "float"]), gemma=st.booleans())
def test_sglang_loads_a_config_without_a_dtype_it_knows_in_half_precision(dtype, gemma, tmp_path_factory):
    config = {**BASE, "model_type": "gemma_hostile" if gemma else "hostile", "torch_dtype": dtype}
    plan = json.loads(run_face(model_dir(tmp_path_factory.mktemp("m"), config), "sglang", ["check", "--json"]).stdout)
    startup = plan["startup"]
    assert startup["starts"] is True and startup["unknown"] is None  # a verdict, not "weights unknown"
    # _get_and_verify_dtype: float32 for a dtype it does not know, then auto loads float32 in 16 bits
    params = plan["model"]["num_params"]
    assert startup["weights_bytes"] == pytest.approx(params * 2 / plan["intent"]["tp"], rel=0.05)
