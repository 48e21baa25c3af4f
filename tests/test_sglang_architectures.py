"""The architectures each SGLang release names (conformance/sglang/architectures.py, advisor/rules/sglang/architectures.json)
and what the rules do with them: the renames SGLang makes, the info problem for a name no release step knows."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from advisor.models import ModelSpec  # noqa: E402
from advisor.plan import Intent  # noqa: E402
from advisor.probe.profiles import load_profile  # noqa: E402
from advisor.rules.engine import AUTO_ENABLED, Release, Scenario  # noqa: E402
from advisor.rules.releases import within  # noqa: E402
from advisor.rules.sglang import decide  # noqa: E402
from advisor.rules.sglang.architectures import (  # noqa: E402
    NOT_NAMED,
    architecture_problems,
    named,
    seen_architecture,
    uses_dsa,
)
from advisor.rules.sglang.attention import attention_decision  # noqa: E402
from advisor.rules.sglang.fusion import fusion_decision  # noqa: E402
from advisor.rules.sglang.releases import RELEASES, architectures, row_for  # noqa: E402
from conformance.sglang import architectures as extractor  # noqa: E402

STORED = json.loads((REPO / "advisor" / "rules" / "sglang" / "architectures.json").read_text())["releases"]

# A wheel small enough to read by eye: what the resolution reaches, and what it does not.
SOURCES = {
    "sglang/srt/server_args.py": """
from sglang.srt.utils import pick
from sglang.srt.configs import model_config as mc


class ServerArgs:
    LANGUAGE_ONLY = ("AlphaForCausalLM",)

    def _handle_model_specific_adjustments(self):
        if self.arch in ["BetaForConditionalGeneration", "Beta_Omni_V3"]:
            self.page_size = 64
        pick(self.arch)
        self._helper()
        mc.check()

    def _helper(self):
        return self.arch == "GammaForCausalLM" or "not an architecture"
""",
    "sglang/srt/utils/__init__.py": "from sglang.srt.utils.common import *\n",
    "sglang/srt/utils/common.py": """
DEFAULTS = {"DeltaForCausalLM"}
UNUSED = {"UnusedForCausalLM"}


def pick(arch):
    return arch in DEFAULTS
""",
    "sglang/srt/configs/__init__.py": "",
    "sglang/srt/configs/model_config.py": """
from .deep import level2


def check():
    level2()
""",
    "sglang/srt/configs/deep.py": """
def level2():
    return level3()


def level3():
    return "Level3ForCausalLM" if level4() else None


def level4():
    return "TooDeepForCausalLM"
""",
    "sglang/srt/models/foo.py": 'EntryClass = "ModelOnlyForCausalLM"\n',
}


def small_wheel() -> zipfile.ZipFile:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as zf:
        for path, text in SOURCES.items():
            zf.writestr(path, text)
    return zipfile.ZipFile(data)


def test_reads_what_the_resolution_reaches_and_nothing_else():
    names = extractor.read(small_wheel()).names
    assert names == {
        "AlphaForCausalLM": {"server_args.py:ServerArgs.LANGUAGE_ONLY"},
        "BetaForConditionalGeneration": {"server_args.py:ServerArgs._handle_model_specific_adjustments"},
        "Beta_Omni_V3": {"server_args.py:ServerArgs._handle_model_specific_adjustments"},  # listed beside one
        "GammaForCausalLM": {"server_args.py:ServerArgs._helper"},  # self._helper()
        "DeltaForCausalLM": {"utils/common.py:DEFAULTS"},  # through the star-import shim, then the constant it reads
        "Level3ForCausalLM": {"configs/deep.py:level3"},  # module.attr call, relative import: 3 calls deep
    }  # not: UnusedForCausalLM (never read), TooDeepForCausalLM (4 deep), ModelOnlyForCausalLM (not reached)


SHAPELESS = {
    "sglang/srt/server_args.py": """
from sglang.srt.registry import _register_for

_EMBEDDING_ARCHITECTURES = {"BertModel": 1, "Contriever": 2}
_OTHER_TABLE = {"NotAnArchModel": 1}


