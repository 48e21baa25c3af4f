"""The quantization checks vLLM makes at start-up, against each release's own table (quantization.json, written by
``python -m conformance vllm-quantization``): an unknown quant_method stops ModelConfig._verify_quantization
(vllm/config/model.py, "Unknown quantization method"), a deprecated one too unless --allow-deprecated-quantization, and a
GPU below the method's get_min_capability stops VllmConfig._get_quantization_config (vllm/config/vllm.py, "not supported
for the current GPU"). The check itself is advisor/rules/quantization.py's, shared with SGLang. The same function then
refuses a model dtype (advisor/rules/vllm/dtype.py) that the method's get_supported_act_dtypes does not list ("is not
supported for quantization method"), vLLM's alone.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario, parse_release
from advisor.rules.quantization import (
    QuantizationTable,
    Wording,
    checked_method,
    load_tables,
    quantization_problems,
    table_for,
)
from advisor.rules.vllm.architectures import fixup_names
from advisor.rules.vllm.common import rules_release
from advisor.rules.vllm.dtype import model_dtype

QUANTIZATION_FILE = Path(__file__).with_name("quantization.json")
# ModelOpt's detection steps (override_quantization_method of each ModelOpt config class,
# vllm/model_executor/layers/quantization/modelopt.py) from v0.17.1, where MXFP8 and MIXED_PRECISION get their own
# classes: quant_algo containing "MXFP8" runs modelopt_mxfp8, quant_algo "MIXED_PRECISION" modelopt_mixed, each with
# its own least capability (modelopt_mixed 8.9 up to v0.20.2, 7.5 from v0.25.1; ModelOpt FP8 8.9 up to v0.25.1). They
# read a quant_method "modelopt" (from v0.25.1 any name starting with it). FP8 / FP4 are ModelSpec.quantization's.
MODELOPT_PREFIX_FROM = "0.25.1"


def _modelopt_name(s: Scenario, table: QuantizationTable) -> str | None:
    model = s.model
    method = model.quant_method or ""
    prefixed = parse_release(table.release) >= parse_release(MODELOPT_PREFIX_FROM) and method.startswith("modelopt")
    if method != "modelopt" and not prefixed:
        return None
    algo = str(dict(model.quant_config).get("quant_algo") or "").upper()
    if "MXFP8" in algo and "modelopt_mxfp8" in table.methods:
        return "modelopt_mxfp8"
    if algo == "MIXED_PRECISION" and "modelopt_mixed" in table.methods:
        return "modelopt_mixed"
    return None


WORDING = Wording(
    engine="vllm", flag="--quantization", unknown_id="vllm_quantization_unknown", gpu_id="vllm_quantization_gpu",
    unknown_source="vllm/config/model.py (ModelConfig._verify_quantization)",
    gpu_source="vllm/config/vllm.py (VllmConfig._get_quantization_config: get_min_capability)",
    deprecated_id="vllm_quantization_deprecated", deprecated_flag="--allow-deprecated-quantization",
    deprecated_source="vllm/config/model.py (ModelConfig._verify_quantization, DEPRECATED_QUANTIZATION_METHODS)",
    empty_is_none=True,  # "quant_method if quant_method != '' else None"
    detect=_modelopt_name,
)  # fmt: skip


@cache
def _tables() -> dict[str, QuantizationTable]:
    return load_tables(QUANTIZATION_FILE)


def table(version: str) -> QuantizationTable | None:
    return table_for(_tables(), rules_release(version))


DTYPE_ID = "vllm_quantization_dtype"
# GptOssForCausalLMConfig.verify_and_update_model_config (vllm/model_executor/models/config.py) renames a GPT-OSS
# checkpoint's "mxfp4" to "gpt_oss_mxfp4" in the releases that register that name (v0.20.2 on).
GPT_OSS = "GptOssForCausalLM"


def _vllm_name(s: Scenario, method: str, found: QuantizationTable, version: str) -> str:
    if method == "mxfp4" and "gpt_oss_mxfp4" in found.methods and GPT_OSS in fixup_names(s.model, version):
        return "gpt_oss_mxfp4"
    return method


DTYPE_SOURCE = "vllm/config/vllm.py (VllmConfig._get_quantization_config: get_supported_act_dtypes)"


def dtype_problems(s: Scenario, version: str) -> list[Problem]:
    """The model dtype the quantization method's config class does not list. A checkpoint method the release may
    rewrite to its Marlin variant (awq -> awq_marlin, gptq -> gptq_marlin, by the checkpoint's fields and the GPU) is
    judged only when --quantization names it: which class vLLM checks is then not known here."""
    found = table(version)
    if found is None or s.model is None:
        return []
    method = checked_method(s, found, WORDING)
    method = _vllm_name(s, method, found, version) if method else None
    dtype = model_dtype(s, version)
    supported = found.act_dtypes.get(method or "")
    if method is None or dtype is None or supported is None or dtype in supported:
        return []
    if f"{method}_marlin" in found.methods and not s.flag(WORDING.flag):
        return []
    listed = ", ".join(sorted(supported))
    return [Problem(
        DTYPE_ID, "error",
        f"vllm {version} runs {method!r} quantization in {listed} only, and the model dtype resolves to {dtype}: it"
        f" stops at start-up ('{dtype} is not supported for quantization method {method}')",
        f"pass --dtype {sorted(supported)[0]}, or use a checkpoint quantized for {dtype}",
        f"vllm v{found.release}, {DTYPE_SOURCE}",
    )]  # fmt: skip


def problems(s: Scenario, version: str) -> list[Problem]:
    return quantization_problems(s, table(version), WORDING) + dtype_problems(s, version)
