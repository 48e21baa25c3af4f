"""SGLang's custom allreduce (the NVLink IPC kernel) and what turns it off."""

from __future__ import annotations

from advisor.rules.engine import (
    PEER_ACCESS_CONDITION,
    Decision,
    PeerAccess,
    Scenario,
    Source,
    custom_ar_conditions,
    decided,
    evaluate,
    has_flag,
    is_enabled,
    off_at_start_up,
    parse_release,
    state_of,
)
from advisor.rules.sglang.common import CUSTOM_AR, DETERMINISTIC, DISABLE_CUSTOM_AR, _any, is_sm90, is_sm100
from advisor.rules.sglang.releases import rules_release

# custom_all_reduce.py's own reasons for the conditions its kernel shares with vLLM's (advisor.rules.engine).
CUSTOM_AR_CONDITIONS = custom_ar_conditions({
    "tp_gt_1": "with one rank there is nothing to reduce",
    "single_node": "the kernel uses CUDA IPC buffers, which do not cross nodes",
    "world_size": "the one-shot/two-shot kernels are built for these sizes",
    "full_nvlink": "'custom allreduce is not supported on more than two PCIe-only GPUs'",
    PEER_ACCESS_CONDITION: "the kernel maps the peers' buffers through CUDA IPC; without P2P SGLang does not run it:"
                           " by default it skips its P2P test, opening the buffers fails and it falls back to NCCL"
                           " ('Setup Custom allreduce failed'); with --enable-p2p-check its test turns the kernel off",
}, one_node=("TP group on one node", "the TP group on one node", "run the TP group on one node"),
   nvlink_fix="use NVLink/NVSwitch-connected GPUs or tp 2",
   p2p_fix="pass --disable-custom-all-reduce so SGLang does not try (NCCL carries every allreduce), or use GPUs with"
           " P2P (NVLink, or PCIe P2P enabled by the driver)")  # fmt: skip


P2P_CHECK = "--enable-p2p-check"  # SGLang then runs its real P2P test instead of trusting P2P
# What SGLang does at start-up when only the P2P condition fails (custom_all_reduce_utils.py
# can_use_custom_all_reduce_with_nvlink -> can_p2p; parallel_state.py GroupCoordinator.__init__).
RUNTIME_OFF_IPC = ("off at start-up: P2P test skipped (no --enable-p2p-check), the CUDA IPC setup fails, SGLang logs"
                   " 'Setup Custom allreduce failed' and NCCL carries every allreduce")  # fmt: skip
RUNTIME_OFF_P2P_CHECK = ("off at start-up: the P2P test of --enable-p2p-check fails ('CustomAllreduce is disabled"
                         " because your platform lacks GPU P2P capability or P2P test failed'); NCCL carries every"
                         " allreduce")  # fmt: skip


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    results = evaluate(CUSTOM_AR_CONDITIONS, s)
    off_by = [f for f in (DISABLE_CUSTOM_AR,) if s.has(f)]
    if s.has(DETERMINISTIC) and s.tp > 1:
        off_by.append(DETERMINISTIC)
    state = state_of(results, forced_off=bool(off_by))
    enabled = is_enabled(state)
    notes = []
    value = None
    if enabled:
        v2 = parse_release(release) >= (0, 5, 12)
        sm = _any(is_sm90(s)[0], is_sm100(s)[0])
        if v2 and sm and s.all_pairs_nvlink:
            value = "v2"
            notes.append("v2 kernel (default from v0.5.12): tuned for SM90/SM100 at 2-8 GPUs with full NVLink")
        else:
            value = "v1"
            if v2:
                notes.append("v2 kernel needs SM90/SM100 and full NVLink; falls back to v1")
        notes.append("used for messages <= 8 MiB, a multiple of 16 bytes, contiguous; larger ones go to NCCL")
        notes.append("P2P access check skipped by default (--enable-p2p-check turns it on)")
    if off_by:
        notes.append(f"forced off by {' and '.join(off_by)}")
    elif off_at_start_up(results):
        notes.append(RUNTIME_OFF_P2P_CHECK if s.has(P2P_CHECK) else RUNTIME_OFF_IPC)
    return decided("custom_allreduce", "SGLang custom allreduce (NVLink IPC kernel)", state, results,
                   Source(f"sglang v{release}", CUSTOM_AR), value=value, notes=notes)  # fmt: skip


def peer_access_problem(observed: str, overrides) -> tuple[str, str, str]:
    """GPUs of the TP group lack P2P while the custom allreduce is on: SGLang skips its P2P check unless asked."""
    if has_flag(overrides, P2P_CHECK):
        return ("info",
                f"{observed}: with {P2P_CHECK} SGLang tests P2P first and turns its custom allreduce off"
                " ('your platform lacks GPU P2P capability or P2P test failed'); NCCL carries every allreduce",
                f"pass {DISABLE_CUSTOM_AR} to skip the test and the warning")  # fmt: skip
    return ("warning",
            f"{observed}, yet SGLang sets its custom allreduce up, as it skips its P2P check by default: opening the"
            " peers' CUDA IPC buffers fails with 'CUDART error: peer access is not supported between these two"
            " devices'. SGLang since v0.4.5 catches it ('Setup Custom allreduce failed ... specify"
            f" {DISABLE_CUSTOM_AR} explicitly') and falls back to NCCL; earlier releases crashed at start-up"
            " (SGLang issue #4814)",
            f"pass {DISABLE_CUSTOM_AR} (after `--` for `advisor launch`) so SGLang does not try; NCCL then carries every"
            " allreduce over PCIe / shared memory")  # fmt: skip


PEER_ACCESS = PeerAccess(
    "sglang python/sglang/srt/distributed/parallel_state.py (GroupCoordinator: 'Setup Custom allreduce failed'"
    " since v0.4.5) and srt/utils monkey_patch_p2p_access_check (P2P check skipped unless --enable-p2p-check);"
    " SGLang issue #4814",
    peer_access_problem,
)  # fmt: skip
