"""Cross-rank agreement on the fused allreduce's setup (launcher/runtime/agree.py), on a real 2-process gloo group.

A failure on one rank (ineligible GPU, workspace creation raising) must make every rank fall back to torch together,
never leave one rank with a fused path the others lack. The FlashInfer workspace is replaced by a stand-in through
the communicator's injectable creator; the agreement collectives are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from launcher.runtime import communicator as communicator_module
from launcher.runtime.agree import create_on_all_ranks, failed_ranks
from launcher.runtime.communicator import Communicator
from launcher.runtime.dist import ParallelContext
from launcher.runtime.fusion import FusionLimits


class StandInWorkspace:
    api, max_tokens = "unified", 64

    def __init__(self):
        self.released = False

    def release_alone(self):
        self.released = True


def _rank_main(rank: int, out: str) -> None:
    """One rank of the gloo group: runs three scenarios and writes what it saw to OUT/rank<R>.json."""
    dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=2)
    ctx = ParallelContext(rank, 2, rank, torch.device("cpu"), dist.group.WORLD)
    seen: dict = {}

    # 1. creation raises on rank 1 only, through the real Communicator (its CUDA-only eligibility check stubbed)
    made: list[StandInWorkspace] = []

    def create(limits, max_tokens, ctx):
        if ctx.rank == 1:
            raise RuntimeError("CUDA error: out of memory")
        made.append(StandInWorkspace())
        return made[-1]

    communicator_module.local_fusion_reason = lambda limits, device: None
    comm = Communicator(ctx, "flashinfer-fusion", create_workspace=create)
    comm._setup_fusion(FusionLimits(2, 64, torch.bfloat16), 64)
    seen["create_fails"] = {
        "strategy": comm.strategy,
        "reason": comm.reason,
        "fusion": comm.fusion is not None,
        "released": [w.released for w in made],
    }

    # 2. rank 0 is not eligible: no rank may enter the (collective) creation
    calls = []
    workspace, why = create_on_all_ranks(
        ctx, "GPU compute capability 8.0" if rank == 0 else None, lambda: calls.append(1), lambda w: None
    )
    seen["ineligible"] = {"workspace": workspace is not None, "why": why, "create_calls": len(calls)}

    # 3. all succeed: every rank keeps its workspace
    workspace, why = create_on_all_ranks(ctx, None, StandInWorkspace, lambda w: w.release_alone())
    seen["all_ok"] = {"workspace": workspace is not None, "why": why, "failed": failed_ranks(False, ctx)}

    Path(out, f"rank{rank}.json").write_text(json.dumps(seen))
    dist.destroy_process_group()


@pytest.mark.slow
def test_ranks_agree_on_fusion_setup_over_gloo(tmp_path):
    mp.spawn(_rank_main, args=(str(tmp_path),), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for seen in ranks:
        failed = seen["create_fails"]
        assert failed["strategy"] == "torch" and not failed["fusion"]
        assert failed["reason"] == (
            "flashinfer workspace creation failed on rank 1: RuntimeError: CUDA error: out of memory; "
            "every rank uses torch"
        )
        assert seen["ineligible"] == {
            "workspace": False,
            "why": "flashinfer fusion unavailable on rank 0: GPU compute capability 8.0; every rank uses torch",
            "create_calls": 0,
        }
        assert seen["all_ok"] == {"workspace": True, "why": None, "failed": []}
    assert ranks[0]["create_fails"]["released"] == [True]  # rank 0's workspace freed, without a collective
    assert ranks[1]["create_fails"]["released"] == []


def test_world_of_one_agreement_needs_no_group():
    ctx = ParallelContext(0, 1, 0, torch.device("cpu"), None)
    assert failed_ranks(True, ctx) == [0] and failed_ranks(False, ctx) == []

    def boom():
        raise ValueError("no multicast")

    workspace, why = create_on_all_ranks(ctx, None, boom, lambda w: None)
    assert workspace is None and why == "flashinfer workspace creation failed on rank 0: ValueError: no multicast; every rank uses torch"


def test_releasing_a_lone_workspace_is_never_collective():
    from launcher.runtime.fusion import FusionWorkspace

    calls = []

    class Handle:
        def destroy(self):  # flashinfer 0.7.x: drops references only
            calls.append("unified destroy")

    class LegacyComm:
        def trtllm_destroy_ipc_workspace_for_all_reduce_fusion(self, *args, **kwargs):  # collective in older releases
            calls.append("legacy destroy")

    limits = FusionLimits(2, 64, torch.bfloat16)
    FusionWorkspace(None, "unified", Handle(), limits, 64, 0, None).release_alone()
    FusionWorkspace(LegacyComm(), "legacy", (["ipc"], ["ptrs"]), limits, 64, 0, None).release_alone()
    assert calls == ["unified destroy"]
