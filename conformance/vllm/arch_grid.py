"""The architectures grid: every config.json under tests/conformance/configs/ (public checkpoints' configs, the
synthetic variants this module writes, transformers' default configs of the architectures SGLang names (named-*) and
of registry architectures SGLang does not name (vllm-*, this module writes them)) resolved by each release on one GPU
of each kind the rules tell apart at tp 1, and at tp 2 (H100) and tp 8 (B200) where the allreduce fusion, its size
table and custom allreduce depend on tp and GPU.

    python -m conformance.vllm 0.33.0 --grid architectures
    python -c "from conformance.vllm.arch_grid import write_vllm_configs; write_vllm_configs()"   # the vllm-* configs

A scenario names its model by the config directory (relative to the repository), so the conformance test rebuilds the
same plan from it (tests/conformance/test_vllm_architectures_conformance.py). The synthetic variants are what a model
the grid does not hold looks like to vLLM: an architecture name its registry does not list with MLA fields, with
sliding-window layer_types, with Mamba layers (vLLM refuses each: its registry decides which model class runs), and
names it lists with config properties the public checkpoints lack (sliding-window layers on Qwen3, smaller Mamba2 /
gated-delta-net states).
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.vllm.grid import gpu_of

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "conformance" / "configs"
# SM90, SM100 and SM80: the attention priority lists and the MLA block sizes differ by major capability.
PROFILES = ("h100-sxm-8", "b200-8", "a100-sxm-8")
# Draft models (EAGLE heads): vLLM loads them only as a speculative config's draft, never as the served model.
DRAFTS = ("eagle-llama-3.1-8b", "eagle3-llama-3.1-8b")
SYNTHETIC_PREFIX = "synthetic-"
VLLM_PREFIX = "vllm-"
# Beyond tp 1: (profile, tp) per config. tp 2 on SM90 and tp 8 on SM100: the allreduce+RMSNorm fusion's size table and
# custom allreduce depend on the GPU and the world size; the architecture enters only through whether the model is
# compiled, so one multi-GPU layout per GPU kind covers it. A tp that does not split the attention heads is replaced
# by the largest of MULTI_TPS that does (vLLM refuses the other at start-up, which proves no decision).
MULTI_GPU = (("h100-sxm-8", 2), ("b200-8", 8))
MULTI_TPS = (8, 4, 2)


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name / "config.json").read_text())


def synthetic_configs() -> dict[str, dict]:
    """Directory name -> config.json of each synthetic variant, built from the public configs."""
    unknown_mla = {**_config("deepseek-v3"), "architectures": ["AcmeMlaForCausalLM"]}
    layers = _config("qwen3-32b")["num_hidden_layers"]
    windows = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    qwen3_swa = {**_config("qwen3-32b"), "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 0,
                 "layer_types": windows}  # fmt: skip
    unknown_swa = {**qwen3_swa, "architectures": ["AcmeSwaForCausalLM"]}
    unknown_mamba = {**_config("nemotron-h-56b"), "architectures": ["AcmeHybridForCausalLM"]}
    # Names vLLM serves, with config properties no public checkpoint here has: the rules must follow the config. (A key
    # left out is no variant: transformers' config class fills its default, e.g. GLM-5's index_topk, DeepSeek V3's
    # kv_lora_rank, and vLLM reads the filled value.)
    nemotron_small = {**_config("nemotron-h-56b"), "mamba_num_heads": 128, "ssm_state_size": 128,
                      "mamba_ssm_cache_dtype": "float16"}  # fmt: skip
    qwen3_next_small = {**_config("qwen3-next-80b-a3b"), "linear_num_value_heads": 16, "linear_value_head_dim": 64}
    # Several architectures entries. vLLM runs the first its registry serves (_ModelRegistry.inspect_model_cls tries each
    # in turn), takes the runner from the first it serves or whose suffix it knows (ModelConfig._get_default_runner_type)
    # and, from v0.25.1, breaks CUDA graphs when any entry is on its breakable list (VllmConfig).
    first_unknown = {**_config("nemotron-h-56b"), "architectures": ["AcmeHybridForCausalLM", "NemotronHForCausalLM"]}
    second_breakable = {**_config("qwen3-32b"), "architectures": ["Qwen3ForCausalLM", "DeepseekV4ForCausalLM"]}
    first_pooling_suffix = {**_config("llama-3.2-1b"), "architectures": ["AcmeModel", "LlamaForCausalLM"]}
    return {f"{SYNTHETIC_PREFIX}{name}": config for name, config in (
        ("unknown-mla", unknown_mla), ("unknown-swa", unknown_swa), ("unknown-mamba", unknown_mamba),
        ("qwen3-swa", qwen3_swa), ("nemotron-h-small-state", nemotron_small),
        ("qwen3-next-small-state", qwen3_next_small), ("two-archs-first-unknown", first_unknown),
        ("two-archs-second-breakable", second_breakable),
        ("two-archs-first-pooling-suffix", first_pooling_suffix))}  # fmt: skip


def write_synthetic() -> None:
    """(Re)write the synthetic variants' config.json files (committed: CI reads them without this module)."""
    for name, config in synthetic_configs().items():
        path = CONFIGS / name / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=1) + "\n")


