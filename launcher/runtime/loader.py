"""Build the model for this rank and fill it from the checkpoint (only this rank's slices), with a progress bar."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from launcher.runtime.communicator import Communicator
from launcher.runtime.config import ModelConfig, check_tp
from launcher.runtime.model import CausalLM
from launcher.runtime.weights import WeightReader

log = logging.getLogger("launcher.runtime")

# weights of a VL checkpoint that the text-only runtime leaves alone
IGNORED_PREFIXES = {"qwen3_vl_moe": ("model.visual.",)}


def load_model(
    model_dir: Path,
    config: ModelConfig,
    comm: Communicator,
    dtype: torch.dtype,
    max_model_len: int,
    show_progress: bool = False,
) -> CausalLM:
    check_tp(config, comm.world_size)
    reader = WeightReader(model_dir, IGNORED_PREFIXES.get(config.family, ()))
    model = CausalLM(config, comm, dtype, comm.ctx.device, max_model_len)
    if not show_progress:
        model.load(reader)
        return model
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("loading {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(model_dir.name, total=model.load_steps)
        model.load(reader, lambda: progress.advance(task))
    return model
