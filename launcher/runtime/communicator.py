"""The allreduce after attention and MLP, fused with the residual add and the next RMSNorm.

Two strategies behind one interface (`Communicator.add_rmsnorm`):
- TorchStrategy: torch.distributed.all_reduce, then residual add and RMSNorm in PyTorch
  (at tp 1 on CUDA with flashinfer requested: flashinfer.norm.fused_add_rmsnorm).
- FlashInferFusion: flashinfer.comm's fused allreduce + residual + RMSNorm (kARResidualRMSNorm) on a workspace sized
  from max tokens x hidden x dtype; a call it cannot take (too many tokens, ...) falls back to TorchStrategy.
Both return (normed, new_residual).
"""

from __future__ import annotations

import logging
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from launcher.runtime.agree import create_on_all_ranks
from launcher.runtime.contract import ALLREDUCE_FLAG, ALLREDUCE_FUSION, ALLREDUCE_TORCH
from launcher.runtime.dist import ParallelContext
from launcher.runtime.fusion import FusionLimits, FusionWorkspace, fusion_unavailable_reason

log = logging.getLogger("launcher.runtime")


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dim computed in float32 (as transformers does), returned in x's dtype; weight broadcasts
    against x (a [size] weight, or e.g. [heads, head_dim] for per-head norms). F.rms_norm computes in float32 for
    bf16/fp16 input and rounds once, which is transformers' `weight * normed.to(dtype)` when the weight is applied
    after it: one or two ops instead of seven (a decode step of a small model is dominated by per-op costs; on an
    H200 the seven-op form took about a quarter of a Qwen3-0.6B decode step)."""
    if x.dtype == torch.float32 and weight.shape == x.shape[-1:]:
        return F.rms_norm(x, x.shape[-1:], weight, eps)
    return F.rms_norm(x, x.shape[-1:], None, eps) * weight


def local_fusion_reason(limits: FusionLimits, device: torch.device) -> str | None:
    """Why this rank cannot run the fused allreduce (None when it can): limits, its GPU, importing flashinfer.comm.
    The import is tried here rather than inside the workspace creation, which is collective: a rank failing to
    import must keep every rank out of it."""
    reason = fusion_unavailable_reason(limits, torch.cuda.get_device_capability(device))
    if reason is not None:
        return reason
    try:
        import flashinfer.comm  # noqa: F401
    except Exception as err:  # noqa: BLE001 - any import failure means: this rank cannot fuse
        return f"import flashinfer.comm failed ({type(err).__name__}: {err})"
    return None


# what flashinfer.norm.fused_add_rmsnorm dispatches on (csrc/norm.cu, DISPATCH_DLPACK_DTYPE_TO_CTYPE_FP16 in 0.6.x)
TP1_NORM_DTYPES = (torch.float16, torch.bfloat16)


class Communicator:
    """Collectives of one tensor-parallel group, with the allreduce strategy chosen at start-up."""

    def __init__(self, ctx: ParallelContext, strategy: str = ALLREDUCE_TORCH, create_workspace=FusionWorkspace.create):
        """create_workspace(limits, max_tokens, ctx) -> FusionWorkspace; replaceable so tests can make it fail."""
        self.ctx = ctx
        self.create_workspace = create_workspace
        self.world_size = ctx.world_size
        self.group = ctx.group
        self.requested = strategy
        self.fusion: FusionWorkspace | None = None
        self.fused_norm_tp1 = None  # flashinfer.norm.fused_add_rmsnorm at tp 1 on CUDA
        self.allreduce_seconds = 0.0
        self.timing = False
        self.fused_calls = 0
        self.fallback_calls = 0
        self.strategy = ALLREDUCE_TORCH
        self.reason = "requested"

    # -- strategy selection -------------------------------------------------------------------------------------
    def setup(self, max_tokens: int, hidden: int, dtype: torch.dtype) -> None:
        """Resolve the requested strategy against this machine; log which one runs and why."""
        if self.requested != ALLREDUCE_FUSION:
            self.strategy, self.reason = ALLREDUCE_TORCH, f"requested with {ALLREDUCE_FLAG} {ALLREDUCE_TORCH}"
        elif self.ctx.device.type != "cuda":
            self.strategy, self.reason = ALLREDUCE_TORCH, "flashinfer fusion needs CUDA; this run is on CPU, falling back to torch"
        elif self.world_size == 1 and dtype not in TP1_NORM_DTYPES:
            self.strategy, self.reason = (
                ALLREDUCE_TORCH,
                f"flashinfer fused_add_rmsnorm takes float16 or bfloat16, this run is {dtype}; falling back to torch",
            )
        elif self.world_size == 1:
            try:
                import flashinfer.norm

                self.fused_norm_tp1 = flashinfer.norm.fused_add_rmsnorm
                self.strategy, self.reason = ALLREDUCE_FUSION, "tp 1: no allreduce, flashinfer fused_add_rmsnorm"
            except Exception as err:  # noqa: BLE001 - any import failure means: use torch
                self.strategy, self.reason = ALLREDUCE_TORCH, f"import flashinfer failed ({err}); falling back to torch"
        else:
            self._setup_fusion(FusionLimits(self.world_size, hidden, dtype), max_tokens)
        if self.ctx.is_first:
            log.info("allreduce strategy: %s (%s)", self.strategy, self.reason)

    def _setup_fusion(self, limits: FusionLimits, max_tokens: int) -> None:
        """tp > 1 on CUDA: every rank checks itself, then all agree (agree.py), so no rank is left waiting in a fused
        kernel or in the collective workspace creation that another rank skipped."""
        self.fusion, why_not = create_on_all_ranks(
            self.ctx,
            local_fusion_reason(limits, self.ctx.device),
            lambda: self.create_workspace(limits, max_tokens, self.ctx),
            lambda workspace: workspace.release_alone(),
        )
        if self.fusion is not None:
            self.strategy = ALLREDUCE_FUSION
            self.reason = f"flashinfer {self.fusion.api} API, workspace for {self.fusion.max_tokens} tokens"
        else:
            self.strategy, self.reason = ALLREDUCE_TORCH, why_not

    def close(self) -> None:
        if self.fusion is not None:
            self.fusion.destroy()
            self.fusion = None

    # -- collectives --------------------------------------------------------------------------------------------
    def _sync(self) -> None:
        if self.ctx.device.type == "cuda":
            torch.cuda.synchronize(self.ctx.device)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return x
        start = self._start()
        dist.all_reduce(x, group=self.group)
        self._stop(start)
        return x

    def all_gather_last_dim(self, x: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return x
        parts = [torch.empty_like(x) for _ in range(self.world_size)]
        dist.all_gather(parts, x.contiguous(), group=self.group)
        return torch.cat(parts, dim=-1)

    def broadcast(self, x: torch.Tensor) -> torch.Tensor:
        if self.world_size > 1:
            dist.broadcast(x, src=0, group=self.group)
        return x

    def add_rmsnorm(
        self, partial: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(RMSNorm(allreduce(partial) + residual) * weight, allreduce(partial) + residual)."""
        if self.fusion is not None:
            shape = partial.shape
            flat, res = partial.reshape(-1, shape[-1]), residual.reshape(-1, shape[-1])
            if self.fusion.can_fuse(flat, res):
                start = self._start()
                normed, new_residual = self.fusion.allreduce_add_rmsnorm(flat, res, weight, eps)
                self._stop(start)
                self.fused_calls += 1
                return normed.view(shape), new_residual.view(shape)
            if self.fallback_calls == 0 and self.ctx.is_first:
                log.info("fused allreduce: plain path for this call (%s); logged once", self.fusion.last_fallback)
            self.fallback_calls += 1
        if self.fused_norm_tp1 is not None and partial.is_contiguous() and residual.is_contiguous():
            # in place: residual += partial; partial = RMSNorm(residual) * weight. The kernel takes 2-D
            # [tokens, hidden] only; views of the contiguous tensors share their memory
            hidden = partial.shape[-1]
            self.fused_norm_tp1(partial.view(-1, hidden), residual.view(-1, hidden), weight, eps)
            return partial, residual
        self.all_reduce(partial)
        residual = partial + residual
        return rmsnorm(residual, weight, eps), residual

    def _start(self) -> float:
        if not self.timing:
            return 0.0
        self._sync()
        return time.perf_counter()

    def _stop(self, start: float) -> None:
        if self.timing:
            self._sync()
            self.allreduce_seconds += time.perf_counter() - start
