"""The launch-pitfall checks (advisor/rules/checks_machine.py), each on facts files three ways: it fires, it does not
fire, and the fact it needs is unknown (a probe that could not tell, or a facts file from before the field existed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.facts import MEMLOCK_UNLIMITED, Fabric, Facts, GpuProcess
from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.checks_machine import PROBLEM_IDS

QWEN_8B = "Qwen/Qwen3-8B"


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


def via_file(facts: Facts, tmp_path: Path) -> Facts:
    """Save and load the facts, as `advisor probe -o FILE` then `--facts FILE` would."""
    path = tmp_path / f"facts-{len(list(tmp_path.iterdir()))}.json"
    facts.save(path)
    return Facts.load(path)


def problems(facts: Facts, tmp_path: Path, problem_id: str, *, model: str | None = QWEN_8B, **intent):
    intent.setdefault("engine", "sglang")
    plan = build_plan(via_file(facts, tmp_path), resolve_model(model) if model else None, Intent(model=model, **intent))
    return [p for p in plan.problems if p.id == problem_id]


def one(found, severity: str):
    assert len(found) == 1, found
    assert found[0].severity == severity, found[0]
    assert found[0].source and found[0].fix and found[0].packages == ()
    return found[0]


def unknown(found, *words: str):
    problem = one(found, "info")
    assert problem.message.startswith("cannot check"), problem
    for word in words:
        assert word in problem.message, problem.message
    return problem


def strip(facts: Facts, tmp_path: Path) -> Facts:
    """The same facts as a file written before the launch-pitfall fields existed (they are simply absent)."""
    data = json.loads(facts.to_json())
    data.pop("system")
    for gpu in data["gpus"]:
        for key in ("numa_node", "iommu", "acs_redirect", "processes"):
            gpu.pop(key)
    for link in data["topology"]["links"]:
        link.pop("p2p_read")
        link.pop("p2p_write")
    path = tmp_path / "old-facts.json"
    path.write_text(json.dumps(data))
    return Facts.load(path)


# -- p2p_unavailable ----------------------------------------------------------------------------------------------


def test_p2p_unavailable_fires_for_sglang_on_geforce(tmp_path):
    problem = one(problems(load_profile("rtx-4090-2"), tmp_path, "p2p_unavailable", tp=2), "warning")
    assert "--disable-custom-all-reduce" in problem.fix and "--disable-custom-all-reduce" in problem.message
    assert "peer access is not supported between these two devices" in problem.message
    assert "read not supported, write not supported" in problem.message and "#4814" in problem.source


def test_p2p_unavailable_is_a_note_where_the_engine_checks_p2p_itself(tmp_path):
    facts = load_profile("rtx-4090-2")
    vllm = one(problems(facts, tmp_path, "p2p_unavailable", tp=2, engine="vllm"), "info")
    assert "lacks GPU P2P capability" in vllm.message
    checked = one(problems(facts, tmp_path, "p2p_unavailable", tp=2, overrides=("--enable-p2p-check",)), "info")
    assert "--enable-p2p-check" in checked.message


def test_p2p_unavailable_does_not_fire(tmp_path):
    rtx = load_profile("rtx-4090-2")
    # the user switched custom allreduce off: nothing tries P2P
    assert problems(rtx, tmp_path, "p2p_unavailable", tp=2, overrides=("--disable-custom-all-reduce",)) == []
    assert problems(rtx, tmp_path, "p2p_unavailable", tp=1) == []  # one GPU: no peers
    assert problems(rtx, tmp_path, "p2p_unavailable", tp=2, engine="bundled") == []  # no custom allreduce
    assert problems(load_profile("rtx-pro-6000-4"), tmp_path, "p2p_unavailable", tp=2) == []  # PCIe P2P works
    assert problems(load_profile("h200-8"), tmp_path, "p2p_unavailable", tp=8) == []  # NVSwitch


def test_p2p_unavailable_unknown(tmp_path):
    rtx = load_profile("rtx-4090-2")
    unknown(problems(strip(rtx, tmp_path), tmp_path, "p2p_unavailable", tp=2), "peer-to-peer", "re-run")
    link = replace(rtx.topology.links[0], p2p_read=None, unknown={"p2p_read": "NVML NoPermission"})
    probed = replace(rtx, topology=replace(rtx.topology, links=(link,)))
    unknown(problems(probed, tmp_path, "p2p_unavailable", tp=2), "NVML NoPermission")


# -- pcie_acs_or_iommu --------------------------------------------------------------------------------------------


def test_acs_or_iommu_fires_in_the_container(tmp_path):
    problem = one(problems(load_profile("a100-pcie-4-container"), tmp_path, "pcie_acs_or_iommu", tp=4,
                           engine="vllm"), "warning")  # fmt: skip
    assert "0000:17:00.0" in problem.message and "DMA-FQ" in problem.message and "hang" in problem.message
    assert "#9920" in problem.source and "#51513" in problem.source and "iommu=pt" in problem.fix


def test_acs_or_iommu_either_alone_fires(tmp_path):
    facts = load_profile("a100-pcie-4-container")
    only_iommu = replace(facts, gpus=tuple(replace(g, acs_redirect=()) for g in facts.gpus))
    assert "translates DMA" in one(problems(only_iommu, tmp_path, "pcie_acs_or_iommu", tp=4), "warning").message
    only_acs = replace(facts, gpus=tuple(replace(g, iommu="identity") for g in facts.gpus))
    assert "ACS redirects" in one(problems(only_acs, tmp_path, "pcie_acs_or_iommu", tp=4), "warning").message


def test_acs_or_iommu_does_not_fire(tmp_path):
    container = load_profile("a100-pcie-4-container")
    assert problems(container, tmp_path, "pcie_acs_or_iommu", tp=1) == []  # no peer traffic
    assert problems(load_profile("rtx-pro-6000-4"), tmp_path, "pcie_acs_or_iommu", tp=4) == []  # clean PCIe
    # NVLink pairs do not go through PCIe; GPUs without P2P do not try it
    nvlink = replace(container, topology=replace(container.topology, links=tuple(
        replace(link, nvlinks=12) for link in container.topology.links)))  # fmt: skip
    assert problems(nvlink, tmp_path, "pcie_acs_or_iommu", tp=4) == []
    no_p2p = replace(container, topology=replace(container.topology, links=tuple(
        replace(link, p2p_read="not supported") for link in container.topology.links)))  # fmt: skip
    assert problems(no_p2p, tmp_path, "pcie_acs_or_iommu", tp=4) == []


def test_acs_or_iommu_unknown(tmp_path):
    clean = load_profile("rtx-pro-6000-4")
    not_root = replace(clean, gpus=tuple(
        replace(g, acs_redirect=None, unknown={"acs_redirect": "config: readable by root only"}) for g in clean.gpus))  # fmt: skip
    unknown(problems(not_root, tmp_path, "pcie_acs_or_iommu", tp=2), "ACS", "root only")
    # an old file knows no P2P status, so it cannot tell whether P2P goes over PCIe at all: nothing to say
    assert problems(strip(clean, tmp_path), tmp_path, "pcie_acs_or_iommu", tp=2) == []


# -- gpus_span_numa -----------------------------------------------------------------------------------------------


def test_gpus_span_numa_fires_across_sockets(tmp_path):
    problem = one(problems(load_profile("l40s-4"), tmp_path, "gpus_span_numa", tp=4, engine="vllm"), "warning")
    assert "node 0: GPU 0, 1; node 1: GPU 2, 3" in problem.message and "0-2" in problem.message


def test_gpus_span_numa_from_sys_links_when_numa_is_unknown(tmp_path):
    l40s = load_profile("l40s-4")
    no_numa = replace(l40s, gpus=tuple(replace(g, numa_node=-1) for g in l40s.gpus))
    assert one(problems(no_numa, tmp_path, "gpus_span_numa", tp=4), "warning")


def test_gpus_span_numa_does_not_fire(tmp_path):
    l40s = load_profile("l40s-4")
    assert problems(l40s, tmp_path, "gpus_span_numa", tp=2) == []  # GPUs 0 and 1 share socket 0
    assert problems(load_profile("h100-sxm-8"), tmp_path, "gpus_span_numa", tp=8) == []  # NVLink across sockets


def test_gpus_span_numa_unknown(tmp_path):
    rtx = load_profile("rtx-4090-2")
    unknown(problems(strip(rtx, tmp_path), tmp_path, "gpus_span_numa", tp=2), "NUMA node of GPU 0")
    lost = replace(rtx, gpus=(replace(rtx.gpus[0], numa_node=None, unknown={"numa_node": "numa_node: EACCES"}),
                              rtx.gpus[1]))  # fmt: skip
    unknown(problems(lost, tmp_path, "gpus_span_numa", tp=2), "EACCES")


# -- gpu_order ----------------------------------------------------------------------------------------------------


def test_gpu_order_fires_for_crossed_pairs(tmp_path):
    problem = one(problems(load_profile("a100-pcie-4-container"), tmp_path, "gpu_order", tp=4), "info")
    assert "'0,2,1,3'" in problem.message and "CUDA_VISIBLE_DEVICES=0,1,2,3" in problem.fix


def test_gpu_order_does_not_fire(tmp_path):
    container = load_profile("a100-pcie-4-container")
    ascending = replace(container, visible_gpus=(0, 1, 2, 3),
                        environment={**container.environment, "CUDA_VISIBLE_DEVICES": "0,1,2,3"})  # fmt: skip
    assert problems(ascending, tmp_path, "gpu_order", tp=4) == []
    # reordered on an NVSwitch: every pair is as near as any other
    h100 = load_profile("h100-sxm-8")
    shuffled = replace(h100, visible_gpus=(7, 0, 5, 2, 3, 4, 1, 6),
                       environment={"CUDA_VISIBLE_DEVICES": "7,0,5,2,3,4,1,6"})  # fmt: skip
    assert problems(shuffled, tmp_path, "gpu_order", tp=8) == []
    assert problems(container, tmp_path, "gpu_order", tp=2) == []  # two GPUs: any order is the same ring


def test_gpu_order_unknown_pcie_is_silent(tmp_path):
    container = load_profile("a100-pcie-4-container")
    links = tuple(replace(link, pcie=None, unknown={"pcie": "NVML Unknown"}) for link in container.topology.links)
    unknown_links = replace(container, topology=replace(container.topology, links=links))
    assert problems(unknown_links, tmp_path, "gpu_order", tp=4) == []  # an info-level hint needs known distances


# -- gpu_memory_in_use --------------------------------------------------------------------------------------------


def test_gpu_memory_in_use_fires_on_the_workstation(tmp_path):
    mixed = load_profile("workstation-mixed-2")
    for engine in ("sglang", "vllm"):
        problem = one(problems(mixed, tmp_path, "gpu_memory_in_use", tp=2, engine=engine), "error")
        assert "python (48210, 17830 MiB)" in problem.message and "5.6 GiB free of 24.0 GiB" in problem.message
    vllm = problems(mixed, tmp_path, "gpu_memory_in_use", tp=2, engine="vllm")[0]
    assert "gpu-memory-utilization 0.9" in vllm.message and "less than desired GPU memory utilization" in vllm.message


def test_gpu_memory_in_use_warns_when_it_only_shrinks_the_kv_cache(tmp_path):
    mixed = load_profile("workstation-mixed-2")
    busy = (GpuProcess(pid=7, name="python", used_mib=4000),)
    lighter = replace(mixed, gpus=(mixed.gpus[0], replace(mixed.gpus[1], processes=busy,
                                                          memory_free_mib=24564 - 561 - 4000)))  # fmt: skip
    problem = one(problems(lighter, tmp_path, "gpu_memory_in_use", tp=2), "warning")
    assert "unbalanced" in problem.message
    # vLLM at its default (0.92 from v0.20.2) needs 22 of 24 GiB free: 20 GiB free is an error there
    assert one(problems(lighter, tmp_path, "gpu_memory_in_use", tp=2, engine="vllm"), "error")


def test_gpu_memory_in_use_does_not_fire(tmp_path):
    assert problems(load_profile("rtx-4090-2"), tmp_path, "gpu_memory_in_use", tp=2) == []
    assert problems(load_profile("rtx-4090-2"), tmp_path, "gpu_memory_in_use", tp=2, engine="vllm") == []
    # the busy GPU is not in the TP group
    mixed = load_profile("workstation-mixed-2")
    assert problems(mixed, tmp_path, "gpu_memory_in_use", tp=1) == []
    assert problems(mixed, tmp_path, "gpu_memory_in_use", tp=2, engine="bundled") == []


def test_gpu_memory_in_use_is_not_blamed_where_the_weights_do_not_fit_anyway(tmp_path):
    """GLM-4.5 (358B parameters in bf16) at tp 2 needs about 334 GiB a GPU: no idle H100 holds it, so the half GiB the
    driver holds is not the reason SGLang fails; the start-up verdict is."""
    h100 = load_profile("h100-sxm-8")
    assert problems(h100, tmp_path, "gpu_memory_in_use", model="zai-org/GLM-4.5", tp=2) == []
    assert problems(h100, tmp_path, "startup_out_of_memory", model="zai-org/GLM-4.5", tp=2)
    # the same GPUs with a process holding most of GPU 1 still blame it for a model that fits an idle GPU
    mixed = load_profile("workstation-mixed-2")
    assert one(problems(mixed, tmp_path, "gpu_memory_in_use", tp=2), "error")


def test_gpu_memory_in_use_unknown(tmp_path):
    rtx = load_profile("rtx-4090-2")
    lost = replace(rtx, gpus=(replace(rtx.gpus[0], memory_free_mib=None, unknown={"memory_free_mib": "NVML GpuIsLost"}),
                              rtx.gpus[1]))  # fmt: skip
    unknown(problems(lost, tmp_path, "gpu_memory_in_use", tp=2), "free memory of GPU 0", "GpuIsLost")


# -- heterogeneous_gpus -------------------------------------------------------------------------------------------


def test_heterogeneous_gpus_fires(tmp_path):
    problem = one(problems(load_profile("workstation-mixed-2"), tmp_path, "heterogeneous_gpus", tp=2), "warning")
    assert "RTX 6000 Ada" in problem.message and "GeForce RTX 4090" in problem.message
    assert "CUDA_DEVICE_ORDER is not PCI_BUS_ID" in problem.message and "#15255" in problem.source


def test_heterogeneous_gpus_does_not_fire(tmp_path):
    mixed = load_profile("workstation-mixed-2")
    assert problems(mixed, tmp_path, "heterogeneous_gpus", tp=1) == []
    assert problems(load_profile("h200-8"), tmp_path, "heterogeneous_gpus", tp=8) == []
    ordered = replace(mixed, environment={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert "CUDA_DEVICE_ORDER" not in one(problems(ordered, tmp_path, "heterogeneous_gpus", tp=2), "warning").message


def test_heterogeneous_gpus_unknown(tmp_path):
    mixed = load_profile("workstation-mixed-2")
    lost = replace(mixed, gpus=(mixed.gpus[0], replace(mixed.gpus[1], name=None, unknown={"name": "NVML Unknown"})))
    unknown(problems(lost, tmp_path, "heterogeneous_gpus", tp=2), "model of GPU 1", "NVML Unknown")


# -- shm_too_small ------------------------------------------------------------------------------------------------


def test_shm_too_small_fires_in_the_container(tmp_path):
    problem = one(problems(load_profile("a100-pcie-4-container"), tmp_path, "shm_too_small", tp=4), "warning")
    assert "64 MiB" in problem.message and "--shm-size" in problem.fix


def test_shm_too_small_does_not_fire(tmp_path):
    assert problems(load_profile("a100-pcie-4-container"), tmp_path, "shm_too_small", tp=1) == []
    assert problems(load_profile("l40s-4"), tmp_path, "shm_too_small", tp=4) == []


def test_shm_too_small_unknown(tmp_path):
    l40s = load_profile("l40s-4")
    unknown(problems(strip(l40s, tmp_path), tmp_path, "shm_too_small", tp=4), "/dev/shm", "re-run")
    probed = replace(l40s, system=replace(l40s.system, shm_mib=None, unknown={"shm_mib": "/dev/shm does not exist"}))
    unknown(problems(probed, tmp_path, "shm_too_small", tp=4), "does not exist")


# -- nccl_env_override --------------------------------------------------------------------------------------------


def test_nccl_env_override_fires_per_variable(tmp_path):
    found = problems(load_profile("a100-pcie-4-container"), tmp_path, "nccl_env_override", tp=4)
    assert [p.message.split(" ", 1)[0] for p in found] == ["NCCL_P2P_DISABLE=1", "CUDA_DEVICE_MAX_CONNECTIONS=1"]
    h200 = load_profile("h200-8")
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_NVLS_ENABLE": "0", "NCCL_IB_DISABLE": "1"}
    nvlink = problems(replace(h200, environment=env), tmp_path, "nccl_env_override", tp=16, nnodes=2)
    severities = {p.message.split(" ", 1)[0]: p.severity for p in nvlink}
    assert severities == {"NCCL_P2P_DISABLE=1": "warning", "NCCL_NVLS_ENABLE=0": "info", "NCCL_IB_DISABLE=1": "warning"}


def test_nccl_env_override_does_not_fire(tmp_path):
    # values that keep things on, and variables that change nothing the plan counts on
    b300 = load_profile("b300-8")  # NCCL_IB_DISABLE=0, SGLANG_ENABLE_JIT_DEEPGEMM=1
    assert problems(b300, tmp_path, "nccl_env_override", tp=8) == []
    gb200 = load_profile("gb200-nvl72-tray")  # NCCL_MNNVL_ENABLE=1, NCCL_CUMEM_ENABLE=1
    assert problems(gb200, tmp_path, "nccl_env_override", tp=4) == []
    container = load_profile("a100-pcie-4-container")
    assert problems(container, tmp_path, "nccl_env_override", tp=1) == []  # no collective at all


def test_nccl_env_override_unknown_is_an_empty_environment(tmp_path):
    # the environment is always probed; a facts file without it reads as nothing set
    container = load_profile("a100-pcie-4-container")
    data = json.loads(container.to_json())
    data.pop("environment")
    path = tmp_path / "no-env.json"
    path.write_text(json.dumps(data))
    assert problems(Facts.load(path), tmp_path, "nccl_env_override", tp=4) == []


# -- fabric_not_ready ---------------------------------------------------------------------------------------------


def test_fabric_not_ready_fires(tmp_path):
    problem = one(problems(load_profile("h200-8-fabric-pending"), tmp_path, "fabric_not_ready", tp=8), "error")
    assert "'in progress'" in problem.message and "#1788" in problem.source and "fabricmanager" in problem.fix
    # even one GPU cannot start CUDA before registration completes
    assert one(problems(load_profile("h200-8-fabric-pending"), tmp_path, "fabric_not_ready", tp=1), "error")


def test_fabric_not_ready_does_not_fire(tmp_path):
    assert problems(load_profile("gb200-nvl72-tray"), tmp_path, "fabric_not_ready", tp=4) == []  # completed
    assert problems(load_profile("h200-8"), tmp_path, "fabric_not_ready", tp=8) == []  # not supported
    assert problems(load_profile("l40s-4"), tmp_path, "fabric_not_ready", tp=4) == []  # no NVSwitch


def test_fabric_not_ready_unknown(tmp_path):
    h200 = load_profile("h200-8")
    fabric = Fabric(unknown={"state": "nvidia-ml-py lacks nvmlDeviceGetGpuFabricInfoV; upgrade nvidia-ml-py"})
    old_binding = replace(h200, topology=replace(h200.topology, fabric=fabric))
    unknown(problems(old_binding, tmp_path, "fabric_not_ready", tp=8), "fabric state", "upgrade nvidia-ml-py")


# -- memlock_limit ------------------------------------------------------------------------------------------------


def test_memlock_limit_fires_on_multi_node(tmp_path):
    problem = one(problems(load_profile("a100-pcie-4-container"), tmp_path, "memlock_limit", tp=8, nnodes=2,
                           engine="vllm"), "warning")  # fmt: skip
    assert "8192 KiB" in problem.message and "memlock=-1" in problem.fix


def test_memlock_limit_does_not_fire(tmp_path):
    assert problems(load_profile("a100-pcie-4-container"), tmp_path, "memlock_limit", tp=4) == []  # one node
    assert problems(load_profile("h200-8"), tmp_path, "memlock_limit", tp=16, nnodes=2) == []  # unlimited
    assert load_profile("h200-8").system.memlock_bytes == MEMLOCK_UNLIMITED


def test_memlock_limit_unknown(tmp_path):
    h200 = load_profile("h200-8")
    unknown(problems(strip(h200, tmp_path), tmp_path, "memlock_limit", tp=16, nnodes=2), "locked-memory", "re-run")


# -- every id: listed, and shown on at least one simulated machine -------------------------------------------------


def test_old_facts_files_still_load_and_keep_their_other_facts(tmp_path):
    rtx = load_profile("rtx-4090-2")
    old = strip(rtx, tmp_path)
    assert old.gpus[0].numa_node is None and old.gpus[0].processes is None and old.system.shm_mib is None
    assert old.topology.pair(0, 1).p2p_read is None and old.gpus[0].name == rtx.gpus[0].name


def test_each_check_fires_on_a_profile_and_the_readme_lists_every_id(tmp_path):
    scenarios = [
        ("rtx-4090-2", dict(tp=2)),
        ("a100-pcie-4-container", dict(tp=8, nnodes=2, engine="vllm")),
        ("l40s-4", dict(tp=4, engine="vllm")),
        ("workstation-mixed-2", dict(tp=2)),
        ("h200-8-fabric-pending", dict(tp=8)),
    ]
    fired = set()
    for name, intent in scenarios:
        plan = build_plan(load_profile(name), resolve_model(QWEN_8B), Intent(model=QWEN_8B, engine=intent.pop(
            "engine", "sglang"), **intent))  # fmt: skip
        fired |= {p.id for p in plan.problems if not p.message.startswith("cannot check")}
    assert set(PROBLEM_IDS) <= fired
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for problem_id in PROBLEM_IDS:
        assert f"`{problem_id}`" in readme, problem_id


# -- the done-when, through the CLI ------------------------------------------------------------------------

RTX = ["--profile", "rtx-4090-2", "--engine", "sglang", "--model", QWEN_8B, "--tp", "2"]


def test_check_on_the_simulated_rtx_4090_names_the_flag():
    result = CliRunner().invoke(main, ["check", *RTX, "--json"], catch_exceptions=False)
    data = json.loads(result.stdout)
    found = [p for p in data["problems"] if p["id"] == "p2p_unavailable"]
    assert len(found) == 1 and "--disable-custom-all-reduce" in found[0]["fix"]
    assert found[0]["severity"] == "warning" and result.exit_code == 0
    strict = CliRunner().invoke(main, ["check", *RTX, "--strict"], catch_exceptions=False)
    assert strict.exit_code == 1  # warnings refuse under --strict


def test_launch_dry_run_drops_it_when_the_user_disables_custom_allreduce():
    plain = CliRunner().invoke(main, ["launch", *RTX, "--dry-run"], catch_exceptions=False)
    assert "peer access is not supported" in plain.output
    disabled = CliRunner().invoke(main, ["launch", *RTX, "--dry-run", "--", "--disable-custom-all-reduce"],
                                  catch_exceptions=False)  # fmt: skip
    assert "peer access is not supported" not in disabled.output
    assert "--disable-custom-all-reduce" in disabled.output.splitlines()[-1]  # and it reaches the engine


def test_launch_refuses_a_machine_error_without_force():
    args = ["launch", "--profile", "h200-8-fabric-pending", "--engine", "sglang", "--model", QWEN_8B, "--tp", "8"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and "fabric registration is 'in progress'" in refused.output
    assert "not starting: the plan has 1 error(s)" in refused.output
    forced = CliRunner().invoke(main, [*args, "--force"])  # past the plan check, a simulated machine still cannot start
    assert "not starting" not in forced.output and "the facts describe another machine" in forced.output
    # a warning (p2p_unavailable on the RTX 4090 pair) refuses only under --strict
    strict = CliRunner().invoke(main, ["launch", *RTX, "--strict"])
    assert strict.exit_code == 1 and "the plan has warnings and --strict is set" in strict.output


def test_without_a_plan_the_engine_rule_decides_custom_allreduce():
    from advisor.rules.checks import run_checks

    rtx, model = load_profile("rtx-4090-2"), resolve_model(QWEN_8B)

    def p2p(**intent):
        return [p.severity for p in run_checks(rtx, model, Intent(model=QWEN_8B, tp=2, **intent))
                if p.id == "p2p_unavailable"]  # fmt: skip

    assert p2p(engine="sglang") == ["warning"] and p2p(engine="vllm") == ["info"]
    assert p2p(engine="sglang", overrides=("--disable-custom-all-reduce",)) == []
    assert p2p(engine="sglang", overrides=("--enable-deterministic-inference",)) == []  # SGLang turns it off too
