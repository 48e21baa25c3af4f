"""The quantization method each engine release refuses at start-up (advisor/rules/quantization.py and each engine's
quantization.json): unknown names, deprecated vLLM methods, GPUs below a method's least capability; on every face."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.rules.sglang import quantization as sglang_quantization
from advisor.rules.sglang.releases import RELEASES as SGLANG_RELEASES
from advisor.rules.vllm import quantization as vllm_quantization
from conformance.sglang import quantization as sglang_extractor

LLAMA = json.loads(
    (Path(__file__).resolve().parent / "conformance" / "configs" / "llama-3.1-8b" / "config.json").read_text()
)
VLLM_RELEASES = tuple(json.loads(vllm_quantization.QUANTIZATION_FILE.read_text())["releases"])
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


def model_dir(root: Path, quantization: dict) -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": quantization}))
    return str(root)


def run(model: str, engine: str, release: str, face: list[str], profile: str = "h100-sxm-8", extra=()):
    args = ["--profile", profile, "--model", model, "--engine", engine, "--engine-version", release]
    result = CliRunner().invoke(main, [*args, *face, *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def error_ids(model: str, engine: str, release: str, profile: str = "h100-sxm-8", extra=()) -> set[str]:
    result = run(model, engine, release, ["check", "--json"], profile, extra)
    plan = json.loads(result.stdout)
    ids = {p["id"] for p in plan["problems"] if p["severity"] == "error"}
    assert (result.exit_code == 1) == bool(ids), (result.exit_code, ids)
    return ids


@pytest.mark.parametrize("engine, releases", [("sglang", SGLANG_RELEASES), ("vllm", VLLM_RELEASES)])
def test_an_unknown_quant_method_is_refused_by_every_release(engine, releases, tmp_path):
    model = model_dir(tmp_path, {"quant_method": "acme_q", "bits": 4})
    for release in releases:
        assert f"{engine}_quantization_unknown" in error_ids(model, engine, release), release


def test_a_misspelt_method_names_the_one_it_looks_like(tmp_path):
    model = model_dir(tmp_path, {"quant_method": "FP-8"})
    for engine, release in (("sglang", "0.5.23"), ("vllm", "0.33.0")):
        plan = json.loads(run(model, engine, release, ["check", "--json"]).stdout)
        problem = next(p for p in plan["problems"] if p["id"] == f"{engine}_quantization_unknown")
        assert "'fp-8'" in problem["message"] and '"quant_method": "fp8"' in problem["fix"]


@settings(max_examples=30, deadline=None, suppress_health_check=FIXTURE_OK)
@given(data=st.data())
def test_every_method_a_release_registers_is_not_called_unknown(data, tmp_path_factory):
    engine, module, releases = data.draw(st.sampled_from([("sglang", sglang_quantization, SGLANG_RELEASES),
                                                          ("vllm", vllm_quantization, VLLM_RELEASES)]))  # fmt: skip
    release = data.draw(st.sampled_from(releases))
    method = data.draw(st.sampled_from(sorted(module.table(release).methods)))
    model = model_dir(tmp_path_factory.mktemp("m"), {"quant_method": method})
    assert f"{engine}_quantization_unknown" not in error_ids(model, engine, release)


def test_every_face_refuses_an_unknown_method(tmp_path):
    model = model_dir(tmp_path, {"quant_method": "acme_q"})
    for engine, release in (("sglang", "0.5.23"), ("vllm", "0.33.0")):
        assert run(model, engine, release, ["check"]).exit_code == 1
        launch = run(model, engine, release, ["launch", "--dry-run"])
        assert launch.exit_code == 1 and "'acme_q'" in launch.output and "refuse" in launch.output
        assert f"{engine}_quantization_unknown" in run(model, engine, release, ["layouts"]).output
        assert "acme_q" in run(model, engine, release, ["explain", "memory_defaults"]).output


MODELOPT_FP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4"}


def test_a_method_below_the_gpu_capability_is_refused_where_the_release_says_so(tmp_path):
    model = model_dir(tmp_path, MODELOPT_FP4)
    assert sglang_quantization.table("0.5.7").methods["modelopt_fp4"] == 100  # SM100 only then
    assert "sglang_quantization_gpu" in error_ids(model, "sglang", "0.5.7", "h100-sxm-8")
    assert "sglang_quantization_gpu" not in error_ids(model, "sglang", "0.5.7", "b200-8")
    assert "sglang_quantization_gpu" not in error_ids(model, "sglang", "0.5.23", "h100-sxm-8")  # least 8.0 there
    assert "vllm_quantization_gpu" not in error_ids(model, "vllm", "0.33.0", "h100-sxm-8")


def test_a_deprecated_vllm_method_needs_its_flag(tmp_path):
    model = model_dir(tmp_path, {"quant_method": "fbgemm_fp8"})
    assert "fbgemm_fp8" in vllm_quantization.table("0.33.0").deprecated
    assert "vllm_quantization_deprecated" in error_ids(model, "vllm", "0.33.0")
    allowed = error_ids(model, "vllm", "0.33.0", extra=("--", "--allow-deprecated-quantization"))
    assert "vllm_quantization_deprecated" not in allowed
    assert "vllm_quantization_deprecated" not in error_ids(model, "vllm", "0.12.0")  # no deprecation list yet


def test_the_extractor_reads_the_cuda_registry_and_least_capabilities():
    init = """
