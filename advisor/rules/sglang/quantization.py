"""The quantization checks SGLang makes at start-up, against each release's own table (quantization.json, written by
``python -m conformance sglang-quantization``): an unknown quant_method stops ModelConfig._verify_quantization
(configs/model_config.py, "Unknown quantization method"), and a GPU below the method's get_min_capability stops the model
loader (model_loader/loader.py _get_quantization_config, "not supported for the current GPU"). The check itself is
advisor/rules/quantization.py's, shared with vLLM.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario
from advisor.rules.quantization import QuantizationTable, Wording, load_tables, quantization_problems, table_for

QUANTIZATION_FILE = Path(__file__).with_name("quantization.json")
WORDING = Wording(
    engine="sglang", flag="--quantization", unknown_id="sglang_quantization_unknown", gpu_id="sglang_quantization_gpu",
    unknown_source="configs/model_config.py (ModelConfig._verify_quantization)",
    gpu_source="model_loader/loader.py (_get_quantization_config: get_min_capability)",
)  # fmt: skip


@cache
def _tables() -> dict[str, QuantizationTable]:
    return load_tables(QUANTIZATION_FILE)


def table(release: str) -> QuantizationTable | None:
    return table_for(_tables(), release)


def problems(s: Scenario, release: str) -> list[Problem]:
    return quantization_problems(s, table(release), WORDING)