@_register_for("EmbeddingGemma2Model")
def _override(server_args):
    return {}


def resolve(architectures, model_arch, config):
    if "LlamaEmbeddingModel" in architectures or "Qwen3Model" in set(architectures):
        return 1
    if "Llama4" in model_arch:
        return 2
    if config.architectures[0] == "CappedModel":
        return 3
""",
    "sglang/srt/registry.py": "def _register_for(*names):\n    return lambda f: f\n",
}


def test_names_of_any_shape_count_where_the_code_says_they_are_architectures():
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as zf:
        for path, text in SHAPELESS.items():
            zf.writestr(path, text)
    names = extractor.read(zipfile.ZipFile(data)).names
    assert names["BertModel"] == names["Contriever"] == {"server_args.py:_EMBEDDING_ARCHITECTURES"}
    assert names["EmbeddingGemma2Model"] == {"server_args.py:_override"}  # the override registry's argument
    assert names["LlamaEmbeddingModel"] == {"server_args.py:resolve"}  # membership in the architectures list
    assert names["CappedModel"] == {"server_args.py:resolve"}  # equal to an entry of the architectures list
    # a constant not named for architectures, a call's result, and a substring of one name are not lists of names
    assert {"NotAnArchModel", "Qwen3Model", "Llama4"}.isdisjoint(names)


def test_changes_between_stored_releases():
    releases = {"0.5.1": {"A": [], "B": []}, "0.5.2": {"B": [], "C": []}}
    assert extractor.changes(releases, "0.5.2") == ("0.5.1", ["C"], ["A"])
    assert extractor.changes(releases, "0.5.1") == (None, [], [])


def test_command_line_usage(capsys):
    assert extractor.main(["--help"]) == 0
    assert extractor.main([]) == 2
    assert extractor.main(["latest"]) == 2
    assert "not a release" in capsys.readouterr().err


def test_every_modelled_release_is_stored():
    assert set(STORED) == set(RELEASES)
    assert "DeepseekV41ForCausalLM" in STORED["0.5.21"] and "DeepseekV41ForCausalLM" not in STORED["0.5.20"]


@pytest.mark.parametrize("release", [r for r in RELEASES if r in STORED])
def test_fusion_list_is_the_release_own(release):
    """From v0.5.15 the list is a constant of its own (arg_groups/overrides.py); the rules must hold exactly it, plus
    MiMo V2, which v0.5.23 checks in the auto-enable function itself."""
    holds = {
        n
        for n, places in STORED[release].items()
        if "arg_groups/overrides.py:_FLASHINFER_ALLREDUCE_FUSION_ARCHS" in places
    }
    if not holds:
        pytest.skip("before v0.5.15 the list is inline in ServerArgs._handle_model_specific_adjustments")
    auto = {
        n for n, p in STORED[release].items() if "arg_groups/overrides.py:_flashinfer_allreduce_fusion_auto_enable" in p
    }
    mimo = {n for n in auto if n.startswith("MiMoV2")}
    assert set(architectures(row_for(release)[0])) == holds | mimo


def test_every_name_in_the_rules_is_a_name_some_release_uses():
    everywhere = {name for names in STORED.values() for name in names}
    rules = extractor.rules_architectures()
    assert "DeepseekV3ForCausalLM" in rules and "GptOssForCausalLM" in rules
    assert rules <= everywhere, sorted(rules - everywhere)


def test_deepseek_v41_is_seen_as_v4_from_0_5_21():
    assert seen_architecture("DeepseekV41ForCausalLM", "0.5.20") == "DeepseekV41ForCausalLM"
    assert seen_architecture("DeepseekV41ForCausalLM", "0.5.21") == "DeepseekV4ForCausalLM"
    assert seen_architecture("DeepseekV41ForCausalLM", "0.5.23") == "DeepseekV4ForCausalLM"
    # v0.5.7-v0.5.11 load DeepSeek V3.2 as V3 (the configs grid's v0.5.11 golden), v0.5.12 has its own config class
    assert seen_architecture("DeepseekV32ForCausalLM", "0.5.11") == "DeepseekV3ForCausalLM"
    assert seen_architecture("DeepseekV32ForCausalLM", "0.5.12") == "DeepseekV32ForCausalLM"


def model(arch: str, **kw) -> ModelSpec:
    return ModelSpec(id=arch, architecture=arch, hidden_size=kw.pop("hidden_size", 4096), **kw)


def scenario(profile: str, spec: ModelSpec, tp: int = 8) -> Scenario:
    return Scenario(load_profile(profile), spec, Intent(engine="sglang", tp=tp))


def test_deepseek_v41_takes_the_v4_fusion_list():
    v41 = model("DeepseekV41ForCausalLM", model_type="deepseek_v41", hidden_size=7168)
    d = fusion_decision(scenario("b200-8", v41), "0.5.23")
    assert d.state == AUTO_ENABLED
    assert any("for DeepseekV4ForCausalLM" in n for n in d.notes)
    assert "loaded as DeepseekV4ForCausalLM" in next(c for c in d.conditions if c.id == "architecture").observed


def test_deepseek_v41_takes_the_v4_page_size():
    v41 = model("DeepseekV41ForCausalLM", model_type="deepseek_v41", hidden_size=7168, kv_lora_rank=512)
    v4 = model("DeepseekV4ForCausalLM", model_type="deepseek_v4", hidden_size=7168, kv_lora_rank=512)
    page = attention_decision(scenario("b200-8", v41), "0.5.23").settings
    assert page == attention_decision(scenario("b200-8", v4), "0.5.23").settings
    assert any(s.value == 256 for s in page)


@pytest.mark.parametrize(("release", "backend"), [("0.5.7", "flashinfer"), ("0.5.8", "fa3"), ("0.5.23", "fa3")])
def test_a_standard_model_no_release_names_gets_fa3_on_hopper_from_0_5_8(release, backend):
    """v0.5.7 gives FA3 on Hopper only to is_fa3_default_architecture's list; from v0.5.8 every standard model gets it."""
    assert attention_decision(scenario("h100-sxm-8", model("FooBarForCausalLM")), release).value == backend


