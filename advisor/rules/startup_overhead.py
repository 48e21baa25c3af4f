"""What a GPU loses before an engine loads its weights: the CUDA context and the communicators' buffers.

Engines measure the free memory at start-up (SGLang's pre_model_load_memory, the bundled runtime's
torch.cuda.mem_get_info); no CPU can, so the start-up models take the GPU's total memory less this estimate.
"""

from __future__ import annotations

MIB = 1024**2
CUDA_CONTEXT_MIB = 512  # the CUDA context and torch's allocator on one GPU
COMMUNICATOR_MIB = 512  # NCCL communicators and the custom-allreduce buffers, when the GPU talks to others
MARGIN_MIB = 512  # either way: measured contexts run from about 0.3 to 1.5 GiB by driver, GPU and tp

ESTIMATE = (
    f"free memory before the weights load: the GPU's total less {CUDA_CONTEXT_MIB} MiB of CUDA context"
    f" (+ {COMMUNICATOR_MIB} MiB of NCCL and custom-allreduce buffers with tp > 1), estimate, margin"
    f" +/- {MARGIN_MIB} MiB"
)


def free_before_load_mib(total_mib: float, tp: int) -> float:
    """The MiB a GPU has free when the engine starts loading weights (an estimate; ESTIMATE states its margin)."""
    return total_mib - CUDA_CONTEXT_MIB - (COMMUNICATOR_MIB if tp > 1 else 0)
