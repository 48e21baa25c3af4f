"""The architecture names each vLLM release's resolution and registry hold (conformance/vllm/architectures.py,
advisor/rules/vllm/architectures.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from conformance.vllm import architectures as extractor  # noqa: E402

STORED = json.loads(extractor.OUT.read_text())["releases"]


def test_stored_releases_hold_the_registry_and_the_per_architecture_config_fixups():
    assert {"0.12.0", "0.33.0"} <= set(STORED)
    for names in STORED.values():
        registry = {n for n, places in names.items() if any(p.startswith(extractor.REGISTRY) for p in places)}
        assert "LlamaForCausalLM" in registry and "Qwen3MoeForCausalLM" in registry
        assert "model_executor/models/config.py:MODELS_CONFIG_MAP" in names["GptOssForCausalLM"]


def test_command_line_usage(capsys):
    assert extractor.main(["--help"]) == 0
    assert extractor.main([]) == 2
    assert extractor.main(["newest"]) == 2
    assert "not a release" in capsys.readouterr().err


# -- what the rules do with them ----------------------------------------------------------------------------------

from dataclasses import replace  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from advisor.models import load_config_dir  # noqa: E402
from advisor.plan import Intent  # noqa: E402
from advisor.probe.profiles import load_profile  # noqa: E402
from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, Scenario  # noqa: E402
from advisor.rules.vllm import architectures as vllm_architectures  # noqa: E402
from advisor.rules.vllm.attention import attention_decision  # noqa: E402
from advisor.rules.vllm.compilation import compilation_value  # noqa: E402
from advisor.rules.vllm.memory import memory_value  # noqa: E402
from advisor.rules.vllm.scheduling import switch_decision  # noqa: E402

CONFIGS = REPO / "tests" / "conformance" / "configs"
KINDS = json.loads(vllm_architectures.KINDS_FILE.read_text())["releases"]


def _scenario(config: str, profile: str = "h100-sxm-8", tp: int = 1, **model_fields) -> Scenario:
    model = load_config_dir(CONFIGS / config, model_id=config)
    model = replace(model, **model_fields) if model_fields else model
    return Scenario(load_profile(profile), model, Intent(engine="vllm", tp=tp))


def test_model_kinds_hold_every_release_and_the_known_classes():
    assert set(KINDS) == set(STORED)
    for release, kinds in KINDS.items():
        assert {"deepseek_v3", "deepseek_v32", "kimi_k2"} <= set(kinds["mla_model_types"]), release
        assert {"NemotronHForCausalLM", "Qwen3NextForCausalLM"} <= set(kinds["hybrid"]), release
        assert "MambaForCausalLM" in kinds["attention_free"] and "LlamaForCausalLM" not in kinds["hybrid"], release


@settings(max_examples=25, deadline=None)
@given(name=st.from_regex(r"[A-Z][a-z]{3,8}[A-Z][a-z]{2,6}ForCausalLM", fullmatch=True),
       release=st.sampled_from(sorted(STORED)))  # fmt: skip
def test_a_name_the_registry_does_not_serve_is_not_named(name, release):
    s = _scenario("deepseek-v3", architecture=name)
    problems = vllm_architectures.architecture_problems(s, release)
    served = name in vllm_architectures.served(release)
    assert [p.id for p in problems] == ([] if served else [ARCHITECTURE_NOT_NAMED])
    if not served:
        assert problems[0].severity == "warning" and f"not named by vllm {release}" in problems[0].message


def test_mla_follows_the_release_model_types_not_kv_lora_rank():
    glm5 = _scenario("glm-5").model  # glm_moe_dsa, with kv_lora_rank and index_topk
    assert not vllm_architectures.uses_mla(glm5, "0.15.1") and vllm_architectures.uses_mla(glm5, "0.17.1")
    other = replace(glm5, text_model_type="acme_moe")
    assert not any(vllm_architectures.uses_mla(other, r) for r in STORED)


def test_sparse_attention_backend_by_release_and_gpu():
    def backend(profile, release, tp=1):
        return attention_decision(_scenario("deepseek-v3.2", profile, tp), release).value

    assert backend("h100-sxm-8", "0.20.2") == "FLASHMLA_SPARSE"
    assert backend("h100-sxm-8", "0.25.1") == "FLASH_ATTN_MLA_SPARSE"
    assert backend("b200-8", "0.33.0") == "FLASHMLA_SPARSE"
    assert backend("b200-8", "0.33.0", tp=8) == "FLASH_ATTN_MLA_SPARSE_FA4"  # 16 heads per rank
    assert backend("b200-8", "0.12.0") is None  # CUTLASS_MLA forced, no sparse support
    assert backend("a100-sxm-8", "0.33.0") is None  # no sparse backend on 8.x


def test_breakable_cudagraph_architectures_compile_nothing_from_0_29():
    s = _scenario("deepseek-v3.2")
    assert compilation_value(s, "0.28.0")["compilation_mode"] == 3
    assert compilation_value(s, "0.29.0") == {"optimization_level": 2, "compilation_mode": 0,
                                              "cudagraph_mode": "FULL_AND_PIECEWISE"}  # fmt: skip


def test_glm5_kv_cache_is_fp8_on_sm100_in_0_33():
    assert memory_value(_scenario("glm-5", "b200-8"), "0.33.0")["kv_cache_dtype"] == "fp8_e4m3"
    assert memory_value(_scenario("glm-5", "h100-sxm-8"), "0.33.0")["kv_cache_dtype"] == "auto"
    assert memory_value(_scenario("glm-5", "b200-8"), "0.30.0")["kv_cache_dtype"] == "auto"


def test_hybrid_models_get_prefix_caching_from_0_28():
    s = _scenario("nemotron-h-56b")
    assert not switch_decision(s, "0.27.1", "prefix_caching").enabled
    assert switch_decision(s, "0.28.0", "prefix_caching").enabled
    assert switch_decision(_scenario("llama-3.1-8b"), "0.12.0", "prefix_caching").enabled


def test_hybrid_block_holds_the_recurrent_state_up_to_0_19():
    def block(config, profile, release):
        return memory_value(_scenario(config, profile), release)["block_size"]

    assert block("nemotron-h-56b", "h100-sxm-8", "0.12.0") == 2080  # SSM state in the model dtype
    assert block("nemotron-h-56b", "h100-sxm-8", "0.15.1") == 4128  # float32 SSM state (NemotronH fix-up)
    assert block("qwen3.5-397b-a17b", "b200-8", "0.17.1") == 1088  # aligned to 32 on SM10x at head size 256
    assert block("qwen3.5-397b-a17b", "b200-8", "0.19.1") == 1072
    assert block("qwen3-next-80b-a3b", "h100-sxm-8", "0.20.2") == 16


def test_hybrid_block_reads_each_family_s_own_state_keys():
    def block(config, release="0.17.1", tp=1, overrides=()):
        s = _scenario(config, tp=tp)
        s = Scenario(s.facts, s.model, replace(s.intent, overrides=tuple(overrides)))
        return memory_value(s, release)["block_size"]

    # Mamba1 (Jamba): conv (3, 8192) + ssm (8192, 16) in 2 bytes over 4096 bytes a token
    assert block("vllm-JambaForCausalLM") == 80
    assert block("named-FalconH1ForCausalLM", tp=2) == 144  # mamba_d_ssm 1024, one group replicated over the ranks
    assert block("named-GraniteMoeHybridForCausalLM") == 272  # mamba_expand x hidden_size
    assert block("vllm-Zamba2ForCausalLM") == 48  # attention_head_dim 160 (zamba2's head size)
    assert block("vllm-JambaForCausalLM", "0.20.2") == 16  # settled at KV-cache set-up from v0.20
    # prefix caching: a whole number of Mamba chunks (2048 without one: Jamba is Mamba1), or of --mamba-block-size
    assert block("vllm-JambaForSequenceClassification") == 2048
    assert block("vllm-JambaForCausalLM", overrides=["--enable-prefix-caching"]) == 2048
    assert block("vllm-JambaForCausalLM", overrides=["--enable-prefix-caching", "--mamba-block-size", "48"]) == 96
    assert block("named-GraniteMoeHybridForCausalLM", overrides=["--enable-prefix-caching"]) == 512  # chunk 256
    # the same scenarios as v0.12.0 resolves them (run with the release): 2048, 96, 512, 288; the classifier 96 and 80
    assert block("vllm-JambaForCausalLM", "0.12.0", overrides=["--enable-prefix-caching"]) == 2048
    assert block("named-GraniteMoeHybridForCausalLM", "0.12.0",
                 overrides=["--enable-prefix-caching", "--mamba-block-size", "48"]) == 288  # fmt: skip
    assert block("vllm-JambaForSequenceClassification", "0.12.0", overrides=["--mamba-block-size", "48"]) == 96
    assert block("vllm-JambaForSequenceClassification", "0.12.0", overrides=["--no-enable-prefix-caching"]) == 80


@settings(max_examples=40, deadline=None)
@given(heads=st.sampled_from([32, 64, 128, 256]), dim=st.sampled_from([32, 64, 128]),
       state=st.sampled_from([16, 64, 128, 256]), groups=st.sampled_from([1, 2, 8]), tp=st.sampled_from([1, 2, 4, 8]))  # fmt: skip
def test_hybrid_block_is_the_smallest_aligned_page_over_the_state(heads, dim, state, groups, tp):
    from advisor.rules.vllm.hybrid import hybrid_block_size, state_bytes

    s = _scenario("nemotron-h-56b", tp=tp)
    config = dict(
        s.model.state_config, mamba_num_heads=heads, mamba_head_dim=dim, ssm_state_size=state, n_groups=groups
    )
    s = Scenario(s.facts, replace(s.model, state_config=tuple(config.items())), s.intent)
    got = hybrid_block_size(s, "0.15.1", 16, "auto")
    per_token = 2 * max(1, s.model.num_kv_heads // tp) * s.model.head_dim * 2
    mamba = state_bytes(s.model, tp, "0.15.1")
    assert got % 16 == 0 and got * per_token >= mamba
    assert got == 16 or (got - 16) * per_token < mamba


def test_model_fixups_keyed_on_the_name_from_0_25():
    diffusion = _scenario("llama-3.1-8b", architecture="DiffusionGemmaForBlockDiffusion")
    assert memory_value(diffusion, "0.25.1")["max_num_seqs"] == 8
    assert memory_value(diffusion, "0.20.2")["max_num_seqs"] == 1024
    ocr = _scenario("llama-3.1-8b", architecture="UnlimitedOCRForCausalLM")
    assert not switch_decision(ocr, "0.25.1", "prefix_caching").enabled
    assert switch_decision(ocr, "0.20.2", "prefix_caching").enabled


# -- several architectures entries: vLLM runs the first its registry serves, SGLang keys on architectures[0] ----------

from advisor.rules.sglang import architectures as sglang_architectures  # noqa: E402
from advisor.rules.vllm import runner as vllm_runner  # noqa: E402


def _entries(config: str, *architectures: str) -> Scenario:
    """The config with its architectures list replaced, read as the advisor reads a config.json."""
    from advisor.models import spec_from_config

    data = {**json.loads((CONFIGS / config / "config.json").read_text()), "architectures": list(architectures)}
    model = spec_from_config(data, model_id=config, path=None, origin="directory", where=config)
    return Scenario(load_profile("h100-sxm-8"), model, Intent(engine="vllm", tp=1))


def test_vllm_runs_the_first_entry_its_registry_serves():
    s = _entries("nemotron-h-56b", "AcmeHybridForCausalLM", "NemotronHForCausalLM")
    assert s.model.architecture == "AcmeHybridForCausalLM"  # architectures[0], what SGLang keys on
    for release in ("0.19.1", "0.33.0"):
        assert vllm_architectures.vllm_architecture(s.model, release) == "NemotronHForCausalLM"
        assert vllm_architectures.attention_kind(s.model, release) == "hybrid"
        assert vllm_architectures.architecture_problems(s, release) == []
    # SGLang's argument resolution compares architectures[0] only: it stays unnamed there
    assert [p.id for p in sglang_architectures.architecture_problems(s, "0.5.23")] == [sglang_architectures.NOT_NAMED]
    # the same entries the other way round: vLLM runs the first, served one
    swapped = _entries("nemotron-h-56b", "NemotronHForCausalLM", "AcmeHybridForCausalLM")
    assert vllm_architectures.vllm_architecture(swapped.model, "0.33.0") == "NemotronHForCausalLM"
    assert sglang_architectures.architecture_problems(swapped, "0.5.23") == []


def test_a_breakable_entry_anywhere_in_the_list_turns_compilation_off_from_0_25():
    s = _entries("qwen3-32b", "Qwen3ForCausalLM", "DeepseekV4ForCausalLM")
    assert vllm_architectures.vllm_architecture(s.model, "0.33.0") == "Qwen3ForCausalLM"
    assert vllm_architectures.breakable_entry(s.model, "0.33.0") == "DeepseekV4ForCausalLM"
    assert compilation_value(s, "0.20.2")["compilation_mode"] == 3  # no breakable list yet
    for release in ("0.25.1", "0.28.0", "0.29.0", "0.33.0"):  # the inline tuple, then the constant
        assert compilation_value(s, release)["compilation_mode"] == 0, release


def test_the_runner_follows_the_first_entry_the_registry_serves_or_whose_suffix_it_knows():
    # AcmeModel is not served but ends with "Model": the pooling runner (convert embed) for the Llama class that runs
    s = _entries("llama-3.2-1b", "AcmeModel", "LlamaForCausalLM")
    found = vllm_architectures.resolution(s.model, "0.33.0")
    assert (found.entry, found.served_as, found.runner, found.convert) == ("LlamaForCausalLM", "LlamaForCausalLM",
                                                                           "pooling", "embed")  # fmt: skip
    assert vllm_runner.is_pooling(s.model, "0.33.0") and not vllm_runner.pooling_unchunked(s.model, "0.33.0")
    served_first = _entries("llama-3.2-1b", "LlamaForCausalLM", "AcmeModel")
    assert vllm_architectures.resolution(served_first.model, "0.33.0").runner == "generate"
    # a classifier suffix converts only under the pooling runner: after a generative first entry it runs nothing
    mixed = _entries("llama-3.2-1b", "AcmeForCausalLM", "LlamaForSequenceClassification")
    assert vllm_architectures.vllm_architecture(mixed.model, "0.33.0") is None
    assert vllm_architectures.vllm_architecture(_entries("llama-3.2-1b", "LlamaForSequenceClassification").model,
                                                "0.33.0") == "LlamaForSequenceClassification"  # fmt: skip


def test_no_entry_served_names_every_entry_and_a_retired_one_first():
    s = _entries("llama-3.2-1b", "AcmeForCausalLM", "OtherAcmeForCausalLM")
    (problem,) = vllm_architectures.architecture_problems(s, "0.33.0")
    assert problem.id == ARCHITECTURE_NOT_NAMED and "AcmeForCausalLM, OtherAcmeForCausalLM" in problem.message
    retired = next((n for n, places in STORED["0.33.0"].items() if vllm_architectures.RETIRED in places), None)
    if retired is not None:
        (problem,) = vllm_architectures.architecture_problems(_entries("llama-3.2-1b", "AcmeForCausalLM", retired),
                                                              "0.33.0")  # fmt: skip
        assert problem.message.startswith(f"{retired} was supported by earlier vLLM releases")


@settings(max_examples=30, deadline=None)
@given(first=st.sampled_from(["AcmeForCausalLM", "AcmeModel", "LlamaForCausalLM", "Qwen3ForCausalLM"]),
       second=st.sampled_from(["LlamaForCausalLM", "AcmeForCausalLM", "BertModel", "DeepseekV4ForCausalLM"]),
       release=st.sampled_from(["0.19.1", "0.25.1", "0.33.0"]))  # fmt: skip
def test_the_resolved_entry_is_an_entry_the_registry_serves(first, second, release):
    model = _entries("llama-3.2-1b", first, second).model
    found = vllm_architectures.resolution(model, release)
    if found.entry is not None:
        assert found.entry in (first, second) and found.served_as in vllm_architectures.served(release)
        earlier = (first, second)[: (first, second).index(found.entry)]
        assert not any(vllm_architectures._served_as(a, release, found.runner, found.convert) for a in earlier)
    else:
        assert [p.id for p in vllm_architectures.architecture_problems(Scenario(load_profile("h100-sxm-8"), model,
                                                                                Intent(engine="vllm")), release)] == [
            ARCHITECTURE_NOT_NAMED]  # fmt: skip


def test_a_registry_class_that_neither_generates_nor_pools_takes_its_suffix_runner():
    # Gemma3TextModel runs Gemma3Model (no compute_logits, not a pooling class): "Model" makes it an embedder, which
    # pools the last token; ModernBertModel's class declares CLS pooling, which rules out chunked prefill
    gemma = _entries("vllm-Gemma3TextModel", "Gemma3TextModel").model
    found = vllm_architectures.resolution(gemma, "0.33.0")
    assert (found.runner, found.convert) == ("pooling", "embed")
    assert vllm_runner.is_pooling(gemma, "0.33.0") and not vllm_runner.pooling_unchunked(gemma, "0.33.0")
    bert = _entries("vllm-ModernBertModel", "ModernBertModel").model
    assert vllm_runner.pooling_unchunked(bert, "0.33.0")
    llama = _entries("llama-3.2-1b", "LlamaModel").model  # LlamaForCausalLM generates: the generate runner
    assert vllm_architectures.resolution(llama, "0.33.0").runner == "generate"


def test_an_mla_head_the_common_backends_refuse_gets_triton():
    # LongCat-Flash-Ngram: kv_lora_rank 512 + qk_rope_head_dim 128 = 640, outside MLACommonBackend's sizes
    for profile in ("h100-sxm-8", "b200-8"):
        ngram = _scenario("named-LongcatFlashNgramForCausalLM", profile)
        assert attention_decision(ngram, "0.33.0").value == "TRITON_MLA"
    assert attention_decision(_scenario("named-LongcatFlashForCausalLM"), "0.33.0").value == "FLASH_ATTN_MLA"  # 576
    head_320 = _scenario("deepseek-v3", qk_rope_head_dim=64, kv_lora_rank=256)
    assert attention_decision(head_320, "0.17.1").value is None  # [576] up to v0.17.x, Triton MLA too: no backend
    assert attention_decision(head_320, "0.19.1").value == "FLASH_ATTN_MLA"  # 320 from v0.19.1
