"""SGLang's custom allreduce (the NVLink IPC kernel) and what turns it off."""

from __future__ import annotations

from advisor.rules.engine import (
    Decision,
    Scenario,
    Source,
    custom_ar_conditions,
    decided,
    evaluate,
    is_enabled,
    parse_release,
    state_of,
)
from advisor.rules.sglang.common import CUSTOM_AR, DETERMINISTIC, DISABLE_CUSTOM_AR, _any, is_sm90, is_sm100
from advisor.rules.sglang.fusion import rules_release

# custom_all_reduce.py's own reasons for the conditions its kernel shares with vLLM's (advisor.rules.engine).
CUSTOM_AR_CONDITIONS = custom_ar_conditions({
    "tp_gt_1": "with one rank there is nothing to reduce",
    "single_node": "the kernel uses CUDA IPC buffers, which do not cross nodes",
    "world_size": "the one-shot/two-shot kernels are built for these sizes",
    "full_nvlink": "'custom allreduce is not supported on more than two PCIe-only GPUs'",
}, one_node=("TP group on one node", "the TP group on one node", "run the TP group on one node"),
   nvlink_fix="use NVLink/NVSwitch-connected GPUs or tp 2")  # fmt: skip


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
    return decided("custom_allreduce", "SGLang custom allreduce (NVLink IPC kernel)", state, results,
                   Source(f"sglang v{release}", CUSTOM_AR), value=value, notes=notes)  # fmt: skip