def config_dirs() -> list[str]:
    """Every config directory of the grid, relative to the repository."""
    names = sorted(p.parent.name for p in CONFIGS.glob("*/config.json") if p.parent.name not in DRAFTS)
    return [str((CONFIGS / name).relative_to(REPO)) for name in names]


HEAD_KEYS = ("num_attention_heads", "n_head", "encoder_attention_heads")  # GPT-2's and Whisper's spellings too


def _heads(config: dict) -> int | None:
    """The attention head count vLLM checks tp against: the language model's (text_config, an omni model's
    thinker_config.text_config, a retrieval model's vlm_config.text_config, ...), else the top level's."""
    wrappers = [config.get(k) for k in ("thinker_config", "vlm_config")]
    parts = [config.get("text_config"), *(w.get("text_config") for w in wrappers if isinstance(w, dict)),
             config.get("llm_config"), config.get("language_config"), config]  # fmt: skip
    for part in parts:
        for key in HEAD_KEYS:
            if isinstance(part, dict) and isinstance(part.get(key), int):
                return part[key]
    return None


def multi_gpu_tp(model: str, tp: int) -> int:
    """``tp``, or the largest of MULTI_TPS up to it that splits the config's attention heads (``tp`` when none does)."""
    heads = _heads(json.loads((REPO / model / "config.json").read_text()))
    if not heads or heads % tp == 0:
        return tp
    return next((t for t in MULTI_TPS if t <= tp and heads % t == 0), tp)


def scenarios() -> list[dict]:
    """Each config at tp 1 on every profile, then at MULTI_GPU's layouts (read from the configs at run time)."""
    out = []

    def add(profile: str, model: str, tp: int) -> None:
        out.append({"id": f"{profile}|{model}|tp{tp}|", "profile": profile, "model": model, "tp": tp, "overrides": []})

    for profile in PROFILES:
        for model in config_dirs():
            add(profile, model, 1)
    for profile, tp in MULTI_GPU:
        for model in config_dirs():
            add(profile, model, multi_gpu_tp(model, tp))
    return out


def resolver_input(root: Path, items: list[dict]) -> list[dict]:
    """Each scenario as the resolver takes it: the faked GPU and the ``vllm serve`` argv on the config directory, its
    overrides last (the grid passes none; a scenario made by hand keeps its flags)."""
    return [{"id": s["id"], "gpu": gpu_of(s["profile"]),
             "argv": ["--model", str(REPO / s["model"]), "--tensor-parallel-size", str(s["tp"]),
                      "--skip-tokenizer-init", *s.get("overrides", ())]}
            for s in items]  # fmt: skip


