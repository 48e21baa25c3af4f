"""FlashInfer's fused allreduce + residual add + RMSNorm (trtllm backend): limits, workspace, calls.

Facts modelled here (flashinfer-python 0.6.x-0.7.4, see docs/flashinfer.md): unified API
`create_allreduce_fusion_workspace` / `allreduce_fusion` from 0.6.0, legacy `trtllm_*` functions before; trtllm kernels for
GPU major 9 and 10 (12 from 0.6.17), world size 2, 4, 8 or 16, fp16/bf16/fp32, hidden a multiple of 8 (4 for fp32),
two-shot only when tokens > world size. flashinfer is imported lazily, only on CUDA.

The argument builders are plain functions so that tests can bind them to the installed flashinfer's signatures on CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from launcher.runtime.contract import (
    FUSION_LAMPORT_CAP_BYTES,
    FUSION_MAJORS,
    FUSION_MAX_TOKENS,
    FUSION_WORLD_SIZES,
    fusion_workspace_bytes,
)

if TYPE_CHECKING:
    from launcher.runtime.dist import ParallelContext

MAX_WORKSPACE_TOKENS = FUSION_MAX_TOKENS
LAMPORT_CAP_BYTES = FUSION_LAMPORT_CAP_BYTES
MAX_WORKSPACE_BUFFER_BYTES = 256 * 1024 * 1024  # world x tokens x hidden x dtype, before the Lamport buffers
ONESHOT_MAX_TOKENS = 128  # small batches are latency bound: one-shot; larger ones use two-shot (bandwidth)
PATTERN_RESIDUAL_RMSNORM = 1  # AllReduceFusionPattern.kARResidualRMSNorm


@dataclass(frozen=True)
class FusionLimits:
    world_size: int
    hidden: int
    dtype: torch.dtype

    @property
    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    def workspace_tokens(self, requested_tokens: int) -> int:
        """Tokens the workspace is sized for: the largest step the engine runs, within the caps above."""
        per_token = self.world_size * self.hidden * self.element_size
        return max(1, min(requested_tokens, MAX_WORKSPACE_TOKENS, MAX_WORKSPACE_BUFFER_BYTES // per_token))

    def workspace_bytes(self, tokens: int) -> int:
        """Per GPU: the IPC buffer (world x tokens x hidden x dtype) plus 3x that for Lamport buffers, capped."""
        return fusion_workspace_bytes(self.world_size, tokens, self.hidden, self.element_size)


def fusion_unavailable_reason(limits: FusionLimits, capability: tuple[int, int] | None) -> str | None:
    """Why the trtllm fused allreduce cannot run for this group, or None when it can."""
    if limits.world_size not in FUSION_WORLD_SIZES:
        return f"tp {limits.world_size} is not one of {FUSION_WORLD_SIZES}"
    if limits.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"dtype {limits.dtype} is not fp16, bf16 or fp32"
    multiple = 4 if limits.dtype == torch.float32 else 8
    if limits.hidden % multiple:
        return f"hidden size {limits.hidden} is not a multiple of {multiple}"
    if capability is None or capability[0] not in FUSION_MAJORS:
        needs = ", ".join(map(str, FUSION_MAJORS[:-1])) + f" or {FUSION_MAJORS[-1]}"
        return f"GPU compute capability {capability} has no trtllm fusion kernels (needs major {needs})"
    return None


def use_oneshot(num_tokens: int, world_size: int) -> bool:
    return num_tokens <= ONESHOT_MAX_TOKENS or num_tokens <= world_size


def fallback_reason(x: torch.Tensor, residual: torch.Tensor, max_tokens: int, limits: FusionLimits) -> str | None:
    """Why this call must take the plain path, or None when it can be fused."""
    if x.shape[0] > max_tokens:
        return f"{x.shape[0]} tokens exceed the workspace ({max_tokens})"
    if x.shape[-1] != limits.hidden or x.dtype != limits.dtype or residual.dtype != limits.dtype:
        return "shape or dtype differs from the workspace"
    if not (x.is_contiguous() and residual.is_contiguous()):
        return "non-contiguous input"
    if x.shape[0] == 0:
        return "empty batch"
    return None


def unified_create_kwargs(limits: FusionLimits, rank: int, max_tokens: int, group: Any) -> dict[str, Any]:
    return {
        "backend": "trtllm",  # engines pin trtllm on one node: mnnvl hangs during CUDA-graph capture
        "world_size": limits.world_size,
        "rank": rank,
        "max_token_num": max_tokens,
        "hidden_dim": limits.hidden,
        "dtype": limits.dtype,
        "gpus_per_node": int(os.environ.get("LOCAL_WORLD_SIZE", limits.world_size)),
        "group": group,
    }


def unified_call_kwargs(
    x: torch.Tensor,
    workspace: Any,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    residual_out: torch.Tensor,
    norm_out: torch.Tensor,
    world_size: int,
) -> dict[str, Any]:
    return {
        "input": x,
        "workspace": workspace,
        "pattern": PATTERN_RESIDUAL_RMSNORM,
        "launch_with_pdl": True,
        "trigger_completion_at_end": True,
        "residual_in": residual,
        "residual_out": residual_out,
        "norm_out": norm_out,
        "rms_gamma": weight,
        "rms_eps": eps,
        "use_oneshot": use_oneshot(x.shape[0], world_size),
        "fp32_acc": True,
    }


def legacy_create_kwargs(limits: FusionLimits, rank: int, max_tokens: int, group: Any) -> dict[str, Any]:
    return {
        "tp_rank": rank,
        "tp_size": limits.world_size,
        "max_token_num": max_tokens,
        "hidden_dim": limits.hidden,
        "use_fp32_lamport": limits.dtype == torch.float32,
        "group": group,
    }


def legacy_call_kwargs(
    x: torch.Tensor,
    workspace_ptrs: Any,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    residual_out: torch.Tensor,
    norm_out: torch.Tensor,
    rank: int,
    world_size: int,
) -> dict[str, Any]:
    return {
        "allreduce_in": x,
        "world_size": world_size,
        "world_rank": rank,
        "token_num": x.shape[0],
        "hidden_dim": x.shape[-1],
        "workspace_ptrs": workspace_ptrs,
        "launch_with_pdl": True,
        "trigger_completion_at_end": True,
        "fp32_acc": True,
        "pattern_code": PATTERN_RESIDUAL_RMSNORM,
        "use_oneshot": use_oneshot(x.shape[0], world_size),
        "allreduce_out": None,
        "residual_in": residual,
        "residual_out": residual_out,
        "norm_out": norm_out,
        "quant_out": None,
        "scale_out": None,
        "rms_gamma": weight,
        "rms_eps": eps,
        "scale_factor": None,
        "layout_code": None,
    }


class FusionWorkspace:
    """One group's fusion workspace (unified API when the installed flashinfer has it, else the legacy one)."""

    def __init__(self, comm_module, api: str, handle, limits: FusionLimits, max_tokens: int, rank: int, group):
        self.comm, self.api, self.handle = comm_module, api, handle
        self.limits, self.max_tokens, self.rank, self.group = limits, max_tokens, rank, group
        self.last_fallback: str | None = None

    @classmethod
    def create(cls, limits: FusionLimits, requested_tokens: int, ctx: ParallelContext) -> FusionWorkspace:
        import flashinfer.comm as comm  # lazily: importing flashinfer costs seconds and needs CUDA to be useful

        tokens = limits.workspace_tokens(requested_tokens)
        if hasattr(comm, "create_allreduce_fusion_workspace") and hasattr(comm, "allreduce_fusion"):
            handle = comm.create_allreduce_fusion_workspace(**unified_create_kwargs(limits, ctx.rank, tokens, ctx.group))
            return cls(comm, "unified", handle, limits, tokens, ctx.rank, ctx.group)
        handle = comm.trtllm_create_ipc_workspace_for_all_reduce_fusion(
            **legacy_create_kwargs(limits, ctx.rank, tokens, ctx.group)
        )
        return cls(comm, "legacy", handle, limits, tokens, ctx.rank, ctx.group)

    def can_fuse(self, x: torch.Tensor, residual: torch.Tensor) -> bool:
        self.last_fallback = fallback_reason(x, residual, self.max_tokens, self.limits)
        return self.last_fallback is None

    def allreduce_add_rmsnorm(
        self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        residual_out, norm_out = torch.empty_like(residual), torch.empty_like(x)
        world = self.limits.world_size
        if self.api == "unified":
            kwargs = unified_call_kwargs(x, self.handle, residual, weight, eps, residual_out, norm_out, world)
            self.comm.allreduce_fusion(**kwargs)
        else:
            workspace_ptrs = self.handle[1]  # legacy create returns (ipc_handles, workspace_ptrs)
            kwargs = legacy_call_kwargs(x, workspace_ptrs, residual, weight, eps, residual_out, norm_out, self.rank, world)
            self.comm.trtllm_allreduce_fusion(**kwargs)
        return norm_out, residual_out

    def release_alone(self) -> None:
        """Free this rank's workspace when other ranks have none (their creation failed), without a collective they
        would not join. The unified workspace's destroy() only drops references (flashinfer 0.7.x, checked in 0.7.4);
        the legacy destroy freed shared buffers with a barrier in older releases, so a legacy workspace is left to
        process exit instead."""
        if self.api == "unified":
            self.handle.destroy()

    def destroy(self) -> None:
        if self.api == "unified":
            self.handle.destroy()
        else:
            self.comm.trtllm_destroy_ipc_workspace_for_all_reduce_fusion(self.handle[0], group=self.group)
