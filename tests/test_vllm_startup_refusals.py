"""Start-up refusals of vLLM that the differential fuzzer found the advisor missing: a config class that rejects a
changed key at load, a model dtype the quantization method does not run (gpt_oss_mxfp4 under float16), float16 for a
model type that refuses it, ModelOpt below the capability of the class its algorithm selects, a pooling-only class
under --runner generate (docs/vllm.md). Each is an error of the plan, so `advisor check` exits 1 and
`advisor launch` refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.models import load_config_dir
from advisor.rules.vllm import quantization as vllm_quantization
from advisor.rules.vllm.config_validation import CONFIG_REFUSED, class_facts
from advisor.rules.vllm.dtype import FLOAT16_ID
from advisor.rules.vllm.quantization import DTYPE_ID
from advisor.rules.vllm.runner import RUNNER_ID
from advisor.rules.vllm.text_config import (
    MODEL_TYPE_UNKNOWN,
    NEWER_LAYOUT,
    REMOTE_CODE_REQUIRED,
    ROPE_NESTED_REFUSED,
)
from conformance.vllm.compare import plan_for

CONFIGS = Path(__file__).resolve().parent / "conformance" / "configs"
RELEASES = tuple(json.loads(vllm_quantization.QUANTIZATION_FILE.read_text())["releases"])


def config(name: str, **changes) -> dict:
    return {**json.loads((CONFIGS / name / "config.json").read_text()), **changes}


def model_dir(root: Path, cfg: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(cfg))
    return root


def ids(root: Path, cfg: dict, release: str = "0.33.0", profile: str = "h100-sxm-8", tp: int = 1) -> set[str]:
    plan = plan_for(release, profile, tp, load_config_dir(model_dir(root, cfg), model_id="m"))
    return {p.id for p in plan.problems if p.severity == "error"}


def cli(model: Path, face: list[str], release: str = "0.33.0", extra=()):
    args = ["--profile", "h100-sxm-8", "--model", str(model), "--engine", "vllm", "--engine-version", release]
    result = CliRunner().invoke(main, [*args, *face, *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


# -- the quantization method's activation dtypes -----------------------------------------------------------------------
def test_every_release_reads_mxfp4_as_bfloat16_only():
    for release in RELEASES:
        table = vllm_quantization.table(release)
        assert table.act_dtypes["mxfp4"] == {"bfloat16"}, release
        assert "float16" in table.act_dtypes["fp8"], release


@pytest.mark.parametrize("release", ["0.12.0", "0.20.2", "0.33.0"])
def test_gpt_oss_mxfp4_under_float16_is_refused(tmp_path, release):
    assert DTYPE_ID in ids(tmp_path, config("gpt-oss-120b", torch_dtype="float16"), release)
    assert DTYPE_ID not in ids(tmp_path / "bf16", config("gpt-oss-120b"), release)


def test_float32_config_resolves_to_bfloat16_and_passes(tmp_path):
    # _resolve_auto_dtype cuts a float32 config to the GPU's preferred dtype, which mxfp4 runs
    assert DTYPE_ID not in ids(tmp_path, config("gpt-oss-120b", torch_dtype="float32"))


def test_dtype_flag_decides_over_the_config(tmp_path):
    model = model_dir(tmp_path, config("gpt-oss-120b"))
    plan = json.loads(cli(model, ["check", "--json"], extra=("--", "--dtype", "half")).stdout)
    assert DTYPE_ID in {p["id"] for p in plan["problems"] if p["severity"] == "error"}


def test_awq_checkpoint_is_not_judged_by_the_awq_class_where_marlin_may_take_it(tmp_path):
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
    cfg = config("llama-3.1-8b", quantization_config=awq)
    assert vllm_quantization.table("0.12.0").act_dtypes["awq"] == {"float16"}
    assert DTYPE_ID not in ids(tmp_path, cfg, "0.12.0")  # vLLM may run it as awq_marlin (bfloat16 too)


def refused_by_check_and_launch(model, problem_id: str) -> dict:
    """The problem `advisor check --json` reports (exit 1), after checking that `advisor launch` refuses too."""
    check = cli(model, ["check", "--json"])
    assert check.exit_code == 1
    launch = cli(model, ["launch", "--dry-run"])
    assert launch.exit_code == 1 and "refuse" in launch.output
    return next(p for p in json.loads(check.stdout)["problems"] if p["id"] == problem_id)


def test_check_and_launch_report_the_dtype_refusal(tmp_path):
    problem = refused_by_check_and_launch(model_dir(tmp_path, config("gpt-oss-120b", torch_dtype="float16")), DTYPE_ID)
    assert "gpt_oss_mxfp4" in problem["message"] and "--dtype bfloat16" in problem["fix"]


# -- float16 for the model types vLLM refuses it for -----------------------------------------------------------------
def test_float16_flag_for_gemma2_is_refused_and_auto_is_not(tmp_path):
    model = model_dir(tmp_path, config("named-Gemma2ForCausalLM", torch_dtype="float16"))
    flagged = json.loads(cli(model, ["check", "--json"], extra=("--", "--dtype", "float16")).stdout)
    assert FLOAT16_ID in {p["id"] for p in flagged["problems"]}
    auto = json.loads(cli(model, ["check", "--json"]).stdout)  # auto leaves float16 out for gemma2: bfloat16
    assert FLOAT16_ID not in {p["id"] for p in auto["problems"]}
    launch = cli(model, ["launch", "--dry-run"], extra=("--", "--dtype", "float16"))
    assert launch.exit_code == 1 and "refuse" in launch.output


# -- the runner ------------------------------------------------------------------------------------------------------
def unknown_then(arch_dir: str) -> dict:
    cfg = config(arch_dir)
    return {**cfg, "architectures": ["Fuzz0A0B0CForCausalLM", *cfg["architectures"]]}


@pytest.mark.parametrize("release", ["0.12.0", "0.20.2", "0.25.1", "0.33.0"])
def test_a_generative_suffix_before_a_pooling_class_is_refused(tmp_path, release):
    # --runner auto: the unserved first entry's suffix says generate; the served class pools and does not generate
    assert RUNNER_ID in ids(tmp_path, unknown_then("vllm-RobertaForSequenceClassification"), release)


def test_the_pooling_class_alone_takes_the_pooling_runner(tmp_path):
    assert RUNNER_ID not in ids(tmp_path, config("vllm-RobertaForSequenceClassification"))
    assert RUNNER_ID not in ids(tmp_path / "gen", config("llama-3.1-8b"))


def test_runner_generate_flag_on_a_pooling_class_names_the_release_message(tmp_path):
    model = model_dir(tmp_path, config("vllm-RobertaForSequenceClassification"))
    for release, said in (("0.33.0", "Embedding models do not support"), ("0.20.2", "This model does not support")):
        result = cli(model, ["check", "--json"], release, extra=("--", "--runner", "generate"))
        assert result.exit_code == 1
        problem = next(p for p in json.loads(result.stdout)["problems"] if p["id"] == RUNNER_ID)
        assert said in problem["message"] and "--runner pooling" in problem["fix"]
    launch = cli(model, ["launch", "--dry-run"], extra=("--", "--runner", "generate"))
    assert launch.exit_code == 1 and "refuse" in launch.output


def test_runner_pooling_with_convert_none_on_a_generative_class_is_refused(tmp_path):
    model = model_dir(tmp_path, config("llama-3.1-8b"))
    refused = cli(model, ["check", "--json"], extra=("--", "--runner", "pooling", "--convert", "none"))
    assert RUNNER_ID in {p["id"] for p in json.loads(refused.stdout)["problems"]}
    adapted = cli(model, ["check", "--json"], extra=("--", "--runner", "pooling", "--convert", "embed"))
    assert RUNNER_ID not in {p["id"] for p in json.loads(adapted.stdout)["problems"]}


# -- ModelOpt below the capability its algorithm's class states ----------------------------------------------------
@pytest.mark.parametrize(
    "algo, release, refused",
    [("FP8", "0.12.0", True), ("FP8", "0.25.1", True), ("FP8", "0.27.1", False), ("FP8", "0.33.0", False),
     ("MIXED_PRECISION", "0.20.2", True), ("MIXED_PRECISION", "0.25.1", False), ("MXFP8", "0.17.1", True),
     ("MXFP8", "0.20.2", False), ("NVFP4", "0.12.0", False)],
)  # fmt: skip
def test_modelopt_on_an_a100_follows_the_class_its_algorithm_selects(tmp_path, algo, release, refused):
    cfg = config("llama-3.1-8b", quantization_config={"quant_method": "modelopt", "quant_algo": algo})
    assert ("vllm_quantization_gpu" in ids(tmp_path, cfg, release, "a100-sxm-8")) == refused
    assert "vllm_quantization_gpu" not in ids(tmp_path / "h200", cfg, release, "b200-8")


def test_modelopt_fp8_below_sm89_is_refused_by_check_and_launch(tmp_path):
    model = model_dir(tmp_path, config("llama-3.1-8b", quantization_config={"quant_method": "modelopt",
                                                                              "quant_algo": "FP8"}))  # fmt: skip
    args = ["--profile", "a100-sxm-8", "--model", str(model), "--engine", "vllm", "--engine-version", "0.25.1"]
    check = CliRunner().invoke(main, [*args, "check", "--json"])
    assert check.exit_code == 1
    problem = next(p for p in json.loads(check.stdout)["problems"] if p["id"] == "vllm_quantization_gpu")
    assert "'modelopt'" in problem["message"] and "8.9" in problem["message"]
    launch = CliRunner().invoke(main, [*args, "launch", "--dry-run"])
    assert launch.exit_code == 1 and "refuse" in launch.output


# -- config classes that refuse a changed key at load (config_validation.json) --------------------------------------
def layer_kinds(n: int, *kinds: str) -> list[str]:
    return [kinds[i % len(kinds)] for i in range(n)]


def test_the_table_holds_the_classes_the_fuzzer_found():
    assert class_facts("jamba", "0.33.0").get("layer_types_readonly")
    assert class_facts("beam", "0.33.0")["layer_types_allowed"] == ["full_attention", "sliding_attention"]
    assert "yarn" in class_facts("dory", "0.33.0")["rope_scaling_refused"]
    assert class_facts("llama", "0.33.0").get("layer_types_length")
    assert class_facts("longcat_flash", "0.33.0")["num_hidden_layers"] == 56  # 2 x num_layers, a computed property
    # v0.14.1 pins transformers<5: read with 4.57.6, whose LlamaConfig validates none of the probed keys
    assert class_facts("llama", "0.14.1") == {}
    # v0.33.0 builds Beam with vLLM's own class (its _CONFIG_REGISTRY), which takes full and sliding attention only;
    # v0.30.0 registers none and builds transformers' class, which refuses no layer kind
    assert "layer_types_allowed" not in class_facts("beam", "0.30.0")


def test_layer_types_for_a_class_that_computes_them_is_refused(tmp_path):
    cfg = config("vllm-JambaForCausalLM")
    assert CONFIG_REFUSED not in ids(tmp_path, cfg)
    refused = ids(tmp_path / "lt", {**cfg, "layer_types": layer_kinds(32, "linear_attention", "full_attention")})
    assert CONFIG_REFUSED in refused


def test_a_layer_kind_vllms_own_class_does_not_take_is_refused(tmp_path):
    cfg = config("named-BeamForCausalLM")
    assert CONFIG_REFUSED not in ids(tmp_path, cfg)
    linear = {**cfg, "layer_types": layer_kinds(52, "linear_attention", "full_attention")}
    assert CONFIG_REFUSED in ids(tmp_path / "linear", linear)
    assert CONFIG_REFUSED not in ids(tmp_path / "v30", linear, "0.30.0")  # transformers' class there
    assert CONFIG_REFUSED not in ids(tmp_path / "v20", linear, "0.20.2")  # transformers' class there too


def test_layer_types_of_another_length_is_refused(tmp_path):
    cfg = config("llama-3.1-8b")
    assert CONFIG_REFUSED not in ids(tmp_path, {**cfg, "layer_types": layer_kinds(32, "full_attention")})
    assert CONFIG_REFUSED in ids(tmp_path / "short", {**cfg, "layer_types": layer_kinds(30, "full_attention")})


def test_the_class_default_layer_count_applies_where_config_json_writes_none(tmp_path):
    cfg = config("named-LongcatFlashForCausalLM")  # num_layers 28: the class's num_hidden_layers is 56
    assert CONFIG_REFUSED not in ids(tmp_path, {**cfg, "layer_types": layer_kinds(56, "full_attention")})
    assert CONFIG_REFUSED in ids(tmp_path / "32", {**cfg, "layer_types": layer_kinds(32, "full_attention")})


def test_a_flat_rope_scaling_beside_per_layer_rope_parameters_is_refused(tmp_path):
    cfg = config("vllm-DoryForCausalLM")
    assert CONFIG_REFUSED not in ids(tmp_path, cfg)
    yarn = {**cfg, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert CONFIG_REFUSED in ids(tmp_path / "yarn", yarn)
    llama = config("llama-3.1-8b")  # llama takes a flat rope_scaling
    assert CONFIG_REFUSED not in ids(tmp_path / "llama", llama)


def test_check_and_launch_report_the_config_class_refusal(tmp_path):
    cfg = config("named-BeamForCausalLM")
    model = model_dir(tmp_path, {**cfg, "layer_types": layer_kinds(52, "linear_attention", "full_attention")})
    problem = refused_by_check_and_launch(model, CONFIG_REFUSED)
    assert "'beam'" in problem["message"] and "linear_attention" in problem["message"]


def test_null_for_a_size_the_class_declares_a_number_is_refused(tmp_path):
    cfg = config("named-HYV4ForCausalLM")
    assert "q_lora_rank" in class_facts("hy_v4", "0.33.0")["null_refused"]
    assert CONFIG_REFUSED not in ids(tmp_path, cfg)
    assert CONFIG_REFUSED in ids(tmp_path / "null", {**cfg, "q_lora_rank": None})
    llama = config("llama-3.1-8b")  # LlamaConfig's head_dim admits null (derived from the hidden size)
    assert "head_dim" not in class_facts("llama", "0.33.0").get("null_refused", ())
    assert CONFIG_REFUSED not in ids(tmp_path / "llama", {**llama, "head_dim": None})


# -- a model_type with no config class ---------------------------------------------------------------------------------
def test_remote_config_code_needs_trust_remote_code(tmp_path):
    baichuan = config("named-BaichuanForCausalLM")  # model_type baichuan, auto_map names configuration.BaichuanConfig
    assert REMOTE_CODE_REQUIRED in ids(tmp_path / "plain", baichuan)
    trusted = tmp_path / "trusted"
    model_dir(trusted, baichuan)
    assert REMOTE_CODE_REQUIRED not in {
        p.id
        for p in plan_for(
            "0.33.0", "h100-sxm-8", 1, load_config_dir(trusted, model_id="m"), overrides=("--trust-remote-code",)
        ).problems
    }
    # argparse keeps the last of the pair
    again = plan_for(
        "0.33.0",
        "h100-sxm-8",
        1,
        load_config_dir(trusted, model_id="m"),
        overrides=("--trust-remote-code", "--no-trust-remote-code"),
    )
    assert REMOTE_CODE_REQUIRED in {p.id for p in again.problems}


def test_a_model_type_nobody_defines_is_refused_and_a_known_one_is_not(tmp_path):
    assert MODEL_TYPE_UNKNOWN in ids(tmp_path / "made-up", config("llama-3.1-8b", model_type="llama_made_up"))
    assert not {MODEL_TYPE_UNKNOWN, REMOTE_CODE_REQUIRED} & ids(tmp_path / "llama", config("llama-3.1-8b"))
    # no model_type at all: transformers guesses from the path, the plan says nothing
    no_type = {k: v for k, v in config("llama-3.1-8b").items() if k != "model_type"}
    assert MODEL_TYPE_UNKNOWN not in ids(tmp_path / "none", no_type)


def test_the_release_transformers_decides_which_model_types_exist(tmp_path):
    # v0.14.1 pins transformers<5 (4.57.6 has no Gemma 4); v0.33.0 runs one that has it
    gemma4 = config("named-Gemma4ForCausalLM")
    assert MODEL_TYPE_UNKNOWN in ids(tmp_path / "old", gemma4, "0.14.1")
    assert MODEL_TYPE_UNKNOWN not in ids(tmp_path / "new", gemma4, "0.33.0")


def test_check_and_launch_report_the_remote_code_refusal(tmp_path):
    problem = refused_by_check_and_launch(
        model_dir(tmp_path, config("named-BaichuanForCausalLM")), REMOTE_CODE_REQUIRED
    )
    assert "'baichuan'" in problem["message"] and "--trust-remote-code" in problem["fix"]


def test_rope_parameters_nested_by_layer_type_stop_a_transformers_4_release(tmp_path):
    gemma3 = config("named-Gemma3ForCausalLM")  # rope_parameters {"full_attention": ..., "sliding_attention": ...}
    assert ROPE_NESTED_REFUSED in ids(tmp_path / "v14", gemma3, "0.14.1")  # transformers 4.57.6
    assert ROPE_NESTED_REFUSED not in ids(tmp_path / "v19", gemma3, "0.19.1")  # transformers 5
    flat = {**config("llama-3.1-8b"), "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}
    assert ROPE_NESTED_REFUSED not in ids(tmp_path / "flat", flat, "0.14.1")


def test_a_config_written_by_a_newer_transformers_major_is_a_warning(tmp_path):
    llama = config("llama-3.1-8b", transformers_version="5.2.0")
    plan = plan_for("0.14.1", "h100-sxm-8", 1, load_config_dir(model_dir(tmp_path / "new", llama), model_id="m"))
    warning = next(p for p in plan.problems if p.id == NEWER_LAYOUT)
    assert warning.severity == "warning" and "5.2.0" in warning.message and "4.57.6" in warning.message
    same = plan_for("0.33.0", "h100-sxm-8", 1, load_config_dir(model_dir(tmp_path / "same", llama), model_id="m"))
    assert NEWER_LAYOUT not in {p.id for p in same.problems}
    old = config("llama-3.1-8b", transformers_version="4.43.0.dev0")
    older = plan_for("0.14.1", "h100-sxm-8", 1, load_config_dir(model_dir(tmp_path / "old", old), model_id="m"))
    assert NEWER_LAYOUT not in {p.id for p in older.problems}


def test_rope_parameters_without_a_rope_type_stop_a_transformers_4_release_unless_rope_scaling_is_written(tmp_path):
    typeless = config("llama-3.1-8b", rope_parameters={"rope_theta": 500000.0}, rope_scaling=None)
    assert ROPE_NESTED_REFUSED in ids(tmp_path / "typeless", typeless, "0.14.1")
    # transformers 4's branch takes a written rope_scaling as the rope_parameters
    scaled = {**typeless, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    assert ROPE_NESTED_REFUSED not in ids(tmp_path / "scaled", scaled, "0.14.1")


def test_an_empty_model_type_has_no_config_class(tmp_path):
    assert MODEL_TYPE_UNKNOWN in ids(tmp_path, config("llama-3.1-8b", model_type=""))
