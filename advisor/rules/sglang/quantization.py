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


# From v0.5.20 SGLang registers no plain "gptq" method on CUDA: a GPTQ checkpoint runs only where
# GPTQMarlinConfig.override_quantization_method (layers/quantization/gptq/gptq.py) turns it into gptq_marlin, which needs
# (is_gptq_marlin_compatible, check_marlin_format, marlin_utils.py _check_marlin_supported): not a Marlin-format
# checkpoint (checkpoint_format "marlin" or is_marlin_format), bits, group_size, sym and desc_act all written, (bits, sym)
# one of (4, true), (8, true), group_size one of -1, 32, 64, 128, a GPU of capability 8.0 or newer, and --quantization
# not given or marlin / gptq_marlin. Otherwise "gptq" stays and _verify_quantization refuses it as unknown.
GPTQ, MARLIN_TYPES, MARLIN_GROUP_SIZES, MARLIN_LEAST_CAPABILITY = "gptq", {(4, True), (8, True)}, (-1, 32, 64, 128), 80
MARLIN_USER_QUANT = (None, "marlin", "gptq_marlin")


def marlin_refusal(s: Scenario) -> str | None:
    """Why the GPTQ-to-Marlin step leaves this GPTQ checkpoint as gptq, or None where it converts it."""
    qc = dict(s.model.quant_config)
    if qc.get("checkpoint_format") == "marlin" or qc.get("is_marlin_format"):
        return "it is already in Marlin format, which the step skips"
    missing = [k for k in ("bits", "group_size", "sym", "desc_act") if qc.get(k) is None]
    if missing:
        return f"quantization_config lacks {', '.join(missing)}"
    if (qc["bits"], qc["sym"]) not in MARLIN_TYPES:
        return f"bits {qc['bits']} with sym {qc['sym']} (Marlin takes 4 or 8 bits, symmetric)"
    if qc["group_size"] not in MARLIN_GROUP_SIZES:
        return f"group_size {qc['group_size']} (Marlin takes {', '.join(map(str, MARLIN_GROUP_SIZES))})"
    cap = s.capability
    if cap is not None and cap[0] * 10 + cap[1] < MARLIN_LEAST_CAPABILITY:
        return f"the GPU's capability {cap[0]}.{cap[1]} (Marlin needs 8.0 or newer)"
    given = s.flag(WORDING.flag)
    if (given.lower() if given else None) not in MARLIN_USER_QUANT:
        return f"--quantization {given} (the step converts only without it or with marlin / gptq_marlin)"
    return None


def problems(s: Scenario, release: str) -> list[Problem]:
    found = quantization_problems(s, table(release), WORDING)
    entry = table(release)
    if entry is None or s.model is None or s.model.quant_method != GPTQ or GPTQ in entry.methods or found:
        return found
    why = marlin_refusal(s)
    if why is None:
        return found
    return [Problem(
        WORDING.unknown_id, "error",
        f"sglang v{release} registers no plain gptq method on CUDA and its GPTQ-to-Marlin step does not take this"
        f" checkpoint ({why}): it stops at start-up with \"Unknown quantization method: gptq\"",
        "use a GPTQ checkpoint Marlin takes (4 or 8 bits, symmetric, group_size -1/32/64/128, on a GPU of 8.0 or newer),"
        " or sglang v0.5.19 or older, which still runs plain gptq",
        f"sglang v{release}, layers/quantization/gptq/gptq.py (GPTQMarlinConfig.override_quantization_method), "
        f"{WORDING.unknown_source}",
    )]  # fmt: skip
