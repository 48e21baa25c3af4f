"""``python -m conformance.vllm X.Y.Z --grid fuzz --count N --seed S``: differential fuzzing of the advisor's vLLM rules.

Each scenario takes one config of the architectures grid (tests/conformance/configs/: public checkpoints, synthetic
variants, transformers' default configs of named / registry architectures), changes one to three of the properties
vLLM's engine-config resolution branches on (the architecture: a name the registry does not serve, another served
name, several entries; sliding window and layer types; head widths; MLA ranks and the sparse-MLA index; expert counts;
the quantization method; dtype; context length and RoPE scaling; KV heads; hybrid / Mamba / linear-attention fields;
text_config nesting) and picks a GPU (H100, B200, A100) and tp (1, 2, 8). The release's create_engine_config resolves it
in its cached environment (conformance/vllm/resolve.py, as for ``--grid architectures``), the advisor plans it, and
the disagreements are printed by field and by the change that caused them. Deterministic from the seed (the config
files and the scenario ids are the same for the same count and seed; the registry's names come from
advisor/rules/vllm/architectures.json).

The release's results are kept in ~/.cache/tp-advisor/conformance/vllm-fuzz/ (a rerun with the same arguments re-plans
only the advisor's side; ``--rerun`` resolves again); the disagreeing ids go next to them. ``--write-golden IDS.json``
stores those scenarios (config embedded) as tests/conformance/golden/vllm-fuzz-X.jsonl, which
tests/conformance/test_vllm_fuzz_golden.py holds the advisor to without vLLM.
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from conformance.fuzz_common import EXPERT_KEYS, PUBLIC, SUB_CONFIG, int_of, p_dtype, p_hybrid, p_kv_heads, text_part
from conformance.vllm import env
from conformance.vllm.arch_grid import CONFIGS, DRAFTS
from conformance.vllm.grid import gpu_of

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "golden"
PROFILES = ("h100-sxm-8", "b200-8", "a100-sxm-8")
TPS = (1, 2, 8)


def bases(release: str) -> list[str]:
    """The public configs, then every other config directory of the architectures grid (drafts excluded) that the
    release resolves unchanged in its architectures golden (where one is stored): a config it already refuses (a
    model type transformers lacks, remote code, a processor) shows nothing about the perturbations."""
    golden = GOLDEN / f"vllm-architectures-{release}.jsonl"
    resolved = None
    if golden.exists():
        records = [json.loads(line) for line in golden.read_text().splitlines() if line.strip()]
        resolved = {r["scenario"]["model"].rsplit("/", 1)[-1] for r in records if "error" not in r}
    others = sorted(p.parent.name for p in CONFIGS.glob("*/config.json")
                    if p.parent.name not in DRAFTS and p.parent.name not in PUBLIC
                    and (resolved is None or p.parent.name in resolved))  # fmt: skip
    return [*PUBLIC, *others]


# -- the perturbations: each changes config in place and returns a tag "cause:detail" -----------------------------------
def p_arch(config: dict, rng: random.Random, served: list[str]) -> str:
    old = (config.get("architectures") or ["XForCausalLM"])[0]
    how = rng.choice(("unknown", "served", "unknown+old", "old+served"))
    unknown = f"Fuzz{rng.randrange(16**6):06X}ForCausalLM"
    other = rng.choice(served)
    config["architectures"] = {"unknown": [unknown], "served": [other], "unknown+old": [unknown, old],
                               "old+served": [old, other]}[how]  # fmt: skip
    return f"arch:{how}"


def p_swa(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    layers = int_of(text, "num_hidden_layers", 32)
    how = rng.choice(("window", "use_sliding_window", "layer_types", "interleaved", "none"))
    if how == "none":
        for key in ("sliding_window", "layer_types", "use_sliding_window", "sliding_window_pattern",
                    "interleaved_sliding_window"):  # fmt: skip
            text.pop(key, None)
        return "swa:removed"
    text["sliding_window"] = rng.choice((128, 4096))
    if how == "use_sliding_window":
        text["use_sliding_window"] = True
    elif how == "layer_types":
        text["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    elif how == "interleaved":
        text["interleaved_sliding_window"] = text.pop("sliding_window")
    return f"swa:{how}"


def p_head_dim(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    how = rng.choice(("head_dim", "v_head_dim", "both"))
    if how in ("head_dim", "both"):
        text["head_dim"] = rng.choice((64, 80, 128, 192, 256, 512))
    if how in ("v_head_dim", "both"):
        text["v_head_dim"] = rng.choice((64, 128))
    return f"head_dim:{how}"


def p_mla(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    how = rng.choice(("removed", "added", "ranks", "sparse"))
    if how == "removed" and "kv_lora_rank" in text:
        for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "index_topk"):
            text.pop(key, None)
        return "mla:removed"
    if how == "sparse":
        text["index_topk"] = rng.choice((512, 2048))
        text.setdefault("index_head_dim", 128)
        text.setdefault("index_n_heads", 64)
        return "mla:sparse"
    text["kv_lora_rank"] = rng.choice((256, 512))
    text["q_lora_rank"] = rng.choice((None, 1536))
    text["qk_rope_head_dim"] = 64
    text["qk_nope_head_dim"] = rng.choice((64, 128)) if how == "ranks" else 128
    text["v_head_dim"] = rng.choice((64, 128)) if how == "ranks" else 128
    return f"mla:{how}"


def p_experts(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    key = rng.choice(EXPERT_KEYS)
    count = rng.choice((0, 1, 8, 64, 256))
    for other in EXPERT_KEYS:
        text.pop(other, None)
    text[key] = count
    if count:
        text.setdefault("num_experts_per_tok", min(8, count))
        text.setdefault("moe_intermediate_size", 768)
    return f"experts:{key}={count}"


QUANT_CONFIGS: dict[str, dict] = {
    "fp8-block": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "fp8-tensor": {"quant_method": "fp8", "activation_scheme": "static"},
    "modelopt_fp4": {"quant_method": "modelopt_fp4", "quant_algo": "NVFP4", "group_size": 16},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    "modelopt-fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "modelopt-fp8-kv": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    "mxfp4": {"quant_method": "mxfp4"},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    "compressed-tensors": {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                                       "symmetric": True, "dynamic": False},
                    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True,
                                          "dynamic": True}}}, "ignore": ["lm_head"]},
    "compressed-tensors-kv": {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "tensor",
                                                       "symmetric": True, "dynamic": False}}},
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True, "dynamic": False}},
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                     "bnb_4bit_compute_dtype": "bfloat16"},
    "none": {},
}  # fmt: skip


def p_quant(config: dict, rng: random.Random) -> str:
    name = rng.choice(sorted(QUANT_CONFIGS))
    for target in (config, text_part(config)):
        target.pop("quantization_config", None)
    if name != "none":
        config["quantization_config"] = copy.deepcopy(QUANT_CONFIGS[name])
    return f"quant:{name}"


def p_context(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    text["max_position_embeddings"] = rng.choice((2048, 8192, 32768, 131072, 1048576))
    how = rng.choice(("plain", "yarn", "linear", "none"))
    if how == "yarn":
        text["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0,
                                "original_max_position_embeddings": text["max_position_embeddings"]}  # fmt: skip
    elif how == "linear":
        text["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
    elif how == "none":
        text.pop("rope_scaling", None)
    return f"context:{how}"


def p_nest(config: dict, rng: random.Random) -> str:
    if isinstance(config.get(SUB_CONFIG), dict):
        text = config.pop(SUB_CONFIG)
        for key, value in text.items():
            config.setdefault(key, value)
        return "nest:flattened"
    keep = {"architectures", "model_type", "auto_map", "quantization_config", "torch_dtype", "dtype",
            "transformers_version", "vision_config"}  # fmt: skip
    text = {k: config.pop(k) for k in list(config) if k not in keep}
    text["model_type"] = config.get("model_type")
    config[SUB_CONFIG] = text
    return "nest:text_config"


PERTURBATIONS = (p_arch, p_swa, p_head_dim, p_mla, p_experts, p_quant, p_dtype, p_context, p_kv_heads, p_hybrid, p_nest)


def scenarios(release: str, count: int, seed: int, root: Path) -> list[dict]:
    """``count`` scenarios from ``seed``, their configs written under ``root``/fuzz-NNNN/config.json."""
    from advisor.rules.vllm import architectures as registry

    served = sorted(registry.served(release))
    rng = random.Random(seed)
    names = bases(release)
    out = []
    for i in range(count):
        base = rng.choice(PUBLIC) if rng.random() < 0.4 else rng.choice(names)
        config = json.loads((CONFIGS / base / "config.json").read_text())
        picks = rng.sample(PERTURBATIONS, rng.choice((1, 1, 2, 2, 3)))
        tags = [p(config, rng, served) if p is p_arch else p(config, rng) for p in picks]  # p_arch draws a served name
        model = f"fuzz-{i:04d}"
        folder = root / model
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
        profile, tp = rng.choice(PROFILES), rng.choice(TPS)
        out.append({"id": f"{profile}|{model}|tp{tp}", "profile": profile, "model": model, "tp": tp,
                    "config_dir": str(folder), "base": base, "tags": tags})  # fmt: skip
    return out


def run_dir(release: str, count: int, seed: int) -> Path:
    return env.CACHE / "vllm-fuzz" / f"{release}-s{seed}-n{count}"


def release_results(release: str, count: int, seed: int, rerun: bool = False) -> list[dict]:
    """[{scenario, record}] for this run, from the cache unless ``rerun`` or absent."""
    root = run_dir(release, count, seed)
    saved = root / "results.jsonl"
    items = scenarios(release, count, seed, root / "configs")
    if saved.exists() and not rerun:
        lines = [json.loads(line) for line in saved.read_text().splitlines()]
        if [line["scenario"]["id"] for line in lines] == [sc["id"] for sc in items]:
            return lines
    inputs = root / "scenarios.json"
    inputs.write_text(json.dumps([{"id": s["id"], "gpu": gpu_of(s["profile"]),
                                   "argv": ["--model", s["config_dir"], "--tensor-parallel-size", str(s["tp"]),
                                            "--skip-tokenizer-init"]} for s in items]))  # fmt: skip
    out = root / "raw.jsonl"
    if not env.ensure(release, inputs, out=out):
        done = _run_resolver(release, inputs, out, root)
        if done.returncode:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise env.EnvError(f"vllm {release} resolver failed: {tail[0]}")
    by_id = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        by_id[record.pop("scenario")] = record
    lines = [{"scenario": sc, "record": by_id[sc["id"]]} for sc in items if sc["id"] in by_id]
    saved.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    return lines


# Modules whose compiled library does not load against the harness's CPU torch when an environment holds them (a
# torchaudio wheel installed into a release's deps for an audio model): transformers imports them whenever they are
# installed, so the resolver sees an importable empty module instead (config resolution never calls them).
SHADOWED = ("torchaudio",)


def _run_resolver(release: str, inputs: Path, out: Path, root: Path):
    shadow = root / "shadow"
    for name in SHADOWED:
        (shadow / name).mkdir(parents=True, exist_ok=True)
        (shadow / name / "__init__.py").write_text('__version__ = "0"\n')
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), env.pythonpath(release)]),
                   PYTHONNOUSERSITE="1")  # fmt: skip
    return subprocess.run([sys.executable, str(env.RESOLVER), str(inputs), str(out)], capture_output=True, text=True,
                          env=environ, timeout=3600)  # fmt: skip


def compare(release: str, scenario: dict, config_dir: Path, record: dict) -> list[tuple[str, str, str]]:
    """[(class, vLLM's value, the advisor's value)] where the advisor differs on this scenario."""
    from advisor.models import ModelError, load_config_dir
    from conformance.vllm.compare import accepted_class, differences, plan_for, refusal_class

    error = record.get("error")
    try:
        model = load_config_dir(config_dir, model_id=scenario["model"])
    except ModelError as exc:
        return [] if error else [("advisor refuses the config", "resolves", str(exc)[:120])]
    try:
        plan = plan_for(release, scenario["profile"], scenario["tp"], model)
    except Exception as exc:  # a crash is a finding, never the end of the run
        return [("advisor crashes", error or "resolves", f"{type(exc).__name__}: {exc}"[:160])]
    if error:
        cls = refusal_class(error, plan)
        return [(cls, error[:120], "plans it")] if cls else []
    out = []
    if cls := accepted_class(record, plan):
        out.append((cls, "resolves", cls))
    out += [(field, repr(want), repr(got)) for field, (want, got) in differences(record, plan, scenario["profile"],
                                                                                 scenario["tp"], release).items()]  # fmt: skip
    return out


def report(release: str, lines: list[dict]) -> dict[str, list]:
    """Print the disagreements grouped by field and cause; {scenario id: its disagreements}."""
    found: dict[str, list] = {}
    by_field: dict[str, Counter] = defaultdict(Counter)
    values: dict[str, Counter] = defaultdict(Counter)
    example: dict[tuple[str, str], str] = {}
    for line in lines:
        sc, record = line["scenario"], line["record"]
        diffs = compare(release, sc, Path(sc["config_dir"]), record)
        if not diffs:
            continue
        found[sc["id"]] = diffs
        causes = sorted({tag.split(":")[0] for tag in sc["tags"]})
        for field, want, got in diffs:
            for cause in causes:
                by_field[field][cause] += 1
                example.setdefault((field, cause), f"{sc['id']} (from {sc['base']}, {' '.join(sc['tags'])})")
            values[field][f"{want} -> {got}"] += 1
    rejected = sum("error" in line["record"] for line in lines)
    print(f"vllm {release}: {len(lines)} fuzz scenarios, {rejected} rejected by vLLM, {len(found)} disagree")
    for field in sorted(by_field, key=lambda f: -sum(by_field[f].values())):
        total = sum(1 for diffs in found.values() if any(d[0] == field for d in diffs))
        print(f"\n{field}: {total} scenarios")
        for cause, n in by_field[field].most_common():
            print(f"  cause {cause:<9} {n:>4}  e.g. {example[(field, cause)]}")
        for pair, n in values[field].most_common(6):
            print(f"  vLLM -> advisor: {pair}  ({n})")
    return found


def golden_path(release: str) -> Path:
    return GOLDEN / f"vllm-fuzz-{release}.jsonl"


def write_golden(release: str, lines: list[dict], ids: list[str]) -> Path:
    """Store the scenarios ``ids`` with their configs and what the release resolved (its log left out)."""
    wanted = set(ids)
    path = golden_path(release)
    with open(path, "w") as f:
        for line in lines:
            sc = line["scenario"]
            if sc["id"] not in wanted:
                continue
            config = json.loads((Path(sc["config_dir"]) / "config.json").read_text())
            stored = {k: v for k, v in sc.items() if k not in ("id", "config_dir")}
            record = {k: v for k, v in line["record"].items() if k != "log"}
            out = {"vllm": release, "id": sc["id"], "scenario": stored, "config": config, "record": record}
            f.write(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    return path


def main(release: str, count: int, seed: int, rerun: bool = False, golden_ids: Path | None = None) -> int:
    if count < 1:
        print("error: --count must be at least 1", file=sys.stderr)
        return 2
    try:
        lines = release_results(release, count, seed, rerun)
    except env.EnvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    found = report(release, lines)
    out = run_dir(release, count, seed) / "disagreements.json"
    out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"\ndisagreeing ids -> {out}")
    if golden_ids:
        print(f"golden -> {write_golden(release, lines, list(json.loads(golden_ids.read_text())))}")
    return 1 if found else 0