def test_an_architecture_no_release_names_is_said_once_with_default_rules():
    s = scenario("h100-sxm-8", model("FooBarForCausalLM"))
    problems = architecture_problems(s, "0.5.23")
    assert [(p.id, p.severity) for p in problems] == [(NOT_NAMED, "info")]
    assert "not named by sglang 0.5.23: default rules" in problems[0].message
    decisions, all_problems = decide(s, Release("0.5.23", "0.5.23"))
    assert [p.id for p in all_problems].count(NOT_NAMED) == 1
    assert all(f"see problem {NOT_NAMED}" in " ".join(d.notes) for d in decisions)


@pytest.mark.parametrize("arch", ["DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV41ForCausalLM"])
def test_a_named_architecture_has_no_such_problem(arch):
    assert named("0.5.23") is not None
    assert architecture_problems(scenario("h100-sxm-8", model(arch)), "0.5.23") == []


def mla(arch: str, **kw) -> ModelSpec:
    return model(arch, kv_lora_rank=512, qk_rope_head_dim=64, hidden_size=7168, **kw)


@pytest.mark.parametrize(
    ("spec", "release", "dsa"),
    [
        (mla("DeepseekV3ForCausalLM", index_topk=2048), "0.5.23", True),  # the name V3, an indexer in the config
        (mla("DeepseekV32ForCausalLM"), "0.5.23", False),  # no index_topk: plain MLA
        (mla("DeepseekV32ForCausalLM", index_topk=2048), "0.5.9", True),  # loaded as V3, which is on the list
        (mla("GlmMoeDsaForCausalLM", index_topk=2048), "0.5.8", False),  # on the list from v0.5.9
        (mla("GlmMoeDsaForCausalLM", index_topk=2048), "0.5.9", True),
        (mla("HYV4ForCausalLM", index_topk=2048), "0.5.19", False),  # on the list from v0.5.20
        (mla("HYV4ForCausalLM", index_topk=2048), "0.5.20", True),
        (mla("FooBarForCausalLM", index_topk=2048), "0.5.23", False),  # an indexer, but no release step knows the name
    ],
)
def test_deepseek_sparse_attention_follows_the_config_and_the_release_list(spec, release, dsa):
    assert uses_dsa(spec, release) is dsa
    backend = attention_decision(scenario("h100-sxm-8", spec), release).value
    assert (backend in ("nsa", "dsa")) is dsa
    if not dsa:
        assert backend == "fa3"  # MLA on Hopper


