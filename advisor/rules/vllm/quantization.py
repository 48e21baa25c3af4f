"""The quantization checks vLLM makes at start-up, against each release's own table (quantization.json, written by
``python -m conformance vllm-quantization``): an unknown quant_method stops ModelConfig._verify_quantization
(vllm/config/model.py, "Unknown quantization method"), a deprecated one too unless --allow-deprecated-quantization, and a
GPU below the method's get_min_capability stops VllmConfig._get_quantization_config (vllm/config/vllm.py, "not supported
for the current GPU"). The check itself is advisor/rules/quantization.py's, shared with SGLang.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario
from advisor.rules.quantization import QuantizationTable, Wording, load_tables, quantization_problems, table_for
from advisor.rules.vllm.common import rules_release

QUANTIZATION_FILE = Path(__file__).with_name("quantization.json")
WORDING = Wording(
    engine="vllm", flag="--quantization", unknown_id="vllm_quantization_unknown", gpu_id="vllm_quantization_gpu",
    unknown_source="vllm/config/model.py (ModelConfig._verify_quantization)",
    gpu_source="vllm/config/vllm.py (VllmConfig._get_quantization_config: get_min_capability)",
    deprecated_id="vllm_quantization_deprecated", deprecated_flag="--allow-deprecated-quantization",
    deprecated_source="vllm/config/model.py (ModelConfig._verify_quantization, DEPRECATED_QUANTIZATION_METHODS)",
    empty_is_none=True,  # "quant_method if quant_method != '' else None"
)  # fmt: skip


@cache
def _tables() -> dict[str, QuantizationTable]:
    return load_tables(QUANTIZATION_FILE)


def table(version: str) -> QuantizationTable | None:
    return table_for(_tables(), rules_release(version))


def problems(s: Scenario, version: str) -> list[Problem]:
    return quantization_problems(s, table(version), WORDING)
