"""vLLM's custom allreduce (the NVLink IPC kernel it shares with SGLang) and what it does without peer-to-peer."""

from __future__ import annotations

from dataclasses import replace

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Scenario
from advisor.rules.releases import at
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

# What a group spanning nodes does in CustomAllreduce.__init__, release by release (the released wheels' code):
# - up to v0.26 "spans": it returns at once, logging "Custom allreduce is disabled because this process group spans
#   across nodes" (v0.25.1 wheel);
# - v0.27.1 "rendezvous" (PR #50000): the guard is gone; every supported world size builds the kernel and enters the
#   cross-node MNNVL path (_init_mnnvl_buffer: a torch symmetric-memory rendezvous), and turns it off afterwards
#   unless the group has MNNVL multicast ("Custom collectives are disabled because this multi-node group does not
#   support MNNVL multicast"); on GPUs without MNNVL the rendezvous itself can block (vllm-project/vllm#52907);
# - v0.29.0 "gated" (PR #53253): before any buffer, _group_can_attempt_mnnvl requires every rank to be Blackwell-class
#   (sm 10.0+) with local multicast, else it returns ("... does not have MNNVL-capable GPUs on every rank"); Blackwell
#   groups still enter the rendezvous, which keeps the kernel only inside an MNNVL domain (GB200/GB300 NVL72).
CROSS_NODE: list[tuple[str, str]] = [("0.12.0", "spans"), ("0.27.1", "rendezvous"), ("0.29.0", "gated")]
MNNVL_SM = (10, 0)  # "MNNVL is available only on Blackwell-class GPUs" (_group_can_attempt_mnnvl)
CROSS_NODE_WHY = {
    "rendezvous": "across nodes only the MNNVL path runs (PR #50000): kept only when the group has MNNVL multicast"
                  " (one NVLink domain, GB200/GB300 NVL72); the symmetric-memory rendezvous can block on other GPUs",
    "gated": "across nodes only the MNNVL path runs: every rank must be Blackwell-class with multicast (PR #53253),"
             " then kept only when the group spans one NVLink domain (GB200/GB300 NVL72)",
}  # fmt: skip


def cross_node_mode(version: str) -> str:
    """What CustomAllreduce.__init__ does with a group spanning nodes in ``version`` (CROSS_NODE)."""
    return at(CROSS_NODE, rules_release(version))


def _one_node_or_mnnvl(s: Scenario) -> tuple:
    """v0.27.1+: one node, or a multi-node group that may span an MNNVL domain (Blackwell; unknown from here)."""
    if s.nnodes == 1:
        return True, "nnodes 1", "one node, or an MNNVL domain"
    caps = [g.capability for g in s.gpus]
    if caps and all(c is not None and tuple(c) < MNNVL_SM for c in caps):
        return (
            False,
            f"nnodes {s.nnodes}, sm {caps[0][0]}.{caps[0][1]}",
            "one node, or Blackwell GPUs in an MNNVL domain",
        )
    return None, f"nnodes {s.nnodes}", "one node, or Blackwell GPUs in an MNNVL domain (not visible from one node)"


def conditions_for(version: str) -> tuple[rules.Condition, ...]:
    """CUSTOM_AR_CONDITIONS with the cross-node condition of ``version``."""
    mode = cross_node_mode(version)
    if mode == "spans":
        return CUSTOM_AR_CONDITIONS
    return tuple(
        replace(c, text="one node, or a group in one MNNVL domain", check=_one_node_or_mnnvl, why=CROSS_NODE_WHY[mode],
                fix="use one node, or pass --disable-custom-all-reduce across nodes without MNNVL")
        if c.id == "single_node" else c
        for c in CUSTOM_AR_CONDITIONS
    )  # fmt: skip


# What vLLM logs when only the P2P condition fails (custom_all_reduce.py CustomAllreduce.__init__).
RUNTIME_OFF = ("off at start-up: the driver reports no P2P, vLLM logs 'Custom allreduce is disabled because your"
               " platform lacks GPU P2P capability or P2P test failed' and NCCL carries every allreduce")  # fmt: skip


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    results = rules.evaluate(conditions_for(release), s)
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
