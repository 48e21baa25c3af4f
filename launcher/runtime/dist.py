"""Process group and device setup for one tensor-parallel worker (torchrun or a single process)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from launcher.runtime.contract import device_for, process_group_backend


@dataclass
class ParallelContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    group: dist.ProcessGroup | None  # None when world_size == 1

    @property
    def is_first(self) -> bool:
        return self.rank == 0


def env_world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def pick_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device(device_for(torch.cuda.is_available()))
    return torch.device(requested)


def init_parallel(device_kind: torch.device) -> ParallelContext:
    """Join the torchrun process group (NCCL on CUDA, gloo on CPU); without RANK in the env, a world of one."""
    rank = int(os.environ.get("RANK", "0"))
    world = env_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device_kind.type == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    group = None
    if (world > 1 or "RANK" in os.environ) and not dist.is_initialized():
        backend = process_group_backend(device.type)
        kwargs = {"device_id": device} if device.type == "cuda" else {}
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(minutes=10), **kwargs)
    if dist.is_initialized():
        group = dist.group.WORLD
    return ParallelContext(rank, world, local_rank, device, group if world > 1 else None)


def shutdown_parallel() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