BASE_QUANTIZATION_METHODS = {"fp8": Fp8Config, "awq": AWQConfig}
if is_cuda():
    BASE_QUANTIZATION_METHODS.update({"mxfp4": Mxfp4Config})
if is_npu():
    BASE_QUANTIZATION_METHODS.update({"npu_only": NpuConfig})
"""
    configs = """
class Fp8Config:
    @classmethod
    def get_min_capability(cls):
        return 80


class AWQConfig:
    @classmethod
    def get_min_capability(cls):
        return Fp8Config.get_min_capability()

    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant):
        return "awq" if cls.compatible(hf_quant_cfg) else None

    @classmethod
    def compatible(cls, cfg):
        return cfg.get("quant_method", "").lower() == "autoawq"


class Mxfp4Config:
    pass
"""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as zf:
        zf.writestr(sglang_extractor.PACKAGE + "__init__.py", init)
        zf.writestr(sglang_extractor.PACKAGE + "configs.py", configs)
    read = sglang_extractor.read(zipfile.ZipFile(data))
    assert read == {"methods": {"awq": 80, "fp8": 80, "mxfp4": None}, "detected": ["autoawq"]}


def test_an_empty_quant_method_is_unknown_to_sglang_and_none_to_vllm(tmp_path):
    model = model_dir(tmp_path, {"quant_method": ""})
    assert "sglang_quantization_unknown" in error_ids(model, "sglang", "0.5.23")
    assert not {i for i in error_ids(model, "vllm", "0.33.0") if "quantization" in i}


GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}


@pytest.mark.parametrize(
    "change, refused",
    [({}, False), ({"group_size": 96}, True), ({"sym": False}, True), ({"bits": 3}, True),
     ({"checkpoint_format": "marlin"}, True), ({"desc_act": None}, True)],
)  # fmt: skip
def test_sglang_runs_gptq_only_through_marlin_from_v0_5_20(change, refused, tmp_path):
    model = model_dir(tmp_path, {**GPTQ, **change})
    assert ("sglang_quantization_unknown" in error_ids(model, "sglang", "0.5.23")) == refused
    assert "sglang_quantization_unknown" not in error_ids(model, "sglang", "0.5.19")  # plain gptq still registered
    assert "vllm_quantization_unknown" not in error_ids(model, "vllm", "0.33.0")


def test_the_vllm_extractor_reads_methods_deprecations_and_their_classes():
    from conformance.vllm import quantization as vllm_extractor

    init = """
QuantizationMethods = Literal["fp8", "gptq", "old_q"]
DEPRECATED_QUANTIZATION_METHODS = ["old_q"]


def get_quantization_config(quantization):
    method_to_config = {"fp8": Fp8Config, "gptq": GPTQConfig}
    return method_to_config[quantization]
"""
    configs = """
class Fp8Config:
    @classmethod
    def get_min_capability(cls):
        return 75

    def get_supported_act_dtypes(self):
        return [torch.bfloat16, torch.half, torch.float8_e4m3fn]


class GPTQConfig:
    @classmethod
    def get_min_capability(cls):
        return 60

    @classmethod
    def get_supported_act_dtypes(cls):
        return supported_dtypes()
"""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as zf:
        zf.writestr(vllm_extractor.PACKAGE + "__init__.py", init)
        zf.writestr(vllm_extractor.PACKAGE + "configs.py", configs)
    read = vllm_extractor.read(zipfile.ZipFile(data))
    # a constant list of torch dtypes is read (FP8 dropped: no model dtype); a computed one is left out
    assert read == {"methods": {"fp8": 75, "gptq": 60, "old_q": None}, "act_dtypes": {"fp8": ["bfloat16", "float16"]},
                    "deprecated": ["old_q"], "detected": []}  # fmt: skip
