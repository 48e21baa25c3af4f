"""``python -m conformance sglang-fuzz X.Y.Z --count N --seed S``: differential fuzzing of the advisor's SGLang rules.

Each scenario takes one stored config (the public ones and the named grid's under tests/conformance/configs/), changes
one to three of the properties SGLang's resolution branches on (an architecture name no release names, sliding window
and layer types, head widths, expert counts, the quantization method, MLA ranks, dtype, context length, KV heads,
hybrid linear-attention / Mamba fields, text_config nesting), and picks a GPU and a layout. The release resolves it in
its own venv (the runner of ``--grid named``), the advisor plans it, and the disagreements are printed by field and by
the change that caused them. Deterministic from the seed: the same count and seed give the same scenarios.

The release's results are kept in ~/.cache/tp-advisor/conformance/sglang/fuzz/ (a rerun with the same arguments only
re-plans the advisor's side; ``--rerun`` runs the release again); the ids that disagreed go next to them.
``--write-golden IDS.json`` stores those scenarios (config embedded) as tests/conformance/golden/sglang-fuzz-X.jsonl,
which tests/conformance/test_sglang_fuzz_golden.py holds the advisor to without SGLang.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

from conformance.fuzz_common import EXPERT_KEYS, PUBLIC, SUB_CONFIG, int_of, p_dtype, p_hybrid, p_kv_heads, text_part
from conformance.sglang import CACHE, GOLDEN, HarnessError, _job, run_job
from conformance.sglang.compare import CONFIGS, advisor_plan, differing_fields, golden_values, plan_values

GPUS = ("a100-sxm-8", "h100-sxm-8", "b200-8")
# Layouts: tp 1 and 8 for every model; DP attention and DeepEP where the config declares experts.
PLAIN_LAYOUTS = (dict(tp=1, nnodes=1, dp_attention=False, dp_size=1, a2a="none"),
                 dict(tp=8, nnodes=1, dp_attention=False, dp_size=1, a2a="none"))  # fmt: skip
MOE_LAYOUTS = (dict(tp=8, nnodes=1, dp_attention=True, dp_size=8, a2a="none"),
               dict(tp=8, nnodes=1, dp_attention=False, dp_size=1, a2a="deepep"))  # fmt: skip
CAUSES = ("arch", "swa", "head_dim", "experts", "quant", "mla", "dtype", "context", "kv_heads", "hybrid", "nest")


def bases() -> list[str]:
    named = sorted(p.name for p in CONFIGS.glob("named-*") if (p / "config.json").is_file())
    return [*PUBLIC, *named]


# -- the perturbations: each changes config in place and returns a tag "cause:detail" (None: not applicable) ----------
def p_arch(config: dict, rng: random.Random) -> str | None:
    old = (config.get("architectures") or ["XForCausalLM"])[0]
    suffix = next((s for s in ("ForConditionalGeneration", "ForCausalLM", "LMHeadModel", "Model") if str(old).endswith(s)),
                  "ForCausalLM")  # fmt: skip
    config["architectures"] = [f"Fuzz{rng.randrange(16**6):06X}{suffix}"]
    return f"arch:{suffix}"


def p_swa(config: dict, rng: random.Random) -> str | None:
    text = text_part(config)
    layers = int_of(text, "num_hidden_layers", 32)
    how = rng.choice(("window", "use_sliding_window", "layer_types", "none"))
    if how == "none":
        for key in ("sliding_window", "layer_types", "use_sliding_window", "sliding_window_pattern"):
            text.pop(key, None)
        return "swa:removed"
    text["sliding_window"] = rng.choice((128, 4096))
    if how == "use_sliding_window":
        text["use_sliding_window"] = True
    if how == "layer_types":
        text["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    return f"swa:{how}"


def p_head_dim(config: dict, rng: random.Random) -> str | None:
    text = text_part(config)
    how = rng.choice(("head_dim", "v_head_dim", "both"))
    if how in ("head_dim", "both"):
        text["head_dim"] = rng.choice((64, 128, 192, 256))
    if how in ("v_head_dim", "both"):
        text["v_head_dim"] = rng.choice((64, 128))
    return f"head_dim:{how}"


def p_experts(config: dict, rng: random.Random) -> str | None:
    text = text_part(config)
    key = rng.choice(EXPERT_KEYS)
    count = rng.choice((0, 8, 64, 128, 256))
    for other in EXPERT_KEYS:
        text.pop(other, None)
    text[key] = count
    if count:
        text.setdefault("num_experts_per_tok", min(8, count))
        text.setdefault("moe_intermediate_size", 768)
    return f"experts:{key}={count}"


QUANT_CONFIGS: dict[str, dict] = {
    "fp8": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "fp8-tensor": {"quant_method": "fp8", "activation_scheme": "static"},
    "modelopt_fp4": {"quant_method": "modelopt_fp4", "quant_algo": "NVFP4", "group_size": 16},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    "modelopt-fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "mxfp4": {"quant_method": "mxfp4"},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    # Not "gptq": from v0.5.23 CUDA knows it only as gptq_marlin, which GPTQMarlinConfig.override_quantization_method
    # picks after check_marlin_supported, and that check compares sgl_kernel's scalar types, which the runner's
    # import-only sgl_kernel cannot answer: every gptq checkpoint would read as rejected here, and resolves on a GPU.
    "compressed-tensors": {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                                       "symmetric": True, "dynamic": False},
                    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True,
                                          "dynamic": True}}}, "ignore": ["lm_head"]},
    "w4afp8": {"quant_method": "w4afp8", "weight_block_size": [128, 128], "group_size": 128},
    "none": {},
}  # fmt: skip


def p_quant(config: dict, rng: random.Random) -> str | None:
    name = rng.choice(sorted(QUANT_CONFIGS))
    for target in {id(config): config, id(text_part(config)): text_part(config)}.values():
        target.pop("quantization_config", None)
    if name != "none":
        config["quantization_config"] = copy.deepcopy(QUANT_CONFIGS[name])
    return f"quant:{name}"


def p_mla(config: dict, rng: random.Random) -> str | None:
    text = text_part(config)
    if "kv_lora_rank" in text and rng.random() < 0.4:
        for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"):
            text.pop(key, None)
        return "mla:removed"
    text["kv_lora_rank"] = rng.choice((256, 512))
    text["q_lora_rank"] = rng.choice((None, 1536))
    text["qk_rope_head_dim"], text["qk_nope_head_dim"], text["v_head_dim"] = 64, 128, 128
    return "mla:added"


def p_context(config: dict, rng: random.Random) -> str | None:
    text_part(config)["max_position_embeddings"] = rng.choice((2048, 8192, 32768, 131072, 1048576))
    return "context"


def p_nest(config: dict, rng: random.Random) -> str | None:
    if isinstance(config.get(SUB_CONFIG), dict):
        text = config.pop(SUB_CONFIG)
        for key, value in text.items():
            config.setdefault(key, value)
        return "nest:flattened"
    keep = {"architectures", "model_type", "auto_map", "_written_by", "quantization_config", "torch_dtype", "dtype",
            "transformers_version", "vision_config"}  # fmt: skip
    text = {k: config.pop(k) for k in list(config) if k not in keep}
    text["model_type"] = config.get("model_type")
    config[SUB_CONFIG] = text
    return "nest:text_config"


PERTURBATIONS = (p_arch, p_swa, p_head_dim, p_experts, p_quant, p_mla, p_dtype, p_context, p_kv_heads, p_hybrid,
                 p_nest)  # fmt: skip


def _is_moe(config_dir: Path) -> bool:
    from advisor.models import ModelError, load_config_dir

    try:
        return load_config_dir(config_dir).is_moe
    except ModelError:
        return False


def scenarios(count: int, seed: int, root: Path) -> list[dict]:
    """``count`` scenarios from ``seed``, their configs written under ``root``/fuzz-NNNN/config.json."""
    rng = random.Random(seed)
    names = bases()
    out = []
    for i in range(count):
        base = rng.choice(names)
        config = json.loads((CONFIGS / base / "config.json").read_text())
        picks = rng.sample(PERTURBATIONS, rng.choice((1, 1, 2, 2, 3)))
        tags = [tag for p in picks if (tag := p(config, rng)) is not None]
        model = f"fuzz-{i:04d}"
        folder = root / model
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(config, indent=1, sort_keys=True) + "\n"
        (folder / "config.json").write_text(text)
        layouts = PLAIN_LAYOUTS + (MOE_LAYOUTS if _is_moe(folder) else ())
        layout, gpu = rng.choice(layouts), rng.choice(GPUS)
        from conformance.sglang.grid import scenario_id

        out.append({"id": scenario_id(gpu, model, layout), "gpu": gpu, "model": model, **layout,
                    "config_dir": str(folder), "base": base, "tags": tags,
                    "config_sha": hashlib.sha256(text.encode()).hexdigest()[:16]})  # fmt: skip
    return out


def run_dir(release: str, count: int, seed: int) -> Path:
    return CACHE / "fuzz" / f"{release}-s{seed}-n{count}"


def release_results(release: str, count: int, seed: int, rerun: bool) -> list[dict]:
    """[{scenario, fields | error}] for this run, from the cache unless ``rerun`` or absent."""
    root = run_dir(release, count, seed)
    saved = root / "results.jsonl"
    items = scenarios(count, seed, root / "configs")
    if saved.exists() and not rerun:
        lines = [json.loads(line) for line in saved.read_text().splitlines()]
        if [line["scenario"] for line in lines] == items:  # the same scenarios and configs (a changed generator: rerun)
            return lines
    job, by_id = _job(release, None, "fuzz", items)
    results = run_job(release, job, len(by_id), log_name=f"runner-fuzz-{release}.log")
    lines = []
    for result in results:
        sc = by_id[result["id"]]
        line = {"scenario": sc, **({"error": result["error"]} if "error" in result else {"fields": result["fields"]})}
        lines.append(line)
    saved.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    return lines


@cache
def rejected_bases(release: str) -> frozenset[str]:
    """The named grid's configs the release rejects unchanged (its sglang-named golden), where there is one."""
    from conformance.sglang.compare import golden_lines

    try:
        return frozenset(line["scenario"]["model"] for line in golden_lines(release, "named") if "error" in line)
    except FileNotFoundError:
        return frozenset()


