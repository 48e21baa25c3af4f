"""vLLM's custom allreduce (the NVLink IPC kernel it shares with SGLang) and what it does without peer-to-peer."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Scenario
from advisor.rules.vllm.common import CUSTOM_AR_FILE, DISABLE_CUSTOM_AR, rules_release

# vLLM's reasons for the custom-allreduce conditions its kernel shares with SGLang's (advisor.rules.engine).
CUSTOM_AR_CONDITIONS = rules.custom_ar_conditions({
    "tp_gt_1": "nothing to reduce with one rank",
    "single_node": "CUDA IPC buffers do not cross nodes",
    "world_size": "kernels exist for these sizes",
    "full_nvlink": "'not supported on more than two PCIe-only GPUs'",
    rules.PEER_ACCESS_CONDITION: "CustomAllreduce.__init__ asks _can_p2p, which trusts the driver's P2P report"
                                 " (VLLM_SKIP_P2P_CHECK defaults to 1); without P2P it turns the kernel off",
}, one_node=("all ranks on one node", "all ranks on one node", "use one node"), nvlink_fix="use NVLink-connected GPUs or tp 2",
   p2p_fix="pass --disable-custom-all-reduce to say so (NCCL carries every allreduce either way), or use GPUs with P2P")  # fmt: skip

# What vLLM logs when only the P2P condition fails (custom_all_reduce.py CustomAllreduce.__init__).
RUNTIME_OFF = ("off at start-up: the driver reports no P2P, vLLM logs 'Custom allreduce is disabled because your"
               " platform lacks GPU P2P capability or P2P test failed' and NCCL carries every allreduce")  # fmt: skip


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    results = rules.evaluate(CUSTOM_AR_CONDITIONS, s)
    state = rules.state_of(results, forced_off=s.has(DISABLE_CUSTOM_AR))
    notes = ["messages up to 8 MiB; P2P access trusted from the CUDA runtime unless VLLM_SKIP_P2P_CHECK=0"]
    if state != rules.FORCED_OFF and rules.off_at_start_up(results):
        notes.append(RUNTIME_OFF)
    return rules.decided("custom_allreduce", "vLLM custom allreduce", state, results, rules.Source(f"vllm v{release}", CUSTOM_AR_FILE),
                   notes=notes)  # fmt: skip


def peer_access_problem(observed: str, overrides) -> tuple[str, str, str]:
    """vLLM's own P2P check (the driver's report) turns its custom allreduce off."""
    return ("info",
            f"{observed}: vLLM's own P2P check (the driver's report) turns its custom allreduce off at start-up"
            " ('Custom allreduce is disabled because your platform lacks GPU P2P capability'), so every allreduce"
            " goes through NCCL",
            f"pass {DISABLE_CUSTOM_AR} to say so explicitly (and silence the warning)")  # fmt: skip


PEER_ACCESS = rules.PeerAccess(
    "vllm vllm/distributed/device_communicators/custom_all_reduce.py (_can_p2p: the driver's P2P report unless"
    " VLLM_SKIP_P2P_CHECK=0)",
    peer_access_problem,
)  # fmt: skip
