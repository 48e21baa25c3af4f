"""What the bundled runtime needs in a model directory, checked without torch.

The runtime runs ``check_model_dir`` before it loads anything, and `advisor check --engine bundled` reports the same
messages as errors, so `check` never passes a directory that `launch` then refuses: config.json (a supported
architecture and rope scaling, unquantized, sane sizes: launcher.runtime.config), safetensors weights, tokenizer.json.
Standard library only (plus launcher.runtime.config); never imports torch or advisor.
"""

from __future__ import annotations

import json
from pathlib import Path

from launcher.runtime.config import ModelConfig, load_config
from launcher.runtime.errors import RuntimeUsageError, WeightError

WEIGHTS_INDEX = "model.safetensors.index.json"
TOKENIZER_FILE = "tokenizer.json"


def missing_dir_message(model_dir: Path) -> str:
    return f"model directory {model_dir} does not exist; pass a local HF model directory or demo"


def no_weights_message(model_dir: Path) -> str:
    return f"{model_dir} has no *.safetensors files (other weight formats are not supported)"


def no_tokenizer_message(model_dir: Path) -> str:
    return f"{model_dir} has no {TOKENIZER_FILE} (the bundled runtime reads only that format)"


def check_weights_present(model_dir: Path) -> None:
    """safetensors weights: the files an index names, else at least one *.safetensors file."""
    index = model_dir / WEIGHTS_INDEX
    if index.is_file():
        try:
            files = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
            raise WeightError(f"cannot read {index}: {err}") from None
        missing = sorted(str(f) for f in files if not (model_dir / str(f)).is_file())
        if missing:
            more = f" (+{len(missing) - 1} more)" if len(missing) > 1 else ""
            raise WeightError(f"{model_dir / missing[0]}{more} is missing: {index.name} names it; re-download the model")
        return
    if not any(p.is_file() for p in model_dir.glob("*.safetensors")):
        raise WeightError(no_weights_message(model_dir))


def check_model_dir(model_dir: Path) -> ModelConfig:
    """The directory's config, or a RuntimeUsageError naming the first thing the runtime could not run."""
    if not model_dir.is_dir():
        raise RuntimeUsageError(missing_dir_message(model_dir))
    config = load_config(model_dir)
    check_weights_present(model_dir)
    if not (model_dir / TOKENIZER_FILE).is_file():
        raise RuntimeUsageError(no_tokenizer_message(model_dir))
    return config