def compare(release: str, scenario: dict, config_dir: Path, line: dict) -> list[tuple[str, str, str]]:
    """[(class, release's value, advisor's value)] where the advisor differs on this scenario."""
    from advisor.models import ModelError, load_config_dir

    try:
        model = load_config_dir(config_dir, model_id=scenario["model"])
    except ModelError as exc:
        return [] if "error" in line else [("advisor refuses the config", "resolves", str(exc)[:120])]
    plan = advisor_plan(release, scenario, model, grid="fuzz")
    errors = [p for p in plan.problems if p.severity == "error"]
    if "error" in line:
        if errors:
            return []
        unchanged = scenario["base"] in rejected_bases(release)
        cls = "release rejects (the unchanged config too)" if unchanged else "release rejects"
        return [(cls, line["error"][:120], "plans it")]
    got = plan_values(plan)
    want = golden_values(line["fields"])
    return [(field, repr(want[field]), repr(got[field])) for field in differing_fields(want, got)]


def report(release: str, lines: list[dict]) -> dict[str, list]:
    """Print the disagreements grouped by field and cause; {scenario id: its disagreements}."""
    found: dict[str, list] = {}
    by_field: dict[str, Counter] = defaultdict(Counter)
    values: dict[str, Counter] = defaultdict(Counter)
    example: dict[tuple[str, str], str] = {}
    for line in lines:
        sc = line["scenario"]
        diffs = compare(release, sc, Path(sc["config_dir"]), line)
        if not diffs:
            continue
        found[sc["id"]] = diffs
        causes = sorted({tag.split(":")[0] for tag in sc["tags"]}) or ["none"]
        for field, want, got in diffs:
            for cause in causes:
                by_field[field][cause] += 1
                example.setdefault((field, cause), f"{sc['id']} (from {sc['base']}, {' '.join(sc['tags'])})")
            values[field][f"{want} -> {got}"] += 1
    print(f"sglang {release}: {len(lines)} fuzz scenarios, {sum('error' in ln for ln in lines)} rejected by SGLang, "
          f"{len(found)} disagree")  # fmt: skip
    for field in sorted(by_field, key=lambda f: -sum(by_field[f].values())):
        total = sum(1 for diffs in found.values() if any(d[0] == field for d in diffs))
        print(f"\n{field}: {total} scenarios")
        for cause, n in by_field[field].most_common():
            print(f"  cause {cause:<9} {n:>4}  e.g. {example[(field, cause)]}")
        for pair, n in values[field].most_common(6):
            print(f"  release -> advisor: {pair}  ({n})")
    return found


