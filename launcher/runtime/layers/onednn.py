"""Linear layers on CPU through oneDNN, with each weight reordered ("prepacked") once after loading.

Why: for the few rows of a decode step PyTorch's default CPU matmul (MKL sgemm) re-packs the weight on every call.
Measured on this project's 2-core CPU machine with 4 rows: F.linear reads a weight at about 5 GB/s (out of cache) to
19 GB/s (in cache), while memory streams at about 25 GB/s; oneDNN with the weight reordered once (the op
torch.compile's CPU freezing pass uses, `mkldnn._linear_pointwise`) reads it at 18-25 GB/s (out of cache) and
65-78 GB/s (in cache), and is no slower for prefill-sized inputs. Results differ from F.linear only by summation
order (about 1e-6 relative). But a oneDNN call costs about 10-15 us more than F.linear before any work, so only
weights of at least PACK_MIN_ELEMENTS (where the two were even, measured with 4 rows) are packed.

Only float32 on CPU (what was measured; bf16 speed depends on the CPU's instructions). Anything else, or a torch
without these ops, keeps F.linear: `can_pack` says which. The reordered tensor replaces the plain one (opaque layout,
same memory), so nothing else may read such a weight except `linear` below.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

PACK_MIN_ELEMENTS = 1 << 17  # 512 KiB of float32: 256 x 512 took 42 us with F.linear, 33 us packed; 256 x 256 23 vs 28


@functools.cache
def onednn_linear_works() -> bool:
    """The private ops exist in this torch and agree with F.linear on a small case (checked once per process)."""
    try:
        if not torch.backends.mkldnn.is_available():
            return False
        generator = torch.Generator().manual_seed(0)
        weight = torch.randn(24, 40, generator=generator)
        x = torch.randn(3, 40, generator=generator)
        bias = torch.randn(24, generator=generator)
        got = torch.ops.mkldnn._linear_pointwise(x, pack(weight), bias, "none", [], "")
        return bool(torch.allclose(got, F.linear(x, weight, bias), atol=1e-5, rtol=1e-5))
    except Exception:  # noqa: BLE001 - any failure (missing op, unsupported build) means: stay on F.linear
        return False


def can_pack(weight: torch.Tensor) -> bool:
    return (
        weight.device.type == "cpu"
        and weight.dtype == torch.float32
        and weight.dim() == 2
        and weight.numel() >= PACK_MIN_ELEMENTS
        and onednn_linear_works()
    )


def pack(weight: torch.Tensor) -> torch.Tensor:
    """weight [out, in] in oneDNN's blocked layout."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous(), None)


def packed_param(weight: nn.Parameter) -> nn.Parameter:
    """The parameter to hold instead of `weight`: reordered where `can_pack`, else `weight` itself."""
    return nn.Parameter(pack(weight), requires_grad=False) if can_pack(weight) else weight


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear for a plain or a reordered weight."""
    if weight.is_mkldnn:
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    return F.linear(x, weight, bias)
