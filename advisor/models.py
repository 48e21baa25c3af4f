"""ModelSpec: the facts about a model that the rules need, read from config.json.

(Contract stub: the loaders are filled in by issue 3.)
"""

from __future__ import annotations

from dataclasses import dataclass


class ModelError(Exception):
    """A model could not be resolved; the message is one line naming the problem and the fix."""


@dataclass(frozen=True)
class ModelSpec:
    id: str  # what the user asked for: "Qwen/Qwen3-30B-A3B" or a directory
    architecture: str  # architectures[0]
    model_type: str | None = None
    hidden_size: int | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    num_experts: int | None = None
    experts_per_token: int | None = None
    moe_intermediate_size: int | None = None
    vocab_size: int | None = None
    dtype: str | None = None  # "bfloat16"
    quantization: str | None = None  # "fp8", "modelopt_fp4", "mxfp4", ...
    num_params: int | None = None  # total parameters, for memory estimates (catalog value or computed)
    path: str | None = None  # the directory config.json came from, when local
    origin: str = "catalog"  # "directory" | "hf-cache" | "catalog"