def moe(arch: str) -> ModelSpec:
    return model(arch, num_experts=256, experts_per_token=8, quantization="fp8", hidden_size=7168)


@pytest.mark.parametrize(
    ("arch", "first", "last"),
    [
        ("PixtralForConditionalGeneration", "0.5.15", None),
        # v0.5.17's overrides.py already has 'not model_arch.startswith("LongcatFlash")' (the named grid's v0.5.18
        # golden: auto)
        ("LongcatFlashForCausalLM", "0.5.16", "0.5.16"),
        ("Dots3NoteForCausalLM", "0.5.19", None),
        ("Glm5NextForConditionalGeneration", "0.5.20", None),
        ("HYV4ForCausalLM", "0.5.20", None),
    ],
)
def test_the_release_deepseek_family_gets_flashinfer_trtllm_on_sm100(arch, first, last):
    """arg_groups/overrides.py _DEEPSEEK_FAMILY_ARCHS, as architectures.json holds it, read by
    _deepseek_moe_quant_resolution (LongCat-Flash is excluded by name from v0.5.17); before v0.5.15 the names the inline
    DeepSeek branch lists (Pixtral from v0.5.7; model_overrides.DEEPSEEK_BRANCH)."""
    from advisor.rules.sglang.model_overrides import deepseek_branch
    from advisor.rules.sglang.moe_runner import moe_runner_decision

    family = "arg_groups/overrides.py:_DEEPSEEK_FAMILY_ARCHS"
    for release in RELEASES:
        in_family = arch in STORED[release] and family in STORED[release][arch]
        expected = (in_family and within(release, first, last)) or arch in (deepseek_branch(release) or ())
        value = moe_runner_decision(scenario("b200-8", moe(arch)), release).value
        assert (value == "flashinfer_trtllm") is expected, (release, value)


@pytest.mark.parametrize(
    ("arch", "profile", "release", "backend"),
    [
        ("GraniteSWAForCausalLM", "a100-sxm-8", "0.5.18", "flashinfer"),  # not on the sink list yet
        ("GraniteSWAForCausalLM", "a100-sxm-8", "0.5.19", "triton"),  # SWA_SINK_ARCHS: FlashInfer has no sinks
        ("GraniteMoeSWAForCausalLM", "l40s-4", "0.5.23", "triton"),
        ("GraniteSWAForCausalLM", "h100-sxm-8", "0.5.23", "fa3"),  # Hopper and SM10x are not affected
        ("GraniteSWAForCausalLM", "b200-8", "0.5.23", "trtllm_mha"),
        ("IQuestQ1ForCausalLM", "a100-sxm-8", "0.5.21", "fa3"),  # its own step sets fa3 on every GPU
        ("IQuestQ1ForCausalLM", "b200-8", "0.5.23", "fa3"),
    ],
)
def test_attention_sinks_the_release_names_keep_flashinfer_away(arch, profile, release, backend):
    tp = 4 if profile == "l40s-4" else 8
    assert attention_decision(scenario(profile, model(arch), tp=tp), release).value == backend