def write_golden(release: str, lines: list[dict], ids: list[str], run: str) -> Path:
    """Add the scenarios ``ids`` of the run ``run`` (s<seed>-n<count>) to the release's fuzz golden, with their configs
    and what the release resolved; every other line stays (each holds its own config and result, so a case stored by
    an earlier generator is still a valid case), a stored id written again is replaced."""
    wanted = set(ids)
    path = GOLDEN / f"sglang-fuzz-{release}.jsonl"
    kept = [json.loads(t) for t in path.read_text().splitlines()] if path.exists() else []
    kept = [line for line in kept if line["id"] not in {f"{run}/{i}" for i in wanted}]
    for line in lines:
        sc = line["scenario"]
        if sc["id"] not in wanted:
            continue
        config = json.loads((Path(sc["config_dir"]) / "config.json").read_text())
        stored = {k: v for k, v in sc.items() if k not in ("id", "config_dir", "config_sha")}
        out = {"id": f"{run}/{sc['id']}", "scenario": stored, "config": config}
        out.update({"error": line["error"]} if "error" in line else {"fields": line["fields"]})
        kept.append(out)
    path.write_text("".join(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n" for line in kept))
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance sglang-fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("release", metavar="X.Y.Z")
    parser.add_argument("--count", type=int, default=400, help="number of scenarios (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rerun", action="store_true", help="run the release again even if its results are cached")
    parser.add_argument("--write-golden", metavar="IDS.json", type=Path,
                        help="store these scenario ids (a disagreements file of an earlier run) as the fuzz golden")  # fmt: skip
    args = parser.parse_args(argv)
    release = args.release.lstrip("v")
    if args.count < 1:
        print("error: --count must be at least 1", file=sys.stderr)
        return 2
    try:
        lines = release_results(release, args.count, args.seed, args.rerun)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    found = report(release, lines)
    out = run_dir(release, args.count, args.seed) / "disagreements.json"
    out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"\ndisagreeing ids -> {out}")
    if args.write_golden:
        ids = json.loads(args.write_golden.read_text())
        run = f"s{args.seed}-n{args.count}"
        print(f"golden -> {write_golden(release, lines, list(ids), run)}")
    return 1 if found else 0
