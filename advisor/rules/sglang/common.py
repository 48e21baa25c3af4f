"""What every SGLang step reads: the upstream files and flags the rules cite, and SGLang's GPU predicates.

Predicates follow SGLang: they look at the current device's compute-capability MAJOR and torch's CUDA runtime version
(never the driver's), so a CPU build of torch makes every GPU predicate false.
"""

from __future__ import annotations

from advisor.rules.engine import Scenario

ENGINE = "sglang"
SERVER_ARGS = "python/sglang/srt/server_args.py"
OVERRIDES = "python/sglang/srt/arg_groups/overrides.py"  # the post-process passes moved here in v0.5.15
FUSION_RUNTIME = "python/sglang/srt/layers/flashinfer_comm_fusion.py"
MEMORY_HOOK = "python/sglang/srt/arg_groups/memory_hook.py"  # handle_gpu_memory_settings from v0.5.19
CUSTOM_AR = "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py"

# Flags (newest spelling first where two exist).
BOOL_FLAG = "--enable-flashinfer-allreduce-fusion"
BACKEND_FLAG = "--flashinfer-allreduce-fusion-backend"
ENFORCE_DISABLE = "--enforce-disable-flashinfer-allreduce-fusion"
DETERMINISTIC = "--enable-deterministic-inference"
ATTN_CP = "--attn-cp-size"
DISABLE_CUSTOM_AR = "--disable-custom-all-reduce"
ATTENTION_BACKEND = "--attention-backend"
MOE_RUNNER_BACKEND = "--moe-runner-backend"


# -- GPU predicates ----------------------------------------------------------------------------------------------------


def _gpu_facts(s: Scenario) -> tuple[int | None, tuple[int, int] | None, bool, str]:
    """(capability major, torch CUDA, everything known, observed text)."""
    if s.no_gpu:
        return None, None, True, "no GPU"
    cuda, cuda_known = s.torch_cuda()
    major = s.major
    cap = f"SM {s.gpu.capability_text}" if s.gpu is not None and s.capability else "SM ?"
    torch_text = f"torch CUDA {cuda[0]}.{cuda[1]}" if cuda else ("torch CPU build" if cuda_known else "torch CUDA ?")
    return major, cuda, major is not None and cuda_known, f"{cap}, {torch_text}"


def _gpu_predicate(s: Scenario, majors: tuple[int, ...], min_cuda: tuple[int, int]) -> tuple[bool | None, str]:
    major, cuda, known, observed = _gpu_facts(s)
    if s.no_gpu:
        return False, observed
    if major is not None and major not in majors:
        return False, observed  # decided by the GPU alone
    if cuda is None:
        return (False if known else None), observed
    if major is None:
        return None, observed
    return cuda >= min_cuda, observed


def is_sm90(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (9,), (12, 3))


def is_sm100(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (10,), (12, 8))


def is_sm120(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (12,), (12, 8))


def is_blackwell(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (10, 11, 12), (12, 8))


def _any(*results: bool | None) -> bool | None:
    if any(r is True for r in results):
        return True
    if all(r is False for r in results):
        return False
    return None


def is_h20(s: Scenario) -> bool | None:
    if s.no_gpu:
        return False
    name = s.gpu.name if s.gpu is not None else None
    if name is None:
        return None
    return "H20" in name and "H200" not in name

# SGLang's --moe-a2a-backend names (python/sglang/srt/server_args.py, MOE_A2A_BACKEND_CHOICES, every name up to
# v0.5.17's list). Anything else is refused before it reaches an engine's command line.
MOE_A2A_BACKENDS = ("none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "megamoe")