def test_the_extractor_reads_a_registration_call_and_a_list_with_a_spread():
    """A name beside an architecture counts in a call's arguments (_register_for("IQuestQ1ForCausalLM", "IQuestQ1MTP"))
    and in a list that also spreads another one ([*MIMO_ARCHS, "POINTSV15ChatModel", "Phi4MMForCausalLM"])."""
    import ast

    call = ast.parse('_register_for("IQuestQ1ForCausalLM", "IQuestQ1MTP")')
    spread = ast.parse('archs = [*OTHER, "POINTSV15ChatModel", "Phi4MMForCausalLM"]')
    unrelated = ast.parse('getattr(config, "model_type", "Qwen2Model")')
    assert extractor._architecture_names(call) == {"IQuestQ1ForCausalLM", "IQuestQ1MTP"}
    assert extractor._architecture_names(spread) == {"POINTSV15ChatModel", "Phi4MMForCausalLM"}
    assert extractor._architecture_names(unrelated) == set()


@pytest.mark.parametrize("arch, release, seen", [
    ("DeepseekV41ForCausalLM", "0.5.23", "DeepseekV4ForCausalLM"),
    ("Olmo3ForCausalLM", "0.5.7", "Olmo2ForCausalLM"),
    ("LongcatFlashNgramForCausalLM", "0.5.10", "LongcatFlashForCausalLM"),
    ("LongcatFlashNgramForCausalLM", "0.5.9", "LongcatFlashNgramForCausalLM"),
])  # fmt: skip
def test_the_renames_sglang_makes_while_loading_the_config(arch, release, seen):
    from advisor.rules.sglang.architectures import seen_architecture

    assert seen_architecture(arch, release) == seen


def test_deepseek_v4_and_its_drafts_are_read_from_the_release_list():
    from advisor.rules.sglang.architectures import is_deepseek_v4

    def spec(arch):
        return ModelSpec(id=arch, architecture=arch, model_type="deepseek_v4")

    for arch in ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark",
                 "DeepseekV41ForCausalLM"):  # fmt: skip
        assert is_deepseek_v4(spec(arch), "0.5.23"), arch
    assert not is_deepseek_v4(spec("DeepseekV3ForCausalLM"), "0.5.23")
    assert not is_deepseek_v4(spec("DeepseekV4ForCausalLMNextN"), "0.5.11")  # before the release names it


def test_deepseek_vl2_is_loaded_under_its_own_name_whatever_config_json_says():
    """SGLang's DeepseekVL2Config sets architectures = ["DeepseekVL2ForCausalLM"] itself (configs/deepseekvl2.py, every
    modelled release): a renamed DeepSeek-VL2 is DeepSeek-VL2 to every list (MLA: triton on A100, not FlashInfer)."""
    from advisor.models import spec_from_config
    from advisor.rules.sglang.architectures import loaded_architecture

    config = {"architectures": ["FuzzA1B2C3ForCausalLM"], "model_type": "deepseek_vl_v2", "hidden_size": 1280,
              "num_attention_heads": 10, "num_hidden_layers": 12}  # fmt: skip
    model = spec_from_config(config, model_id="t", path=None, origin="directory", where="test")
    assert loaded_architecture(model, "0.5.23") == "DeepseekVL2ForCausalLM"
    assert loaded_architecture(model, "0.5.7") == "DeepseekVL2ForCausalLM"
    ocr = spec_from_config({**config, "architectures": ["DeepseekOCRForCausalLM"]}, model_id="t", path=None,
                           origin="directory", where="test")  # fmt: skip
    assert loaded_architecture(ocr, "0.5.23") != "DeepseekVL2ForCausalLM"


def test_dots_vlm_is_loaded_under_its_own_name_whatever_config_json_says():
    """DotsVLMConfig sets architectures = ["DotsVLMForCausalLM"] (configs/dots_vlm.py, every modelled release)."""
    from advisor.models import spec_from_config
    from advisor.rules.sglang.architectures import loaded_architecture

    config = {"architectures": ["Fuzz0A1B2CForCausalLM"], "model_type": "dots_vlm", "hidden_size": 1536,
              "num_attention_heads": 12, "num_hidden_layers": 28}  # fmt: skip
    model = spec_from_config(config, model_id="t", path=None, origin="directory", where="test")
    assert loaded_architecture(model, "0.5.23") == "DotsVLMForCausalLM"
