"""run_checks: every compatibility check, each both ways, over simulated profiles and hand-built Facts."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from advisor.facts import Driver, Facts, Gpu, Package, Topology
from advisor.models import ModelSpec
from advisor.plan import Intent
from advisor.probe.profiles import load_profile
from advisor.rules.checks import run_checks, weight_bytes_per_param
from advisor.rules.flashinfer import fusion_workspace_bytes

QWEN3_30B = ModelSpec(
    id="Qwen/Qwen3-30B-A3B", architecture="Qwen3MoeForCausalLM", hidden_size=2048, num_layers=48, num_heads=32,
    num_kv_heads=4, head_dim=128, intermediate_size=6144, num_experts=128, experts_per_token=8,
    moe_intermediate_size=768, vocab_size=151936, dtype="bfloat16", num_params=30_500_000_000,
)  # fmt: skip
DEEPSEEK_V3 = ModelSpec(
    id="deepseek-ai/DeepSeek-V3", architecture="DeepseekV3ForCausalLM", hidden_size=7168, num_layers=61, num_heads=128,
    num_kv_heads=128, intermediate_size=18432, num_experts=256, experts_per_token=8, moe_intermediate_size=2048,
    dtype="bfloat16", num_params=671_000_000_000,
)  # fmt: skip
LLAMA_8B = ModelSpec(
    id="meta-llama/Llama-3.1-8B-Instruct", architecture="LlamaForCausalLM", hidden_size=4096, num_layers=32,
    num_heads=32, num_kv_heads=8, intermediate_size=14336, dtype="bfloat16", num_params=8_030_000_000,
)  # fmt: skip


def ids(problems, severity=None):
    return [p.id for p in problems if severity is None or p.severity == severity]


def assert_absent(problem_id, problems, note=None):
    """``problem_id`` is not reported, and not because a check crashed: run_checks turns a check that raises into an
    info `check_failed` problem, which would make every "not reported" assertion pass for the wrong reason."""
    assert problem_id not in ids(problems), (problem_id, note, problems)
    crashed = [p.message for p in problems if p.id == "check_failed"]
    assert not crashed, (note, crashed)


def only(problems, problem_id):
    found = [p for p in problems if p.id == problem_id]
    assert len(found) == 1, (problem_id, problems)
    return found[0]


def profile(name: str, **versions: str) -> Facts:
    facts = load_profile(name)
    return facts.with_packages({k.replace("_", "-"): v for k, v in versions.items()}) if versions else facts


def matching_flashinfer(facts: Facts, version: str, label: str) -> Facts:
    return facts.with_packages(
        {"flashinfer-python": version, "flashinfer-cubin": version, "flashinfer-jit-cache": f"{version}+{label}"}
    )


# -- flashinfer ------------------------------------------------------------------------------------------------------


def test_flashinfer_version_mismatch_error_then_bypassed_warning():
    facts = profile("h100-sxm-8", flashinfer_python="0.6.12", flashinfer_cubin="0.6.12",
                    flashinfer_jit_cache="0.6.11+cu128")  # fmt: skip
    problem = only(run_checks(facts, QWEN3_30B, Intent(tp=8, engine="sglang")), "flashinfer_version_mismatch")
    assert problem.severity == "error" and "import flashinfer will fail" in problem.message
    assert "flashinfer-jit-cache==0.6.12+cu128" in problem.fix and "FLASHINFER_DISABLE_VERSION_CHECK=1" in problem.fix
    bypassed = replace(facts, environment={"FLASHINFER_DISABLE_VERSION_CHECK": "1"})
    problem = only(run_checks(bypassed, QWEN3_30B, Intent(tp=8, engine="sglang")), "flashinfer_version_mismatch")
    assert problem.severity == "warning"
    # the profile's own matching trio: nothing to report
    assert_absent("flashinfer_version_mismatch", run_checks(profile("h100-sxm-8"), QWEN3_30B, Intent(tp=8)))


@pytest.mark.parametrize(
    ("torch", "jit", "expected"),
    [
        ("2.9.1+cu128", "0.6.6+cu130", "warning"),  # built for a newer CUDA than torch's
        ("2.11.0+cu130", "0.6.6+cu129", "warning"),  # another major
        ("2.11.0+cu129", "0.6.6+cu128", None),  # older minor of the same major: what flashinfer's installer picks
        ("2.9.1+cu128", "0.6.6+cu128", None),
        ("2.9.1+cu128", "0.6.6", "info"),  # no label: cannot check
        ("2.13.0+cpu", "0.6.6+cu128", None),  # CPU torch loads no CUDA kernels
    ],
)
def test_jit_cache_cuda_label_vs_torch(torch, jit, expected):
    facts = profile("h100-sxm-8", torch=torch, flashinfer_jit_cache=jit)
    found = [p for p in run_checks(facts, None, Intent(tp=8)) if p.id == "flashinfer_jit_cache_cuda_mismatch"]
    assert [p.severity for p in found] == ([expected] if expected else [])
    if expected == "warning":
        assert "JIT-compiles" in found[0].message and "--extra-index-url https://flashinfer.ai/whl/cu" in found[0].fix


@pytest.mark.parametrize(
    ("driver_cuda", "torch", "expected"),
    [("12.4", "2.11.0+cu130", "error"), ("12.4", "2.9.1+cu128", "warning"), ("12.9", "2.9.1+cu128", None),
     ("13.0", "2.9.1+cu128", None), (None, "2.9.1+cu128", "info"), ("12.4", "2.13.0+cpu", None)],
)  # fmt: skip
def test_torch_cuda_vs_driver(driver_cuda, torch, expected):
    facts = profile("h100-sxm-8", torch=torch)
    unknown = {} if driver_cuda else {"cuda_version": "NVML: FunctionNotFound"}
    facts = replace(facts, driver=replace(facts.driver, cuda_version=driver_cuda, unknown=unknown))
    found = [p for p in run_checks(facts, None, Intent(tp=8)) if p.id == "torch_cuda_vs_driver"]
    assert [p.severity for p in found] == ([expected] if expected else [])
    if expected == "error":
        assert "13.0" in found[0].message and "upgrade the NVIDIA driver" in found[0].fix
    if expected == "info":
        assert "FunctionNotFound" in found[0].message


def test_flashinfer_gpu_arch():
    a100 = profile("a100-sxm-8")
    problem = only(run_checks(a100, None, Intent(tp=8)), "flashinfer_gpu_arch")
    assert problem.severity == "info" and "SM80" in problem.message
    forced = Intent(tp=8, engine="sglang", overrides=("--enable-flashinfer-allreduce-fusion",))
    assert only(run_checks(a100, None, forced), "flashinfer_gpu_arch").severity == "warning"
    assert_absent("flashinfer_gpu_arch", run_checks(a100, None, Intent(tp=1)))
    assert_absent("flashinfer_gpu_arch", run_checks(profile("h200-8"), None, Intent(tp=8)))
    # SM120: fusion kernels only from flashinfer 0.6.17
    old = matching_flashinfer(profile("rtx-pro-6000-4"), "0.6.16", "cu130")
    problem = only(run_checks(old, None, Intent(tp=4)), "flashinfer_gpu_arch")
    assert "0.6.17" in problem.fix
    new = matching_flashinfer(profile("rtx-pro-6000-4"), "0.6.17", "cu130")
    assert_absent("flashinfer_gpu_arch", run_checks(new, None, Intent(tp=4)))


# -- tp vs GPUs and the model ---------------------------------------------------------------------------------------------


def test_tp_exceeds_gpus():
    h100 = profile("h100-sxm-8")
    assert_absent("tp_exceeds_gpus", run_checks(h100, None, Intent(tp=8)))
    problem = only(run_checks(h100, None, Intent(tp=16)), "tp_exceeds_gpus")
    assert problem.severity == "error" and "sees 8" in problem.message and "CUDA_VISIBLE_DEVICES" not in problem.message
    assert_absent("tp_exceeds_gpus", run_checks(h100, None, Intent(tp=16, nnodes=2)))
    assert "evenly" in only(run_checks(h100, None, Intent(tp=6, nnodes=4)), "tp_exceeds_gpus").message


def test_tp_exceeds_gpus_names_cuda_visible_devices():
    h100 = replace(profile("h100-sxm-8"), visible_gpus=(4, 5), environment={"CUDA_VISIBLE_DEVICES": "4,5"})
    problem = only(run_checks(h100, None, Intent(tp=4)), "tp_exceeds_gpus")
    assert "CUDA_VISIBLE_DEVICES='4,5' hides 6 of the 8 GPUs" in problem.message
    assert "widen CUDA_VISIBLE_DEVICES" in problem.fix
    assert_absent("tp_exceeds_gpus", run_checks(h100, None, Intent(tp=2)))


def test_tp_exceeds_gpus_skipped_without_driver():
    assert_absent("tp_exceeds_gpus", run_checks(profile("cpu-only"), None, Intent(tp=2)))


def test_kv_heads_replicated_is_info_not_error():
    problems = [p for p in run_checks(profile("h100-sxm-8"), QWEN3_30B, Intent(tp=8)) if p.id == "tp_not_divisible"]
    assert [p.severity for p in problems] == ["info"]
    assert "4 KV heads" in problems[0].message and "replicated on 2 ranks" in problems[0].message
    # tp 4 splits the 4 KV heads evenly; DP attention with dp 8 leaves attention tp 1
    assert_absent("tp_not_divisible", run_checks(profile("h100-sxm-8"), QWEN3_30B, Intent(tp=4)))
    dp = Intent(tp=8, dp_attention=True, dp_size=8)
    assert_absent("tp_not_divisible", run_checks(profile("h100-sxm-8"), QWEN3_30B, dp))


def test_tp_not_dividing_heads_intermediate_and_moe():
    facts = profile("h100-sxm-8")
    messages = [p.message for p in run_checks(facts, QWEN3_30B, Intent(tp=5)) if p.id == "tp_not_divisible"]
    assert any("32 attention heads" in m for m in messages)
    assert any("4 KV heads" in m and "replicated evenly" in m for m in messages)
    assert any("MoE intermediate size 768" in m and "every expert's intermediate dimension" in m for m in messages)
    assert any("intermediate size 6144" in m for m in messages)
    messages = [p.message for p in run_checks(facts, QWEN3_30B, Intent(tp=6)) if p.id == "tp_not_divisible"]
    assert not any("intermediate size" in m for m in messages)  # 6144 = 6 x 1024, 768 = 6 x 128
    llama = run_checks(facts, replace(LLAMA_8B, intermediate_size=14020), Intent(tp=8))
    assert any("intermediate size 14020" in p.message for p in llama if p.id == "tp_not_divisible")
    assert_absent("tp_not_divisible", run_checks(facts, LLAMA_8B, Intent(tp=8)))


def test_experts_must_divide_under_expert_parallelism():
    model = replace(QWEN3_30B, num_experts=60, num_kv_heads=8)
    plain = run_checks(profile("h100-sxm-8"), model, Intent(tp=8))
    assert not any("experts" in p.message and p.severity == "error" for p in plain if p.id == "tp_not_divisible")
    ep = run_checks(profile("h100-sxm-8"), model, Intent(tp=8, moe_a2a_backend="deepep"))
    problem = only(ep, "tp_not_divisible")
    assert "60 experts" in problem.message and "deepep" in problem.message


def test_fp8_block_per_rank():
    fp8 = replace(QWEN3_30B, quantization="fp8", num_kv_heads=8)
    problem = only(run_checks(profile("h100-sxm-8"), fp8, Intent(tp=8)), "tp_not_divisible")
    assert problem.severity == "warning" and "96" in problem.message and "128" in problem.message
    assert_absent("tp_not_divisible", run_checks(profile("h100-sxm-8"), fp8, Intent(tp=2)))  # 384 per rank


# -- memory ----------------------------------------------------------------------------------------------------------------


def _plan(facts: Facts, model: str | ModelSpec, **intent):
    from advisor.models import catalog_spec
    from advisor.plan import build_plan

    spec = catalog_spec(model) if isinstance(model, str) else model
    return build_plan(facts, spec, Intent(model=spec.id, **intent))


def test_weights_that_do_not_fit_are_the_start_up_error_with_ranked_fixes():
    """The weights check is the engine's start-up verdict now (advisor.rules.startup): one error, the release's words."""
    deepseek_bf16 = replace(_spec("deepseek-ai/DeepSeek-V3"), quantization=None, weight_bits=None)
    plan = _plan(profile("h200-8"), deepseek_bf16, tp=8, engine="sglang")
    problem = only(plan.problems, "startup_out_of_memory")
    assert problem.severity == "error" and "sglang will not start" in problem.message
    assert "--tp 16 --nnodes 2: the smallest tp that fits on 2 nodes" in problem.fix
    assert "an FP8 checkpoint" in problem.fix
    assert_absent(
        "startup_out_of_memory", _plan(profile("h200-8"), "deepseek-ai/DeepSeek-V3", tp=8, engine="sglang").problems
    )
    assert_absent("weights_exceed_memory", run_checks(profile("h200-8"), DEEPSEEK_V3, Intent(tp=8, engine="sglang")))


def test_a_kv_pool_shorter_than_the_context_is_a_warning():
    plan = _plan(profile("rtx-4090-2"), "meta-llama/Llama-3.1-8B-Instruct", tp=1, engine="sglang")
    problem = only(plan.problems, "kv_cache_short")
    assert problem.severity == "warning" and f"{plan.startup.kv_tokens:,} tokens" in problem.message
    assert f"--context-length {plan.startup.kv_tokens}" in problem.fix
    fits = _plan(profile("rtx-4090-2"), "meta-llama/Llama-3.1-8B-Instruct", tp=1, engine="sglang",
                 overrides=("--context-length", "8192"))  # fmt: skip
    assert fits.startup.starts and fits.startup.context_len == 8192
    assert_absent("kv_cache_short", fits.problems)


def test_fusion_workspace_size():
    assert fusion_workspace_bytes(8, 7168) == 234_881_024 + 704_643_072  # reference: TP8, 2048 tokens, 7168, bf16
    assert fusion_workspace_bytes(8, 16384, max_tokens=8192) == 8 * 8192 * 16384 * 2 + 2 * 1024**3  # Lamport cap


def test_memory_verdict_degrades_to_info():
    unknown = replace(_spec("meta-llama/Llama-3.1-8B-Instruct"), num_params=None)
    problem = only(_plan(profile("h100-sxm-8"), unknown, tp=2, engine="sglang").problems, "startup_unknown")
    assert problem.severity == "info" and "weights is unknown" in problem.message
    odd = replace(_spec("meta-llama/Llama-3.1-8B-Instruct"), quantization="exotic-q3")
    assert only(_plan(profile("h100-sxm-8"), odd, tp=2, engine="sglang").problems, "startup_unknown").severity == "info"
    assert weight_bytes_per_param("bfloat16", "mxfp4") < 1 < weight_bytes_per_param("float32", None)


def _spec(model_id: str) -> ModelSpec:
    from advisor.models import catalog_spec

    return catalog_spec(model_id)


# -- topology and platform -------------------------------------------------------------------------------------------------


def test_no_multicast_for_fusion():
    """Across nodes the mnnvl backend needs NVSwitch multicast; on one node the trtllm workspace is CUDA IPC memory, so
    peer-to-peer decides (flashinfer comm/trtllm_ar.py), and the fusion decisions say so, not this problem."""
    bridge = profile("h100-pcie-2-bridge")
    across = only(run_checks(bridge, None, Intent(tp=4, nnodes=2, engine="sglang"), fusion=True),
                  "no_multicast_for_fusion")  # fmt: skip
    assert across.severity == "warning" and "mnnvl" in across.message and "fall back" in across.message
    assert_absent("no_multicast_for_fusion", run_checks(bridge, None, Intent(tp=4, nnodes=2), fusion=False))
    broken = bridge.with_packages({"flashinfer-jit-cache": "0.6.11+cu129"})  # import fails first
    assert_absent("no_multicast_for_fusion", run_checks(broken, None, Intent(tp=4, nnodes=2), fusion=True))
    assert_absent("no_multicast_for_fusion", run_checks(profile("h100-sxm-8"), None, Intent(tp=16, nnodes=2), fusion=True))
    for one_node in ("h100-pcie-2-bridge", "rtx-pro-6000-4", "rtx-4090-2", "l40s-4"):
        assert_absent("no_multicast_for_fusion", run_checks(profile(one_node), None, Intent(tp=2), fusion=True))


def test_no_multicast_unknown_topology_is_info():
    facts = replace(profile("h200-8"), topology=Topology(nvswitch=None, unknown={"nvswitch": "NVML: NoPermission"}))
    problem = only(run_checks(facts, None, Intent(tp=16, nnodes=2), fusion=True), "no_multicast_for_fusion")
    assert problem.severity == "info" and "NoPermission" in problem.message
    assert_absent("no_multicast_for_fusion", run_checks(facts, None, Intent(tp=8)))


def test_unofficial_pynvml():
    problem = only(run_checks(profile("h800-8"), None, Intent(tp=8)), "unofficial_pynvml")
    assert problem.severity == "warning" and "pip uninstall -y pynvml" in problem.fix
    assert_absent("unofficial_pynvml", run_checks(profile("h200-8"), None, Intent(tp=8)))


def test_no_gpus():
    cpu = profile("cpu-only")
    problem = only(run_checks(cpu, None, Intent(tp=2)), "no_gpus")
    assert problem.severity == "info" and "gloo" in problem.message
    assert problem.message.startswith(f"{cpu.driver.reason}, so no GPU: ")  # the reason once, not nested in another
    assert only(run_checks(cpu, None, Intent(tp=2, engine="sglang")), "no_gpus").severity == "warning"
    assert_absent("no_gpus", run_checks(profile("h200-8"), None, Intent(tp=8)))


def test_mig_enabled():
    facts = profile("h100-sxm-8")
    gpus = (replace(facts.gpus[0], mig_mode="enabled"),) + facts.gpus[1:]
    assert "mig_enabled" in ids(run_checks(replace(facts, gpus=gpus), None, Intent(tp=8)), "warning")
    assert_absent("mig_enabled", run_checks(facts, None, Intent(tp=8)))


def test_engine_not_installed():
    cpu = profile("cpu-only")
    assert only(run_checks(cpu, None, Intent(engine="sglang")), "sglang_not_installed").severity == "info"
    live = replace(cpu, source="live")
    problem = only(run_checks(live, None, Intent(engine="vllm", engine_version="0.11.0")), "vllm_not_installed")
    assert problem.severity == "warning" and "vllm==0.11.0" in problem.fix
    assert_absent("sglang_not_installed", run_checks(profile("b300-8"), None, Intent(tp=8, engine="sglang")))
    assert "torch_not_installed" in ids(run_checks(Facts(), None, Intent()), "warning")
    assert_absent("torch_not_installed", run_checks(live, None, Intent()))


def test_torch_missing_without_gpus_installs_the_cpu_build_first():
    """`pip install tp-advisor[runtime]` alone fetches the multi-GB CUDA torch: without GPUs the CPU build comes first."""
    from advisor.rules.command import install_command
    from launcher.engines import CPU_TORCH_INSTALL

    no_torch = Package(name="torch", installed=False)
    no_gpus = replace(Facts(), packages=(no_torch,))
    fix = only(run_checks(no_gpus, None, Intent()), "torch_not_installed").fix
    assert fix == f"`{CPU_TORCH_INSTALL}`, then `{install_command('bundled')}`"
    gpus = replace(profile("h100-sxm-8"), source="live", packages=(no_torch,))
    fix = only(run_checks(gpus, None, Intent(engine="bundled")), "torch_not_installed").fix
    assert fix == f"`{install_command('bundled')}` (installs a CUDA torch on GPU nodes)"


def test_problems_say_which_packages_they_are_about():
    def about(facts, intent, problem_id, model=None):
        return only(run_checks(facts, model, intent), problem_id).packages

    # flashinfer-jit-cache built for CUDA 13.0 beside a CUDA 12.8 torch; torch vs the driver, down to "cannot check"
    jit = profile("h100-sxm-8", flashinfer_jit_cache="0.6.6+cu130")
    assert about(jit, Intent(tp=8), "flashinfer_jit_cache_cuda_mismatch") == ("flashinfer-jit-cache", "torch")
    assert about(profile("h100-sxm-8", torch="2.11.0+cu130"), Intent(tp=8), "torch_cuda_vs_driver") == ("torch",)
    facts = profile("h100-sxm-8")
    unknown = replace(facts, driver=replace(facts.driver, cuda_version=None, unknown={"cuda_version": "NVML: gone"}))
    assert about(unknown, Intent(tp=8), "torch_cuda_vs_driver") == ("torch",)
    assert about(profile("a100-sxm-8"), Intent(tp=8), "flashinfer_gpu_arch") == ("flashinfer-python",)
    # the unofficial wrapper; NVIDIA's nvidia-ml-py only when it is missing too
    h800 = profile("h800-8")
    assert about(h800, Intent(tp=8), "unofficial_pynvml") == ("pynvml",)
    alone = replace(h800, packages=tuple(p for p in h800.packages if p.name != "nvidia-ml-py"))
    assert about(alone, Intent(tp=8), "unofficial_pynvml") == ("pynvml", "nvidia-ml-py")
    # the engine that is not installed
    cpu = profile("cpu-only")
    assert about(cpu, Intent(engine="sglang"), "sglang_not_installed") == ("sglang",)
    assert about(replace(cpu, source="live"), Intent(engine="vllm"), "vllm_not_installed") == ("vllm",)
    assert about(Facts(), Intent(), "torch_not_installed") == ("torch",)
    # problems about the machine, the layout or the model are about no package
    for problem in (
        *run_checks(cpu, None, Intent(tp=2, engine="sglang")),  # no_gpus (its text names sglang)
        *run_checks(profile("h200-8"), QWEN3_30B, Intent(tp=16)),  # tp_exceeds_gpus
        *run_checks(profile("h100-sxm-8"), DEEPSEEK_V3, Intent(tp=2)),  # weights_exceed_memory
        *run_checks(profile("h100-pcie-2-bridge"), LLAMA_8B, Intent(tp=2, engine="sglang")),  # no_multicast_for_fusion
    ):
        if problem.id not in ("sglang_not_installed", "flashinfer_gpu_arch"):
            assert problem.packages == (), problem


# -- robustness ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "intent",
    [Intent(), Intent(tp=0), Intent(tp=8, nnodes=0), Intent(tp=4, dp_attention=True, dp_size=3),
     Intent(tp=8, engine="sglang", overrides=("--flashinfer-allreduce-fusion-backend", "mnnvl")), Intent(engine="what")],
)  # fmt: skip
def test_checks_never_raise_on_sparse_facts(intent):
    bare_gpu = Gpu(index=0, unknown={"capability": "NVML: GpuIsLost", "memory_total_mib": "NVML: GpuIsLost"})
    sparse = Facts(
        driver=Driver(available=True, unknown={"cuda_version": "NVML: FunctionNotFound"}),
        gpus=(bare_gpu, Gpu(index=1)),
        packages=(Package(name="torch", installed=True, version="2.9.1"),
                  Package(name="flashinfer-python", installed=True, version="0.6.12"),
                  Package(name="flashinfer-jit-cache", installed=True, version="weird")),
    )  # fmt: skip
    empty = ModelSpec(id="x", architecture="X", num_heads=0, num_kv_heads=0, num_params=1)
    for facts in (Facts(), sparse, load_profile("gb200-nvl72-tray")):
        for model in (None, empty, QWEN3_30B):
            problems = run_checks(facts, model, intent)
            assert all(p.severity in ("error", "warning", "info") and p.message and p.fix for p in problems)
            assert "check_failed" not in ids(problems), problems


def test_checks_import_nothing_heavy():
    code = (
        "import sys, advisor.rules.checks, advisor.rules.flashinfer\n"
        "heavy = [m for m in ('torch', 'flashinfer', 'textual') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fusion_estimate_follows_override_flags():
    bridge = profile("h100-pcie-2-bridge")
    for off in (("--enforce-disable-flashinfer-allreduce-fusion",), ("--enforce-eager",),
                ("-cc.pass_config.fuse_allreduce_rms=False",)):  # fmt: skip
        assert_absent("no_multicast_for_fusion", run_checks(bridge, None, Intent(tp=2, overrides=off)), off)
    a100 = profile("a100-sxm-8")
    on = Intent(tp=8, engine="vllm", overrides=("-cc.pass_config.fuse_allreduce_rms=True",))
    assert only(run_checks(a100, None, on), "flashinfer_gpu_arch").severity == "warning"


def test_a_crashing_check_fails_the_negative_assertions(monkeypatch):
    """The guard of assert_absent: with the tp check raising, "tp_exceeds_gpus is not reported" must not pass."""
    import advisor.rules.checks as checks_module

    def check_tp_broken(context):
        raise RuntimeError("boom")

    broken = tuple(check_tp_broken if c.__name__ == "check_tp_vs_gpus" else c for c in checks_module.CHECKS)
    assert broken != checks_module.CHECKS, [c.__name__ for c in checks_module.CHECKS]
    monkeypatch.setattr(checks_module, "CHECKS", broken)
    problems = run_checks(profile("h100-sxm-8"), None, Intent(tp=2))
    assert "tp_exceeds_gpus" not in ids(problems)  # the old assertion passes for the wrong reason...
    with pytest.raises(AssertionError, match="could not run"):
        assert_absent("tp_exceeds_gpus", problems)  # ...the new one does not
