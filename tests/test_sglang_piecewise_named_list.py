"""v0.5.7 to v0.5.14 on the named grid: the piecewise prefill graph's disabled-model list (v0.5.10+) and the inline
DeepSeek branch's SM10x attention default, both read from the release (architectures.json, model_overrides.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import ModelSpec
from advisor.plan import Intent
from advisor.probe.profiles import load_profile
from advisor.rules.engine import Scenario, parse_release
from advisor.rules.sglang.architectures import seen_architecture
from advisor.rules.sglang.attention import attention_decision
from advisor.rules.sglang.memory import PIECEWISE_DISABLED_LIST, memory_decision, prefill_graph_kind
from advisor.rules.sglang.model_overrides import deepseek_branch

STORED = json.loads((Path(__file__).parents[1] / "advisor/rules/sglang/architectures.json").read_text())["releases"]
PIECEWISE_RELEASES = ("0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14")  # --disable-piecewise-cuda-graph from v0.5.10
INLINE_RELEASES = ("0.5.7", "0.5.8", "0.5.9", *PIECEWISE_RELEASES)  # the inline DeepSeek branch up to v0.5.14


def scenario(profile: str, arch: str, tp: int = 1, **kw) -> Scenario:
    spec = ModelSpec(id=arch, architecture=arch, hidden_size=kw.pop("hidden_size", 4096), **kw)
    return Scenario(load_profile(profile), spec, Intent(engine="sglang", tp=tp))


def disabled(release: str) -> list[str]:
    return sorted(a for a, places in STORED[release].items() if PIECEWISE_DISABLED_LIST in places)


@pytest.mark.parametrize("release", PIECEWISE_RELEASES)
def test_the_release_disabled_list_switches_the_piecewise_graph_off(release):
    """configs/model_config.py piecewise_cuda_graph_disabled_model_archs (v0.5.13 _handle_piecewise_cuda_graph,
    v0.5.14 _disable_tc_piecewise_cudagraph_if_incompatible): every name on it loses the graph and its memory reserve."""
    names = disabled(release)
    assert {"BailingMoeV2_5ForCausalLM", "LLaDAModelLM"} <= set(names)
    assert ("DeepseekV4ForCausalLMNextN" in names) is (parse_release(release) >= (0, 5, 12))  # on the list from v0.5.12
    on = scenario("h100-sxm-8", "LlamaForCausalLM")
    assert prefill_graph_kind(on, release) == "standard"
    reserve_kept = memory_decision(on, release).value["mem_fraction_static"]
    for arch in names:
        if seen_architecture(arch, release) != arch:
            continue  # v0.5.10-v0.5.11 load DeepSeek V3.2 as V3 (architectures.py ARCH_SEEN_AS): not this list's name
        off = scenario("h100-sxm-8", arch)
        assert prefill_graph_kind(off, release) is None, arch
        # without the prefill-graph reserve, mem_fraction_static is larger
        assert memory_decision(off, release).value["mem_fraction_static"] > reserve_kept, arch


@pytest.mark.parametrize("release", INLINE_RELEASES)
def test_the_inline_deepseek_branch_sets_trtllm_mla_on_sm10x_whatever_the_attention_kind(release):
    """server_args.py _handle_model_specific_adjustments, "DeepSeek V3/R1/V3.1" branch: trtllm_mla on SM10x for every
    non-DSA name the branch lists, MLA fields or not (Pixtral's wrapper with a Mistral text config)."""
    assert "PixtralForConditionalGeneration" in deepseek_branch(release)
    assert attention_decision(scenario("b200-8", "PixtralForConditionalGeneration"), release).value == "trtllm_mla"
    assert attention_decision(scenario("b200-8", "LlamaForCausalLM"), release).value == "trtllm_mha"
    assert attention_decision(scenario("h100-sxm-8", "PixtralForConditionalGeneration"), release).value == "fa3"
    dsa = scenario("b200-8", "DeepseekV3ForCausalLM", kv_lora_rank=512, qk_rope_head_dim=64, index_topk=2048)
    # the branch's DSA side, not trtllm_mla (the backend is called nsa up to v0.5.12)
    assert attention_decision(dsa, release).value == ("dsa" if parse_release(release) >= (0, 5, 13) else "nsa")
