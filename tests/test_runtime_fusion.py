"""The FlashInfer fused-allreduce path on CPU: calls bind to the installed flashinfer's real signatures, workspace sizing
and the per-call fallback decisions, and the CPU fallback to torch. (The kernels themselves need Hopper/Blackwell GPUs.)"""

from __future__ import annotations

import inspect

import pytest
import torch

from launcher.runtime import fusion
from launcher.runtime.communicator import Communicator, rmsnorm
from launcher.runtime.dist import ParallelContext
from launcher.runtime.fusion import FusionLimits, FusionWorkspace

flashinfer_comm = pytest.importorskip("flashinfer.comm")
flashinfer_norm = pytest.importorskip("flashinfer.norm")

LIMITS = FusionLimits(world_size=2, hidden=64, dtype=torch.bfloat16)


def tensors(tokens: int = 4, hidden: int = 64, dtype=torch.bfloat16):
    x, residual = torch.randn(tokens, hidden, dtype=dtype), torch.randn(tokens, hidden, dtype=dtype)
    return x, residual, torch.ones(hidden, dtype=dtype)


def test_unified_api_calls_bind_to_installed_signatures():
    group = object()
    create = inspect.signature(flashinfer_comm.create_allreduce_fusion_workspace)
    bound = create.bind(**fusion.unified_create_kwargs(LIMITS, rank=1, max_tokens=512, group=group))
    assert bound.arguments["backend"] == "trtllm" and bound.arguments["max_token_num"] == 512
    x, residual, weight = tensors()
    kwargs = fusion.unified_call_kwargs(x, "workspace", residual, weight, 1e-6, torch.empty_like(x), torch.empty_like(x), 2)
    bound = inspect.signature(flashinfer_comm.allreduce_fusion).bind(**kwargs)
    assert bound.arguments["pattern"] == int(flashinfer_comm.AllReduceFusionPattern.kARResidualRMSNorm)
    assert bound.arguments["use_oneshot"] is True


def test_legacy_api_calls_bind_to_installed_signatures():
    create = inspect.signature(flashinfer_comm.trtllm_create_ipc_workspace_for_all_reduce_fusion)
    create.bind(**fusion.legacy_create_kwargs(FusionLimits(4, 64, torch.float32), rank=0, max_tokens=64, group=None))
    x, residual, weight = tensors()
    kwargs = fusion.legacy_call_kwargs(x, torch.zeros(3), residual, weight, 1e-6, torch.empty_like(x), torch.empty_like(x), 0, 2)
    bound = inspect.signature(flashinfer_comm.trtllm_allreduce_fusion).bind(**kwargs)
    assert bound.arguments["pattern_code"] == int(flashinfer_comm.AllReduceFusionPattern.kARResidualRMSNorm)
    assert bound.arguments["token_num"] == 4 and bound.arguments["hidden_dim"] == 64
    inspect.signature(flashinfer_comm.trtllm_destroy_ipc_workspace_for_all_reduce_fusion).bind([[0]], group=None)


def test_tp1_fused_add_rmsnorm_call_binds():
    x, residual, weight = tensors()
    inspect.signature(flashinfer_norm.fused_add_rmsnorm).bind(x, residual, weight, 1e-6)


def test_workspace_sizing():
    # the reference's example: TP8, 2048 tokens, hidden 7168, bf16 -> about 235 MB + 704 MB Lamport buffers
    big = FusionLimits(8, 7168, torch.bfloat16)
    assert big.workspace_bytes(2048) == 234_881_024 + 3 * 234_881_024
    assert FusionLimits(2, 4096, torch.bfloat16).workspace_tokens(100_000) == fusion.MAX_WORKSPACE_TOKENS
    assert FusionLimits(2, 4096, torch.bfloat16).workspace_tokens(96) == 96
    # bytes cap: 8 ranks x hidden 16384 x bf16 -> 256 MiB / 256 KiB per token = 1024 tokens
    assert FusionLimits(8, 16384, torch.bfloat16).workspace_tokens(4096) == 1024
    huge = FusionLimits(16, 16384, torch.float32)
    assert huge.workspace_bytes(1024) == 16 * 1024 * 16384 * 4 + fusion.LAMPORT_CAP_BYTES


@pytest.mark.parametrize(
    ("limits", "capability", "reason"),
    [
        (FusionLimits(2, 4096, torch.bfloat16), (9, 0), None),
        (FusionLimits(8, 7168, torch.float16), (10, 0), None),
        (FusionLimits(4, 4096, torch.float32), (12, 0), None),
        (FusionLimits(3, 4096, torch.bfloat16), (9, 0), "tp 3 is not one of"),
        (FusionLimits(2, 4100, torch.bfloat16), (9, 0), "not a multiple of 8"),
        (FusionLimits(2, 4100, torch.float32), (9, 0), None),
        (FusionLimits(2, 4096, torch.bfloat16), (8, 0), "compute capability (8, 0)"),
        (FusionLimits(2, 4096, torch.int8), (9, 0), "not fp16, bf16 or fp32"),
    ],
)
def test_fusion_availability(limits, capability, reason):
    got = fusion.fusion_unavailable_reason(limits, capability)
    assert got is None if reason is None else reason in got


