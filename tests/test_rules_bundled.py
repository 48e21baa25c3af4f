"""The bundled runtime's rules: fused allreduce vs torch.distributed, device and dtype."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.facts import Link
from advisor.models import ModelSpec, resolve_model
from advisor.plan import Intent
from advisor.probe.profiles import load_profile
from advisor.rules import bundled
from advisor.rules.engine import AUTO_ENABLED, FORCED_OFF, FORCED_ON, NOT_ENABLED, UNAVAILABLE, Scenario
from advisor.rules.flashinfer import fusion_workspace_bytes


def scenario(profile="b300-8", model="demo", *, tp=8, packages=None, facts=None, **intent) -> Scenario:
    facts = facts or load_profile(profile)
    if packages:
        facts = facts.with_packages(packages)
    if isinstance(model, str):
        model = resolve_model(model)
    return Scenario(facts, model, Intent(tp=tp, **intent))


def failed(d) -> set[str]:
    return {c.id for c in d.failed}


def test_b300_tp8_fuses_with_workspace_size():
    d = bundled.fusion_decision(scenario())
    assert d.state == AUTO_ENABLED and d.flags == ("--allreduce", "flashinfer-fusion")
    # demo hidden 256: 8 x 2048 x 256 x 2 = 8 MiB, plus 3x that for the Lamport buffers.
    assert d.value["workspace_bytes_per_gpu"] == 4 * 8 * 2048 * 256 * 2
    assert d.value["allreduce"] == "flashinfer-fusion"


def test_workspace_formula_matches_reference_example():
    # docs/flashinfer.md: TP8, 2048 tokens, hidden 7168, bf16: about 235 MB + 704 MB.
    assert fusion_workspace_bytes(8, 7168) == 234_881_024 + 704_643_072
    assert fusion_workspace_bytes(16, 16384) == 16 * 2048 * 16384 * 2 + (2 << 30)  # Lamport part capped


def test_cpu_machine_runs_torch_allreduce_on_gloo_in_float32():
    s = scenario("cpu-only", tp=2)
    d = bundled.fusion_decision(s)
    assert d.state == NOT_ENABLED and d.flags == ("--allreduce", "torch")
    assert d.value == {"allreduce": "torch", "backend": "gloo"}
    assert {"gpu_capability", "p2p", "dtype"} <= failed(d)
    dev = bundled.device_decision(s)
    assert dev.value == {"device": "cpu", "dtype": "float32", "backend": "gloo"}


@pytest.mark.parametrize(
    ("profile", "tp", "packages", "intent", "blocker"),
    [
        ("a100-sxm-8", 8, None, {}, "gpu_capability"),
        ("l40s-4", 4, None, {}, "gpu_capability"),
        ("rtx-pro-6000-4", 4, {"flashinfer-python": "0.6.16", "flashinfer-cubin": "0.6.16",
                                "flashinfer-jit-cache": "0.6.16+cu130"}, {}, "gpu_capability"),
        ("b300-8", 3, None, {}, "world_size"),
        ("b300-8", 6, None, {}, "world_size"),
        ("b300-8", 16, None, {"nnodes": 2}, "single_node"),
        ("b300-8", 8, {"flashinfer-python": "0.6.12", "flashinfer-cubin": "0.6.12",
                       "flashinfer-jit-cache": "0.6.11+cu128"}, {}, "flashinfer"),
        ("b300-8", 8, {"flashinfer-python": "0.5.3", "flashinfer-cubin": "0.5.3",
                       "flashinfer-jit-cache": "0.5.3+cu128"}, {}, "flashinfer"),
        ("b300-8", 8, None, {"dtype": "float32"}, "dtype"),
    ],
)  # fmt: skip
def test_each_condition_can_block(profile, tp, packages, intent, blocker):
    d = bundled.fusion_decision(scenario(profile, tp=tp, packages=packages, **intent))
    assert d.state == NOT_ENABLED and blocker in failed(d)
    assert d.flags == ("--allreduce", "torch")


def test_sm120_needs_flashinfer_0_6_17():
    new = {"flashinfer-python": "0.6.17", "flashinfer-cubin": "0.6.17", "flashinfer-jit-cache": "0.6.17+cu130"}
    d = bundled.fusion_decision(scenario("rtx-pro-6000-4", tp=4, packages=new))
    assert "gpu_capability" not in failed(d)
    assert "p2p" in failed(d)  # PCIe-only: no NVLink P2P between the pairs


def test_hidden_size_multiple_of_8():
    odd = replace(resolve_model("demo"), hidden_size=260)
    assert failed(bundled.fusion_decision(scenario(model=odd))) == {"hidden_size"}
    assert bundled.fusion_decision(scenario(model=None)).state == UNAVAILABLE


def test_p2p_every_pair():
    facts = load_profile("h100-sxm-8")
    links = tuple(replace(link, nvlink_p2p="NS") if (link.a, link.b) == (2, 5) else link for link in facts.topology.links)
    broken = replace(facts, topology=replace(facts.topology, links=links))
    assert failed(bundled.fusion_decision(scenario(facts=broken))) == {"p2p"}
    # tp 2 uses GPUs 0 and 1 only: the broken pair does not matter.
    assert bundled.fusion_decision(scenario(facts=broken, tp=2)).state == AUTO_ENABLED
    unknown = tuple(Link(a=link.a, b=link.b) for link in facts.topology.links)
    d = bundled.fusion_decision(scenario(facts=replace(facts, topology=replace(facts.topology, links=unknown))))
    assert d.state == UNAVAILABLE


def test_flag_overrides():
    assert bundled.fusion_decision(scenario(overrides=("--allreduce", "torch"))).state == FORCED_OFF
    forced = bundled.fusion_decision(scenario("l40s-4", tp=4, overrides=("--allreduce", "flashinfer-fusion")))
    assert forced.state == FORCED_ON and forced.flags == ("--allreduce", "flashinfer-fusion")
    assert any("forced on although" in n for n in forced.notes)


def test_dtype_choice():
    assert bundled.dtype(scenario()) == "bfloat16"  # GPU, --dtype auto
    assert bundled.dtype(scenario(dtype="float16")) == "float16"
    assert bundled.dtype(scenario("cpu-only", tp=2)) == "float32"
    big = ModelSpec(id="x", architecture="LlamaForCausalLM", hidden_size=4096, dtype="bfloat16")
    notes = bundled.device_decision(scenario(model=big)).notes
    assert not any("checkpoint runs in" in n for n in notes)
    assert any("float32 checkpoint runs in bfloat16" in n for n in bundled.device_decision(scenario()).notes)
