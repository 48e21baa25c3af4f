"""The vLLM rules against vLLM itself: every field of every golden (tests/conformance/golden/vllm-X.jsonl, written by
``python -m conformance.vllm X`` from vLLM's own engine-config resolution) compared with the plan for the same scenario.

Disagreements that remain are listed exactly in KNOWN (asserted equal, so a regression and a silent fix both fail).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, FORCED_OFF
from advisor.rules.releases import parse_release
from advisor.rules.vllm import architectures as vllm_architectures
from advisor.rules.vllm import common as vllm_common
from advisor.rules.vllm import compilation as vllm_compilation
from advisor.rules.vllm import fusion as vllm_fusion
from advisor.rules.vllm.config_validation import CONFIG_REFUSED
from advisor.rules.vllm.text_config import (
    MODEL_TYPE_UNKNOWN,
    READ_ONLY_KEY,
    REMOTE_CODE_REQUIRED,
    ROPE_NESTED_REFUSED,
    TEXT_CONFIG_DICT,
)

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDENS = sorted(GOLDEN_DIR.glob("vllm-[0-9]*.jsonl"))  # vllm-memory-X.jsonl: test_vllm_memory_conformance.py
# The architectures grid (python -m conformance.vllm X --grid architectures): each config under tests/conformance/configs.
ARCH_GOLDENS = sorted(GOLDEN_DIR.glob("vllm-architectures-*.jsonl"))
# What vLLM says when its registry serves no architecture of the config (_raise_for_unsupported).
REFUSED = "are not supported for now"
# What vLLM says when tp does not split the attention heads (ModelConfig.verify_with_parallel_config); the plan's
# tp_not_divisible error says the same.
NOT_DIVISIBLE = "must be divisible by tensor parallel size"
# What transformers' AutoConfig says (through vLLM's get_config) when no config class is found for the model_type: the
# checkpoint's own one needs --trust-remote-code, or none exists; the plan's vllm_remote_code_required /
# vllm_model_type_unknown say the same.
NO_CONFIG_CLASS = ("contains custom code which must be executed", "does not recognize this architecture")
# The plan's refusals of a config.json at load (get_config): a golden error where the plan says one of them is
# predicted, and a scenario vLLM resolved must have none.
LOADING_REFUSALS = (MODEL_TYPE_UNKNOWN, REMOTE_CODE_REQUIRED, CONFIG_REFUSED, READ_ONLY_KEY, TEXT_CONFIG_DICT,
                    ROPE_NESTED_REFUSED)  # fmt: skip
MiB = 2**20

# (release, scenario, field): what the plan says differs from vLLM, with the reason. None today: every field of every
# golden agrees (the MLA backends too, since the harness makes GPU tensors on the meta device).
KNOWN: set[tuple[str, str, str]] = set()
# The architectures grid: what differs from vLLM there, with the reason, as (config directory, profile or None, tp or
# None, field, first release, last release or None) -> reason; every scenario of a golden that matches is expected to
# differ in that field (so a regression and a silent fix both fail).
_ARCHITECTURES_DROPPED = (
    "the config is laid out as transformers 5 writes it (a text_config); transformers 4.57.6's Qwen2VLConfig /"
    " Qwen2_5_VLConfig then lose its architectures, and vLLM takes transformers' base model name for the model_type"
    " (Qwen2VLModel, a pooling model: get_config's 'Architecture mapping for models without explicit architectures"
    " field'), where the plan reads the architectures as written"
)
# (config directory, first release, last release) -> why vLLM serves a config the plan refuses as not named, or the
# other way round
KNOWN_ARCH_REFUSALS: dict[tuple[str, str, str], str] = {
    ("named-Sarashina2VisionForCausalLM", "0.12.0", "0.17.1"): _ARCHITECTURES_DROPPED,
}
KNOWN_ARCH_CASES: dict[tuple[str, str | None, int | None, str, str, str | None], str] = {
    **{(name, None, None, field, "0.12.0", "0.17.1"): _ARCHITECTURES_DROPPED
       for name in ("named-Qwen2VLForConditionalGeneration", "named-Qwen2_5_VLForConditionalGeneration",
                    "named-Sarashina2VisionForCausalLM")
       for field in ("architecture", "cudagraph_mode")},
    ("deepseek-v3.2", "b200-8", 8, "attention_backend", "0.33.0", None):
        "the harness lacks quack-kernels (a CUDA-only dependency of the wheel, quack-kernels==0.6.5), so the FA4 sparse "
        "MLA backend fails to import and vLLM takes FlashInfer's; a real install has it, as the plan says",
    ("named-DeepseekV32ForCausalLM", "b200-8", 8, "attention_backend", "0.33.0", None): "as deepseek-v3.2 (quack-kernels)",
    ("named-HYV4ForCausalLM", "b200-8", 8, "attention_backend", "0.33.0", None): "as deepseek-v3.2 (quack-kernels)",
}  # fmt: skip


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@cache
def _facts(profile: str):
    # The harness fakes flashinfer as importable (vLLM's wheels depend on flashinfer-python): so does the plan.
    return load_profile(profile)


def plan_for(version: str, scenario: dict):
    intent = Intent(model=scenario["model"], tp=scenario["tp"], engine="vllm", engine_version=version,
                    overrides=tuple(scenario["overrides"]))  # fmt: skip
    model = scenario["model"]  # a catalog id, or a config directory relative to the repository
    return build_plan(_facts(scenario["profile"]), resolve_model(str(REPO / model) if model.startswith("tests/") else model),
                      intent)  # fmt: skip


def compare(record: dict) -> dict[str, tuple[object, object]]:
    """field -> (golden, plan) for every field that differs."""
    version, scenario = record["vllm"], record["scenario"]
    plan = plan_for(version, scenario)
    compilation = plan.decision("compilation").value
    memory = plan.decision("memory_defaults").value
    fusion = plan.decision("flashinfer_allreduce_fusion")
    expected = {
        "optimization_level": compilation["optimization_level"],
        "compilation_mode": compilation["compilation_mode"],
        "cudagraph_mode": compilation["cudagraph_mode"],
        # the pass runs when the config enables it and the model is compiled
        "fusion_runs": fusion.enabled,
        "disable_custom_all_reduce": plan.decision("custom_allreduce").state == FORCED_OFF,
        "attention_backend": plan.decision("attention_backend").value,
        "enable_chunked_prefill": plan.decision("chunked_prefill").enabled,
        "enable_prefix_caching": plan.decision("prefix_caching").enabled,
        "async_scheduling": plan.decision("async_scheduling").enabled,
        **{key: memory[key] for key in ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
                                        "kv_cache_dtype", "block_size", "max_model_len")},
    }  # fmt: skip
    if "architecture" in record:  # the architectures grid records ModelConfig.architecture: the entry vLLM runs
        expected["architecture"] = vllm_architectures.vllm_architecture(plan.model, version)
    golden = {key: record.get(key) for key in expected if key != "fusion_runs"}
    if str(golden.get("architecture")).startswith("Transformers"):  # its Transformers backend: the plan names none
        golden["architecture"] = None
    if str(golden["attention_backend"]).startswith("error:"):  # no backend fits: vLLM fails, the plan picks none
        golden["attention_backend"] = None
    golden["fusion_runs"] = bool(record["fuse_allreduce_rms"]) and record["compilation_mode"] == vllm_compilation.VLLM_COMPILE
    if record.get("fi_allreduce_fusion_max_bytes") is not None or record["fuse_allreduce_rms"]:
        gpu = _facts(scenario["profile"]).engine_gpus[0]
        size = vllm_fusion.max_size_mb(gpu.capability, scenario["tp"], version)
        expected["fi_allreduce_fusion_max_bytes"] = int(size * MiB) if size is not None else None
        golden["fi_allreduce_fusion_max_bytes"] = record.get("fi_allreduce_fusion_max_bytes")
    return {k: (golden[k], expected[k]) for k in expected if golden[k] != expected[k]}


def scenario_key(record: dict) -> str:
    s = record["scenario"]
    return f"{s['profile']}|{s['model']}|tp{s['tp']}|{' '.join(s['overrides'])}"


def test_goldens_cover_six_releases():
    releases = [p.stem.removeprefix("vllm-") for p in GOLDENS]
    assert set(vllm_common.VERIFIED) <= set(releases), f"missing goldens: {sorted(set(vllm_common.VERIFIED) - set(releases))}"


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_every_field_agrees(path: Path):
    records = _records(path)
    assert records, f"{path} is empty"
    resolved = [r for r in records if "error" not in r]
    assert resolved, f"{path}: vLLM resolved no scenario"
    diffs = {scenario_key(r): compare(r) for r in resolved}
    version = records[0]["vllm"]
    found = {(version, key, field) for key, diff in diffs.items() for field in diff}
    known = {k for k in KNOWN if k[0] == version}
    shown = {key: {f: list(v) for f, v in diff.items()} for key, diff in diffs.items() if diff}
    assert found == known, json.dumps(shown, indent=1, default=str)[:8000]


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_vllm_resolved_every_scenario(path: Path):
    """A scenario vLLM could not resolve in the harness proves none of its fields (v0.12.0 and v0.15.1 once refused tp 8
    for the build machine's small host memory)."""
    errors = [f"{scenario_key(r)}: {r['error']}" for r in _records(path) if "error" in r]
    assert errors == []


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_every_flag_the_grid_passes_parses(path: Path):
    """The harness passes the argv through vLLM's own parser: a rejected flag is a golden error line."""
    rejected = [r for r in _records(path) if str(r.get("error", "")).startswith("argv rejected")]
    assert rejected == []


# Config directory -> why vLLM's resolution ends in an error there (at every layout of every release the grid ran it
# with): errors of the harness (the resolution could not run here), and vLLM's own failures on transformers' default
# config of an architecture (attributes a released checkpoint's config carries), which the plan does not predict.
_INSPECTION = ("the registry inspects this model class in a fresh interpreter, which the harness's fakes do not reach "
               "(torchvision's operators are missing from the CPU torch)")  # fmt: skip
_PROCESSOR = "vLLM loads the model's processor at config time, whose files a config directory does not hold"
_DEFAULT_CONFIG = "vLLM fails on transformers' default config of this architecture (an attribute it reads is missing)"
# The named-* configs SGLang's grid wrote from SGLang's own config classes or public checkpoints (docs/architectures.md)
# that vLLM cannot read. A config whose model_type has no config class (auto_map's remote code without
# --trust-remote-code, or none at all) is not listed: the plan refuses it (NO_CONFIG_CLASS).
_CONFIG_CLASS = "the config's fields fail the validation of the config class vLLM builds it with"
_NO_TEXT_HEADS = "vLLM's text config of this config has no num_attention_heads (a draft / OCR model's own layout)"
_NAMED_ERRORS = {
    _CONFIG_CLASS: ("named-BailingMoELinearForCausalLM", "named-BailingMoeV2_5ForCausalLM", "named-BailingMoeV3ForCausalLM",
                    "named-DeepseekVL2ForCausalLM"),
    _DEFAULT_CONFIG + " (DeepseekV41Config: max_position_embeddings)": ("named-DeepseekV41ForCausalLM",),
    _NO_TEXT_HEADS: ("named-Dots3NoteForCausalLMNextN",),
    "transformers of v0.19.1's environment rejects the config's rope_parameters (no 'rope_type')":
        ("named-DeepseekV4ForCausalLMDSpark", "named-DeepseekV4ForCausalLMNextN"),
    "the model class expects transformers' EmbeddingGemma2Config; the config's model_type builds a Gemma one "
    "(v0.33.0, 'Invalid type of HuggingFace config')": ("named-EmbeddingGemma2Model",),
    _PROCESSOR: ("named-Gemma4AssistantForCausalLM", "named-GlmImageForConditionalGeneration"),
    _INSPECTION: ("named-LightOnOCRForConditionalGeneration", "named-MiDashengLMModel",
                  "named-PixtralForConditionalGeneration", "named-LongcatFlashNgramForCausalLM"),  # the last: v0.29.0
}  # fmt: skip
# The named-* configs the SGLang grid added, where the older releases' environments cannot read them (seen in the
# goldens of v0.15.1 and v0.17.1 on the 301-config grid).
_STRICT = ("the release's transformers rejects the config as the newer transformers that wrote it lays it out (a strict "
           "dataclass field, rope_parameters without rope_type, or a per-layer attribute vLLM reads as one value)")  # fmt: skip
KNOWN_ARCH_ERRORS: dict[str, str] = {
    "named-DiffusionGemmaForBlockDiffusion": "without triton the harness runs vLLM's V1 model runner, which refuses "
                                             "diffusion models (a GPU install runs Model Runner V2)",
    "vllm-FlintForCausalLM": "the model class imports triton, which the harness does not install",
    "named-LlavaForConditionalGeneration": _INSPECTION, "named-Mistral3ForConditionalGeneration": _INSPECTION,
    "named-VoxtralForConditionalGeneration": _INSPECTION, "vllm-Granite4VisionForConditionalGeneration": _INSPECTION,
    "vllm-LlavaNextForConditionalGeneration": _INSPECTION, "vllm-LlavaNextVideoForConditionalGeneration": _INSPECTION,
    "vllm-LlavaOnevisionForConditionalGeneration": _INSPECTION,
    "named-MllamaForConditionalGeneration": _PROCESSOR, "named-Gemma4UnifiedAssistantForCausalLM": _PROCESSOR,
    **dict.fromkeys(("named-Qwen3NextForCausalLM", "qwen3-next-80b-a3b", "synthetic-qwen3-next-small-state"),
                    "v0.14.1's Qwen3-Next class runs a Triton kernel (fla) at import, which needs libcuda: the harness "
                    "installs triton for the releases before v0.15 but has no driver"),
    "named-LongcatFlashForCausalLMNextN": "v0.12.0 under transformers 4.57.6 stops with a TypeError ('NoneType' object "
                                          "does not support item assignment) on this draft's config; not investigated",
    "vllm-DbrxForCausalLM": "transformers 4.57.6's DbrxConfig refuses the keys transformers 5 writes into attn_config / "
                            "ffn_config ('Found unknown kwargs'; v0.14.1)",
    "named-Glm5NextForConditionalGeneration": _PROCESSOR, "vllm-CohereCompassForConditionalGeneration": _PROCESSOR,
    "named-BeamForCausalLM": _DEFAULT_CONFIG, "vllm-Exaone4_5_ForConditionalGeneration": _INSPECTION,
    "named-KimiLinearForCausalLM": _DEFAULT_CONFIG + " (v0.19.1, v0.20.2)",
    "named-Lfm2ForCausalLM": _DEFAULT_CONFIG + " (v0.19.1, v0.20.2: conv_dim)",
    **dict.fromkeys(("named-Gemma4ForCausalLM", "named-Gemma4ForConditionalGeneration",
                     "named-Gemma4UnifiedForConditionalGeneration"),
                    _DEFAULT_CONFIG + " (v0.25.1, v0.27.1: its per-layer head_dim, read as one value)"),
    "named-MiniCPMV4_7ForConditionalGeneration": _PROCESSOR, "named-MuseGlimmerForConditionalGeneration": _PROCESSOR, "vllm-MiniCPMOcrForConditionalGeneration": _PROCESSOR,
    "vllm-ModernVBertModel": _PROCESSOR,
    "named-Dots3NoteForCausalLM": _DEFAULT_CONFIG, "vllm-CohereAsrForConditionalGeneration": _DEFAULT_CONFIG,
    "named-DeepseekV4ForCausalLM": _DEFAULT_CONFIG + " (up to v0.30.0: its layer types fail transformers' validation)",
    "named-MuseSparkForConditionalGeneration": _DEFAULT_CONFIG + "; v0.30.0 loads its processor first",
    "vllm-NomicBertModel": _DEFAULT_CONFIG + " (transformers' NomicBertConfig has no activation_function)",
    "named-XLMRobertaModel": _DEFAULT_CONFIG + " (transformers 5's XLMRobertaConfig has no position_embedding_type)",
    **{name: reason for reason, names in _NAMED_ERRORS.items() for name in names},
}  # fmt: skip
# What the older releases (v0.15.1, v0.17.1 on the 301-config grid) cannot read: a config that also fails in a newer
# release for another reason keeps both reasons.
_OLDER_RELEASE_ERRORS: dict[str, str] = {
    **dict.fromkeys(("named-BailingMoELinearForCausalLM", "named-BailingMoeV2_5ForCausalLM",
                     "named-BailingMoeV3ForCausalLM", "named-DeepseekV4ForCausalLMDSpark",
                     "named-DeepseekV4ForCausalLMNextN", "named-DeepseekVL2ForCausalLM",
                     "named-Dots3NoteForCausalLMNextN", "named-Gemma4AssistantForCausalLM"), _STRICT),
    "named-Mamba2ForCausalLM": _DEFAULT_CONFIG + " (v0.15.1, v0.17.1: num_attention_heads)",
    "named-Qwen3ASRForConditionalGeneration": "v0.15.1's config table names vllm/transformers_utils/configs/qwen3_asr.py, "
                                              "which its wheel does not ship; v0.17.1 reads a thinker_config the default "
                                              "config lacks",
    "named-WhisperForConditionalGeneration": _PROCESSOR + " (v0.12.0: its feature extractor)",
    **dict.fromkeys(("named-LightOnOCRForConditionalGeneration", "named-MiDashengLMModel",
                     "named-PixtralForConditionalGeneration"), _INSPECTION),
}  # fmt: skip
for _name, _reason in _OLDER_RELEASE_ERRORS.items():
    KNOWN_ARCH_ERRORS[_name] = (f"{KNOWN_ARCH_ERRORS[_name]}; older releases: {_reason}" if _name in KNOWN_ARCH_ERRORS
                                and KNOWN_ARCH_ERRORS[_name] != _reason else _reason)  # fmt: skip


def known_arch(records: list[dict]) -> set[tuple[str, str, str]]:
    """KNOWN_ARCH_CASES applied to a golden's scenarios."""
    out = set()
    for record in records:
        version, s = record["vllm"], record["scenario"]
        for (config, profile, tp, field, first, last), _ in KNOWN_ARCH_CASES.items():
            if (s["model"].rsplit("/", 1)[-1] == config and profile in (None, s["profile"]) and tp in (None, s["tp"])
                    and parse_release(first) <= parse_release(version)
                    and (last is None or parse_release(version) <= parse_release(last))):  # fmt: skip
                out.add((version, scenario_key(record), field))
    return out


def _refused(plan) -> bool:
    """Whether the plan says the release's registry does not serve the architecture (refused, or the Transformers
    backend)."""
    return any(p.id == ARCHITECTURE_NOT_NAMED for p in plan.problems)


def _no_config_class(error: str) -> bool:
    return any(text in error for text in NO_CONFIG_CLASS)


def _config_class_refused(plan) -> bool:
    return any(p.id in (MODEL_TYPE_UNKNOWN, REMOTE_CODE_REQUIRED) for p in plan.problems)


def _loading_refused(plan) -> bool:
    """The plan says vLLM stops while it loads config.json (its config class refuses it, or none exists)."""
    return any(p.id in LOADING_REFUSALS and p.severity == "error" for p in plan.problems)


def _not_in_registry(record: dict) -> bool:
    """vLLM refused the architecture, or ran it through its Transformers backend (TransformersForCausalLM, ...)."""
    return REFUSED in record.get("error", "") or str(record.get("architecture") or "").startswith("Transformers")


@pytest.mark.parametrize("path", ARCH_GOLDENS, ids=[p.stem for p in ARCH_GOLDENS])
def test_every_field_agrees_on_every_architecture(path: Path):
    """Every config of the architectures grid, public and synthetic: each field as vLLM resolves it, and a refusal
    where vLLM refuses the architecture (and only there)."""
    records = _records(path)
    assert records, f"{path} is empty"
    version = records[0]["vllm"]
    diffs, refusals, harness = {}, {}, {}
    for record in records:
        key = scenario_key(record)
        error = record.get("error")
        if error is None:
            diffs[key] = compare(record)
            plan = plan_for(version, record["scenario"])
            refusals[key] = (_not_in_registry(record), _refused(plan))
            if _loading_refused(plan):
                refusals[key + " (config class)"] = (False, True)
        elif REFUSED in error:
            refusals[key] = (True, _refused(plan_for(version, record["scenario"])))
        elif NOT_DIVISIBLE in error:
            plan = plan_for(version, record["scenario"])
            refusals[key] = (True, any(p.id == "tp_not_divisible" and p.severity == "error" for p in plan.problems))
        elif _no_config_class(error):
            refusals[key] = (True, _config_class_refused(plan_for(version, record["scenario"])))
        elif _loading_refused(plan := plan_for(version, record["scenario"])):
            refusals[key] = (True, True)  # a refusal of the config class that loads config.json, which the plan says
        else:
            harness[(version, key)] = error
    found = {(version, key, field) for key, diff in diffs.items() for field in diff}
    shown = {key: {f: list(v) for f, v in diff.items()} for key, diff in diffs.items() if diff}
    known = known_arch([r for r in records if "error" not in r])
    assert found == known, json.dumps({"unexpected": shown, "agree now": sorted(known - found)}, indent=1,
                                      default=str)[:8000]  # fmt: skip
    known_refusals = {key for key in refusals if any(
        key.split("|")[1].rsplit("/", 1)[-1] == config and parse_release(first) <= parse_release(version) <= parse_release(last)
        for config, first, last in KNOWN_ARCH_REFUSALS)}  # fmt: skip
    assert {k: v for k, v in refusals.items() if v[0] != v[1] and k not in known_refusals} == {}
    assert all(refusals[k][0] != refusals[k][1] for k in known_refusals), "a known refusal case agrees now"
    # every error left (neither a refusal the plan makes nor one it should) is a listed config's
    unlisted = {k: v for k, v in harness.items() if k[1].split("|")[1].rsplit("/", 1)[-1] not in KNOWN_ARCH_ERRORS}
    assert unlisted == {}, unlisted


def test_architectures_grid_holds_unknown_names():
    """The synthetic configs (unknown names with MLA, sliding-window and Mamba layers) are in every architectures
    golden, and the release refuses each: the unknown name, or first its model_type where the release's transformers
    has no class of it (v0.14.1's transformers 4.57.6 and nemotron_h)."""
    for path in ARCH_GOLDENS:
        records = {r["scenario"]["model"]: r for r in _records(path) if r["scenario"]["profile"] == "h100-sxm-8"}
        for kind in ("mla", "swa", "mamba"):
            record = records[f"tests/conformance/configs/synthetic-unknown-{kind}"]
            error = record.get("error", "")
            assert REFUSED in error or _no_config_class(error), (path.name, kind)