def test_per_call_fallback_decisions():
    x, residual, _ = tensors(tokens=8)
    assert fusion.fallback_reason(x, residual, max_tokens=8, limits=LIMITS) is None
    assert "exceed the workspace" in fusion.fallback_reason(x, residual, max_tokens=4, limits=LIMITS)
    strided = torch.randn(64, 8, dtype=torch.bfloat16).t()
    assert "non-contiguous" in fusion.fallback_reason(strided, residual, max_tokens=8, limits=LIMITS)
    assert "dtype" in fusion.fallback_reason(x.float(), residual, max_tokens=8, limits=LIMITS)
    assert fusion.use_oneshot(2, 16) and fusion.use_oneshot(128, 2) and not fusion.use_oneshot(129, 2)


class RecordingFlashInfer:
    """Stands in for flashinfer.comm (its kernels need a GPU): checks each call against the real signature and
    computes what the kernel computes, so the communicator's routing can be tested on CPU."""

    def __init__(self):
        self.calls = 0

    def allreduce_fusion(self, **kwargs):
        inspect.signature(flashinfer_comm.allreduce_fusion).bind(**kwargs)
        self.calls += 1
        total = kwargs["input"] + kwargs["residual_in"]  # the allreduce of one rank's part, in this stand-in
        kwargs["residual_out"].copy_(total)
        kwargs["norm_out"].copy_(rmsnorm(total, kwargs["rms_gamma"], kwargs["rms_eps"]))


def test_communicator_fuses_within_the_workspace_and_falls_back_beyond_it():
    ctx = ParallelContext(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"), group=None)
    comm = Communicator(ctx, "flashinfer-fusion")
    stub = RecordingFlashInfer()
    comm.fusion = FusionWorkspace(stub, "unified", "handle", FusionLimits(2, 64, torch.bfloat16), 4, 0, None)
    for tokens, calls_after in ((3, 1), (6, 1)):  # 3 tokens fit the 4-token workspace; 6 do not
        x, residual, weight = tensors(tokens)
        normed, new_residual = comm.add_rmsnorm(x.view(1, tokens, 64), residual.view(1, tokens, 64), weight, 1e-6)
        assert stub.calls == calls_after
        assert normed.shape == (1, tokens, 64)
        torch.testing.assert_close(new_residual[0], x + residual)
        torch.testing.assert_close(normed[0], rmsnorm(x + residual, weight, 1e-6))
    assert (comm.fused_calls, comm.fallback_calls) == (1, 1)
    assert "exceed the workspace" in comm.fusion.last_fallback


def test_cpu_run_with_flashinfer_requested_falls_back_to_torch_and_says_why(caplog):
    ctx = ParallelContext(rank=0, world_size=2, local_rank=0, device=torch.device("cpu"), group=None)
    comm = Communicator(ctx, "flashinfer-fusion")
    with caplog.at_level("INFO", logger="launcher.runtime"):
        comm.setup(max_tokens=64, hidden=64, dtype=torch.float32)
    assert comm.strategy == "torch" and comm.fusion is None
    assert "allreduce strategy: torch (flashinfer fusion needs CUDA; this run is on CPU" in caplog.text


def kernel_fused_add_rmsnorm(input, residual, weight, eps, enable_pdl=None):
    """Stands in for flashinfer.norm.fused_add_rmsnorm (a CUDA kernel): refuses what csrc/norm.cu refuses (input and
    residual must be 2-D [tokens, hidden], weight 1-D, float16 or bfloat16) and computes in place what it computes."""
    inspect.signature(flashinfer_norm.fused_add_rmsnorm).bind(input, residual, weight, eps, enable_pdl)
    if input.dim() != 2 or residual.dim() != 2 or weight.dim() != 1:
        raise RuntimeError(f"Check failed: input.ndim() == 2 ({input.dim()} vs. 2) : input must be a 2D tensor")
    if input.dtype not in (torch.float16, torch.bfloat16):
        raise RuntimeError(f"dtype {input.dtype} not dispatched")
    residual.add_(input)
    input.copy_(rmsnorm(residual, weight, eps))


def test_tp1_fused_norm_gets_2d_views_of_the_models_3d_tensors():
    """The model passes [batch, tokens, hidden]; the kernel takes [tokens, hidden] only (found on an H200: every
    --allreduce flashinfer-fusion run at tp 1 stopped at the first layer)."""
    ctx = ParallelContext(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"), group=None)
    comm = Communicator(ctx, "flashinfer-fusion")
    comm.fused_norm_tp1 = kernel_fused_add_rmsnorm
    x, residual, weight = tensors(6)
    normed, new_residual = comm.add_rmsnorm(x.clone().view(2, 3, 64), residual.clone().view(2, 3, 64), weight, 1e-6)
    assert normed.shape == new_residual.shape == (2, 3, 64)
    torch.testing.assert_close(new_residual.view(6, 64), x + residual)
    torch.testing.assert_close(normed.view(6, 64), rmsnorm(x + residual, weight, 1e-6))


def test_tp1_fused_norm_not_chosen_for_float32():
    """flashinfer's norm kernels dispatch on float16 / bfloat16 only: a float32 run says so and uses torch. (The
    context names a CUDA device; setup decides from it without touching the GPU.)"""
    ctx = ParallelContext(rank=0, world_size=1, local_rank=0, device=torch.device("cuda"), group=None)
    comm = Communicator(ctx, "flashinfer-fusion")
    comm.setup(max_tokens=64, hidden=64, dtype=torch.float32)
    assert comm.strategy == "torch" and comm.fused_norm_tp1 is None
    assert "takes float16 or bfloat16, this run is torch.float32" in comm.reason
