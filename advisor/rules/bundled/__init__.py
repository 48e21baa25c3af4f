"""The bundled runtime's own rules: which allreduce it uses, on which device, in which dtype.

FlashInfer's fused allreduce + residual + RMSNorm (trtllm backend, one node) when every limit of the kernel holds
(docs/flashinfer.md, "Limits of the trtllm backend"); otherwise torch.distributed's allreduce followed by residual
add + RMSNorm: NCCL on GPUs, gloo on CPU. The runtime receives the outcome as the flag ``--allreduce``; device and dtype
follow the runtime's own ``auto`` choices (bfloat16 on CUDA, float32 on CPU) unless the user picks a dtype.
"""

from __future__ import annotations

from advisor.rules import flashinfer as fi
from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_ON,
    Condition,
    Decision,
    Problem,
    Scenario,
    Source,
    decided,
    evaluate,
    is_enabled,
    listed,
    state_of,
)
from launcher.runtime import contract

ALLREDUCE_FLAG = contract.ALLREDUCE_FLAG
FUSED = contract.ALLREDUCE_FUSION
PLAIN = contract.ALLREDUCE_TORCH
MAX_TOKENS = contract.FUSION_MAX_TOKENS  # workspace capacity; bigger batches fall back to the plain path per call
COMMUNICATOR = "launcher/runtime/communicator.py"
SOURCE_RELEASE = "tp-advisor bundled runtime"


def device(s: Scenario) -> str:
    return contract.device_for(bool(s.facts.engine_gpus))


def process_group_backend(s: Scenario) -> str:
    """The process-group backend launcher/runtime/dist.py picks for that device."""
    return contract.process_group_backend(device(s))


def dtype(s: Scenario) -> str:
    """The user's dtype, else what the runtime's ``--dtype auto`` picks: bfloat16 on CUDA, float32 on CPU."""
    if s.intent.dtype and s.intent.dtype != "auto":
        return s.intent.dtype
    return contract.auto_dtype(device(s))


WORLD_SIZES = listed(contract.FUSION_WORLD_SIZES)
DTYPES = listed(contract.FUSION_DTYPES)


# -- the fused allreduce's conditions: each a check of the scenario alone, so the table below is built once ----------


def _check_gpu(s: Scenario) -> tuple:
    prediction = s.flashinfer
    majors = prediction.fusion_majors or fi.fusion_majors_for(prediction.version)
    expected = "capability major " + " or ".join(str(m) for m in majors) + (
        "" if 12 in majors else f" (12 needs flashinfer >= {contract.FUSION_SM12_SINCE})")
    if not s.facts.engine_gpus:
        return False, "no GPU (CPU run)", expected
    if s.major is None:
        return None, "capability unknown", expected
    return s.major in majors, f"SM {s.gpu.capability_text}", expected


def _check_world(s: Scenario) -> tuple:
    return s.tp in contract.FUSION_WORLD_SIZES, f"tp {s.tp}", f"tp {WORLD_SIZES}"


def _check_node(s: Scenario) -> tuple:
    return s.nnodes == 1, f"nnodes {s.nnodes}", "one node"


def _check_importable(s: Scenario) -> tuple:
    prediction = s.flashinfer
    ok = None if prediction.importable is None else bool(prediction.importable and prediction.has_fusion_api)
    return ok, prediction.reason, "import flashinfer works and has flashinfer.comm.allreduce_fusion"


def _check_dtype(s: Scenario) -> tuple:
    chosen = dtype(s)
    return chosen in contract.FUSION_DTYPES, chosen, DTYPES


def _check_hidden(s: Scenario) -> tuple:
    size = s.model.hidden_size if s.model is not None else None
    if size is None:
        return None, "hidden size unknown", "a multiple of 8"
    return size % 8 == 0, f"hidden {size}", "a multiple of 8"


def _check_p2p(s: Scenario) -> tuple:
    if not s.facts.engine_gpus:
        return False, "no GPU", "every GPU pair NVLink P2P OK"
    if len(s.gpus) < s.gpus_per_node:
        return False, f"{len(s.gpus)} GPU(s) visible for tp {s.tp}", "every GPU pair NVLink P2P OK"
    full = s.all_pairs_nvlink
    observed = {True: "every pair P2P OK", False: "some pair without NVLink P2P", None: "P2P status unknown"}[full]
    return full, observed, "every GPU pair NVLink P2P OK"


# The limits of the trtllm backend (docs/flashinfer.md), in evaluation order.
FUSION_CONDITIONS = (
    Condition("gpu_capability", "GPU architecture the fused kernels support", _check_gpu,
              "the trtllm allreduce-fusion kernels are built for SM90 and SM10x (SM12x from flashinfer 0.6.17)",
              "use Hopper/Blackwell GPUs (or upgrade flashinfer for SM12x)"),
    Condition("world_size", f"tp {WORLD_SIZES}", _check_world, "the kernels support these world sizes only",
              f"use tp {WORLD_SIZES}"),
    Condition("single_node", "one node", _check_node, "the IPC workspace cannot span nodes (flashinfer issue #2006)",
              "run on one node"),
    Condition("flashinfer", "flashinfer importable with the fusion API", _check_importable,
              "the runtime calls flashinfer.comm.create_allreduce_fusion_workspace and allreduce_fusion",
              "install matching flashinfer-python / -cubin / -jit-cache versions (>= 0.6)"),
    Condition("dtype", f"dtype {DTYPES}", _check_dtype,
              "the runtime's Lamport buffers are half precision (fp32 needs use_fp32_lamport)", "pass --dtype bfloat16"),
    Condition("hidden_size", "hidden size a multiple of 8", _check_hidden,
              "the kernels move 16-byte vectors of half values", "n/a: a property of the model"),
    Condition("p2p", "every GPU pair P2P-capable", _check_p2p,
              "the workspace is shared through CUDA IPC between every pair of ranks", "use NVLink/NVSwitch GPUs"),
)  # fmt: skip


