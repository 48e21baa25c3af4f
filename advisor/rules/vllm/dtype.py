"""The model dtype vLLM resolves at start-up (ModelConfig.dtype), and the two refusals that read it.

_get_and_verify_dtype (vllm/config/model.py, the same in v0.12.0 to v0.33.0): ``--dtype auto`` takes the config's
dtype (``dtype`` / ``torch_dtype``, float32 when the config has none and no weights are there to read); a float32
config is cut to the platform's preferred dtype (float16 for a pooling model, else the first the GPU supports: bfloat16
from SM80, float16 below), and a dtype the GPU does not support falls back to the same. Then:

- _check_valid_dtype refuses float16 for the model types of _FLOAT16_NOT_SUPPORTED_MODELS (numerical instability), and
  _resolve_auto_dtype leaves float16 out of what ``auto`` may pick for them;
- VllmConfig._get_quantization_config (vllm/config/vllm.py) refuses a dtype that the quantization method's config class
  does not list in get_supported_act_dtypes (quantization.json's ``act_dtypes``): "X is not supported for
  quantization method Y".
"""

from __future__ import annotations

from advisor.rules.engine import Problem, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.runner import runner

MODEL_FILE = "vllm/config/model.py"
DTYPE_NAMES = {"auto": "auto", "half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32",
               "float32": "float32"}  # fmt: skip
# _FLOAT16_NOT_SUPPORTED_MODELS (vllm/config/model.py): v0.12.0 to v0.25.1 list plamo2 too; v0.27.1 dropped it.
FLOAT16_UNSUPPORTED: list[tuple[str, frozenset[str]]] = [
    ("0.12.0", frozenset({"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"})),
    ("0.27.1", frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})),
]
FLOAT16_ID = "vllm_dtype_float16_unsupported"


def requested_dtype(s: Scenario) -> str:
    """--dtype as vLLM reads it ("auto" when not given; an unknown name as written, which vLLM's parser refuses)."""
    raw = (s.flag("--dtype") or s.intent.dtype or "auto").lower()
    return DTYPE_NAMES.get(raw, raw)


def _supported(s: Scenario, model_type: str | None, version: str) -> list[str]:
    """CudaPlatform.supported_dtypes less float16 for a model type that refuses it (_is_valid_dtype)."""
    cap = s.capability
    dtypes = ["bfloat16", "float16", "float32"] if cap is None or cap >= (8, 0) else ["float16", "float32"]
    return [d for d in dtypes if not (d == "float16" and model_type in at(FLOAT16_UNSUPPORTED, version))]


def model_dtype(s: Scenario, version: str) -> str | None:
    """ModelConfig.dtype as a name ("bfloat16", "float16", "float32"); None without a model or for an unknown --dtype."""
    model = s.model
    if model is None:
        return None
    wanted = requested_dtype(s)
    if wanted != "auto":
        return wanted if wanted in DTYPE_NAMES.values() else None
    config = DTYPE_NAMES.get(str(model.dtype or "float32").lower(), "float32")
    supported = _supported(s, model.model_type, version)
    pooling = runner(s, version) == "pooling"
    preferred = "float16" if pooling and "float16" in supported else supported[0]
    if config == "float32":
        config = preferred
    return config if config in supported else preferred


def float16_problems(s: Scenario, version: str) -> list[Problem]:
    """_check_valid_dtype: float16 asked for a model type that refuses it."""
    model = s.model
    if (
        model is None
        or model_dtype(s, version) != "float16"
        or model.model_type not in at(FLOAT16_UNSUPPORTED, version)
    ):
        return []
    return [Problem(
        FLOAT16_ID, "error",
        f"vllm {version} refuses float16 for model_type {model.model_type!r} at start-up ('does not support float16',"
        " numerical instability)",
        "pass --dtype bfloat16 (or float32), or leave --dtype auto",
        f"vllm v{version}, {MODEL_FILE} (_check_valid_dtype, _FLOAT16_NOT_SUPPORTED_MODELS)",
    )]  # fmt: skip
