"""The bundled runtime's contract, in one place: what `python -m launcher.runtime` accepts and what it picks.

The advisor's rules for the bundled engine (advisor/rules/bundled), its command builder (advisor/rules/bundled/command.py) and the
runtime itself (worker.py, dist.py, fusion.py, communicator.py) all read these names, so a choice, a default or a limit
cannot drift between what `advisor check` predicts and what the runtime does.

Torch-free and imports nothing from the project: the advisor reads it without the runtime's dependencies, and the
runtime never imports `advisor`.
"""

from __future__ import annotations

# -- command line -----------------------------------------------------------------------------------------------------

MODES = ("serve", "generate", "bench")  # --mode
DTYPES = ("auto", "bfloat16", "float16", "float32")  # --dtype; auto: see auto_dtype()
DEVICES = ("auto", "cpu", "cuda")  # --device; auto: cuda when torch sees a GPU
ALLREDUCE_FLAG = "--allreduce"
ALLREDUCE_TORCH = "torch"  # torch.distributed allreduce, then residual add + RMSNorm
ALLREDUCE_FUSION = "flashinfer-fusion"  # FlashInfer's fused allreduce + residual + RMSNorm (trtllm backend)
ALLREDUCE_CHOICES = (ALLREDUCE_TORCH, ALLREDUCE_FUSION)

# What the serving rank prints once it accepts requests: READY_PREFIX + its URL (launcher.engines.RUNTIME_READY).
READY_PREFIX = "ready: "

# The KV-cache defaults: --max-batch-size slots of --max-model-len tokens (capped at the model's
# max_position_embeddings); advisor/layouts.py sizes the cache from them.
MAX_BATCH_SIZE = 8
MAX_MODEL_LEN = 2048

# -- device, dtype, process group -------------------------------------------------------------------------------------


def device_for(has_gpus: bool) -> str:
    """The device the runtime runs on: CUDA when a GPU is visible, else CPU."""
    return "cuda" if has_gpus else "cpu"


def auto_dtype(device: str) -> str:
    """What ``--dtype auto`` picks: bfloat16 on CUDA, float32 on CPU."""
    return "bfloat16" if device == "cuda" else "float32"


def process_group_backend(device: str) -> str:
    """torch.distributed's backend for the device: NCCL on CUDA, gloo on CPU."""
    return "nccl" if device == "cuda" else "gloo"


# -- FlashInfer's fused allreduce (trtllm backend) ------------------------------------------------------------------
# The kernel limits the runtime relies on (docs/flashinfer.md, "Limits of the trtllm backend").

FUSION_WORLD_SIZES = (2, 4, 8, 16)
FUSION_MAJORS_BEFORE_SM12 = (9, 10)  # GPU capability majors with trtllm fusion kernels
FUSION_MAJORS = (*FUSION_MAJORS_BEFORE_SM12, 12)  # SM12x from flashinfer 0.6.17
FUSION_SM12_SINCE = "0.6.17"
# The dtypes the runtime fuses in: its Lamport buffers are half precision (fp32 would need use_fp32_lamport).
FUSION_DTYPES = ("bfloat16", "float16")
# Tokens the workspace is sized for (what SGLang and vLLM size theirs for); larger batches take the plain path per call.
FUSION_MAX_TOKENS = 2048
FUSION_LAMPORT_CAP_BYTES = 2 * 1024**3


def fusion_workspace_bytes(world: int, tokens: int, hidden: int, elem_bytes: int = 2) -> int:
    """Per GPU: the IPC buffer (world x tokens x hidden x dtype) plus 3x that for the Lamport buffers, capped."""
    buffer = world * tokens * hidden * elem_bytes
    return buffer + min(3 * buffer, FUSION_LAMPORT_CAP_BYTES)