# -- vllm-<Arch>: registry architectures no other config of the grid has -----------------------------------------------
# The registry's tables whose models differ to the modelled decisions: multimodal models (their text config decides),
# pooling models (runner "pooling": chunked prefill and prefix caching follow the pooler).
MULTIMODAL_TABLE = "model_executor/models/registry.py:_MULTIMODAL_MODELS"
POOLING_TABLES = tuple(f"model_executor/models/registry.py:{t}" for t in (
    "_EMBEDDING_MODELS", "_SEQUENCE_CLASSIFICATION_MODELS", "_TOKEN_CLASSIFICATION_MODELS", "_REWARD_MODELS",
    "_LATE_INTERACTION_MODELS"))  # fmt: skip
# The release whose registry the stored vllm-* configs follow (the newest read into architectures.json).
VLLM_CONFIGS_RELEASE = "0.33.0"
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def _parts(config: dict) -> list[dict]:
    return [config, *(v for v in config.values() if isinstance(v, dict))]


def decision_kinds(arch: str, config: dict, version: str) -> list[str]:
    """What in a config the modelled decisions read: MLA, sliding window, hybrid / attention-free layers, experts,
    multimodal, pooling (empty: a plain decoder, which the grid's other configs already cover)."""
    from advisor.rules.vllm import architectures as registry

    places = (registry.named(version) or {}).get(arch, [])
    parts = _parts(config)
    kinds = {
        "mla": any(p.get("kv_lora_rank") for p in parts),
        "sliding_window": any(p.get("sliding_window") or "sliding_attention" in (p.get("layer_types") or [])
                              for p in parts),
        "hybrid": arch in registry._kinds(version, "hybrid") or arch in registry._kinds(version, "attention_free"),
        "moe": any(isinstance(p.get(k), int) and p[k] > 1 for p in parts for k in EXPERT_KEYS),
        "multimodal": MULTIMODAL_TABLE in places,
        "pooling": any(t in places for t in POOLING_TABLES),
    }  # fmt: skip
    return [k for k, v in kinds.items() if v]


def vllm_configs(version: str) -> dict[str, dict]:
    """Directory name -> transformers' default config of each architecture the release's registry serves that no other
    config of the grid has (the named-* configs cover what SGLang names and its named grid writes) and whose config shows
    something the decisions read (decision_kinds). A name that gains a named-* config (as BertModel, MistralModel and
    XLMRobertaModel did) leaves the vllm-* configs."""
    from advisor.rules.vllm import architectures as registry
    from conformance.sglang.config_grid import transformers_default_config, transformers_model_types

    covered = {(json.loads(p.read_text()).get("architectures") or [None])[0]
               for p in CONFIGS.glob("*/config.json") if not p.parent.name.startswith(VLLM_PREFIX)}  # fmt: skip
    types = transformers_model_types()
    out = {}
    for arch in sorted(registry.served(version) - covered):
        config = transformers_default_config(arch, types)
        if config is not None and decision_kinds(arch, config, version):
            out[VLLM_PREFIX + arch] = config
    return out


def vllm_config_text(config: dict) -> str:
    """A vllm-* config.json as the writer stores it."""
    return json.dumps(config, indent=1, sort_keys=True, default=str) + "\n"


def write_vllm_configs(version: str = VLLM_CONFIGS_RELEASE) -> list[Path]:
    """(Re)write the vllm-* configs (committed: the grid and CI read them without transformers' help), and remove the
    vllm-* directories the recipe no longer makes (a name another config now covers, or the registry no longer serves:
    the Omni thinker class names, which v0.12.0-v0.33.0 run only under Qwen2_5OmniModel / Qwen2_5OmniForConditionalGeneration
    / Qwen3OmniMoeForConditionalGeneration, all covered by named-* configs)."""
    wanted = vllm_configs(version)
    for stale in sorted(CONFIGS.glob(f"{VLLM_PREFIX}*/config.json")):
        if stale.parent.name not in wanted:
            stale.unlink()
            if not any(stale.parent.iterdir()):
                stale.parent.rmdir()
    out = []
    for name, config in wanted.items():
        path = CONFIGS / name / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(vllm_config_text(config))
        out.append(path)
    return out
