"""Cross-rank agreement on setting up the fused allreduce: all ranks use it, or none does.

Every rank of a tensor-parallel group must run the same collective in every layer. If the FlashInfer workspace could
be set up on some ranks only, the ranks with it would wait in fused kernels that the others never join: a hang. So
setup goes in two agreed steps, each closed by one small all_reduce over the group (on the group's device, as the
collectives themselves run), the way SGLang guards its custom allreduce:
1. eligibility (GPU capability, `import flashinfer.comm`): a rank that cannot fuse keeps every rank from even
   entering the workspace creation, which is itself collective and would hang waiting for it;
2. creation: if it failed anywhere, the ranks where it succeeded release their workspace and every rank falls back
   to torch together.
Failing ranks' reasons are gathered so that rank 0 logs one line naming each failing rank and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

if TYPE_CHECKING:
    from launcher.runtime.dist import ParallelContext

log = logging.getLogger("launcher.runtime")


def failed_ranks(failed: bool, ctx: ParallelContext) -> list[int]:
    """Every rank says whether its step failed; all of them learn which ranks did (one all_reduce)."""
    if ctx.world_size == 1 or ctx.group is None:
        return [ctx.rank] if failed else []
    flags = torch.zeros(ctx.world_size, dtype=torch.int32, device=ctx.device)
    flags[ctx.rank] = int(failed)
    dist.all_reduce(flags, group=ctx.group)
    return [rank for rank, flag in enumerate(flags.tolist()) if flag]


def _reasons(reason: str | None, failed: list[int], ctx: ParallelContext) -> str:
    """'rank 1: why; rank 3: why' for the failing ranks (an object all_gather, only after a failure was agreed)."""
    if ctx.world_size == 1 or ctx.group is None:
        reasons = [reason]
    else:
        reasons = [None] * ctx.world_size
        dist.all_gather_object(reasons, reason, group=ctx.group)
    return "; ".join(f"rank {rank}: {reasons[rank]}" for rank in failed)


def create_on_all_ranks(
    ctx: ParallelContext,
    local_reason: str | None,
    create: Callable[[], Any],
    release: Callable[[Any], None],
) -> tuple[Any | None, str | None]:
    """(workspace, None) when every rank is eligible and created one; else (None, why) on every rank.

    local_reason: why this rank cannot fuse (None when it can). create: makes this rank's workspace (collective).
    release: frees a workspace this rank made when another rank's creation failed (must not be collective).
    """
    failed = failed_ranks(local_reason is not None, ctx)
    if failed:
        return None, f"flashinfer fusion unavailable on {_reasons(local_reason, failed, ctx)}; every rank uses torch"
    workspace, error = None, None
    try:
        workspace = create()
    except Exception as err:  # noqa: BLE001 - any failure here must become the agreed fallback, not a hang
        error = f"{type(err).__name__}: {err}"[:300]
        log.warning("flashinfer workspace creation failed on this rank (%s)", error)
    failed = failed_ranks(error is not None, ctx)
    if not failed:
        return workspace, None
    if workspace is not None:
        release(workspace)
    return None, f"flashinfer workspace creation failed on {_reasons(error, failed, ctx)}; every rank uses torch"