def fusion_decision(s: Scenario) -> Decision:
    results = evaluate(FUSION_CONDITIONS, s)
    requested = s.flag(ALLREDUCE_FLAG)
    state = state_of(results, forced_on=requested == FUSED, forced_off=requested == PLAIN)
    enabled = is_enabled(state)
    group_backend = process_group_backend(s)
    hidden_size = s.model.hidden_size if s.model is not None else None
    if enabled:
        value = {"allreduce": FUSED, "backend": "trtllm", "max_tokens": MAX_TOKENS}
        if hidden_size:
            value["workspace_bytes_per_gpu"] = fi.fusion_workspace_bytes(s.tp, hidden_size, MAX_TOKENS)
    else:
        value = {"allreduce": PLAIN, "backend": group_backend}
    notes = []
    if enabled:
        notes.append(f"batches over {MAX_TOKENS} tokens fall back to the plain allreduce per call")
    if state == FORCED_ON and any(r.ok is False for r in results):
        notes.append("forced on although a condition fails: the runtime will fail to create the workspace or fall back")
    if not enabled:
        notes.append(f"torch.distributed allreduce ({group_backend}) followed by residual add + RMSNorm")
    title = "FlashInfer fused allreduce + residual + RMSNorm (bundled runtime)"
    flags = (ALLREDUCE_FLAG, FUSED if enabled else PLAIN)  # its command builder places it from the value
    source = Source(SOURCE_RELEASE, COMMUNICATOR, "flashinfer trtllm backend limits")
    return decided("flashinfer_allreduce_fusion", title, state, results, source, value=value, flags=flags, notes=notes)


def device_decision(s: Scenario) -> Decision:
    dev, chosen_dtype, group_backend = device(s), dtype(s), process_group_backend(s)

    def gpus(s: Scenario):
        n = len(s.facts.engine_gpus)
        # Informational: either way the runtime has a device to run on.
        return True, f"{n} GPU(s): cuda" if n else f"{s.facts.driver.reason or 'no GPU'}: cpu", "CUDA GPUs, else CPU"

    results = (
        Condition("gpus", "CUDA GPUs visible", gpus, "the runtime runs on CPU with gloo when no GPU is visible",
                  "install the NVIDIA driver and a CUDA torch to run on GPUs").evaluate(s),
    )  # fmt: skip
    notes = [f"process group backend {group_backend}", f"dtype {chosen_dtype}"]
    if not s.intent.dtype and s.model is not None and s.model.dtype and s.model.dtype != chosen_dtype:
        notes.append(f"the {s.model.dtype} checkpoint runs in {chosen_dtype} (--dtype auto); pass --dtype to choose")
    value = {"device": dev, "dtype": chosen_dtype, "backend": group_backend}
    # No flags: its command builder (command.py) passes --device (this value) and --dtype (auto) itself.
    return decided("device", "Device, dtype and process-group backend", AUTO_ENABLED, results,
                   Source(SOURCE_RELEASE, "launcher/runtime/dist.py"), value=value, notes=notes)  # fmt: skip


def model_problems(s: Scenario) -> list[Problem]:
    """bundled_model_unsupported / bundled_weights_missing: what the runtime would refuse at start, found by the very
    checks it runs (launcher/runtime/modeldir.py), so `check` never passes what `launch` then refuses."""
    from pathlib import Path

    from advisor.models import DEMO_ID, catalog_config
    from launcher.runtime.config import config_from_dict
    from launcher.runtime.errors import RuntimeUsageError
    from launcher.runtime.modeldir import check_model_dir

    model = s.model
    if model is None or model.id == DEMO_ID:  # the runtime builds the demo model itself
        return []
    source = "launcher/runtime/modeldir.py (the runtime's own start-up checks)"
    if model.path:
        try:
            check_model_dir(Path(model.path))
        except RuntimeUsageError as exc:
            return [Problem("bundled_model_unsupported", "error", f"the bundled runtime would refuse it: {exc}",
                            "fix the model directory, or serve it with --engine sglang / vllm", source)]  # fmt: skip
        return []
    problems = []
    raw = catalog_config(model.id)
    if raw is not None:
        try:
            config_from_dict(raw, where=f"catalog entry {model.id}", name=model.id)
        except RuntimeUsageError as exc:
            problems.append(Problem("bundled_model_unsupported", "error", f"the bundled runtime would refuse it: {exc}",
                                    "serve it with --engine sglang / vllm, or pick a supported model", source))  # fmt: skip
    # The runtime reads weights from a directory; the catalog holds only the config facts.
    live = s.facts.source == "live"
    problems.append(Problem(
        "bundled_weights_missing", "error" if live else "info",
        f"the weights of {model.id} are not on disk {'here' if live else '(the plan knows only its catalog facts)'}:"
        " the bundled runtime reads a local directory (config.json, *.safetensors, tokenizer.json)",
        f"`hf download {model.id}` (found in the Hugging Face cache afterwards) or pass --model DIR",
        source,
    ))  # fmt: skip
    return problems


def decide(s: Scenario) -> tuple[list[Decision], list[Problem]]:
    return [fusion_decision(s), device_decision(s)], model_problems(s)
