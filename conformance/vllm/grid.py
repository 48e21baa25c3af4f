"""The scenarios: bundled machine profiles x catalog models x tp, plus flag variants on a few of them.

A scenario names only what the advisor also takes as input (profile, model id, tp, the engine arguments after ``--``),
so the conformance test can rebuild the same plan from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.models import CATALOG_DIR
from advisor.probe.profiles import load_profile

PROFILES = ("a100-sxm-8", "h100-sxm-8", "h200-8", "h20-8", "b200-8", "b300-8", "l40s-4", "rtx-4090-2")
TPS = (1, 2, 4, 8)
BASE_MODEL = "meta-llama/Llama-3.1-8B-Instruct"  # every profile, every tp
# The other architectures, each at one tp per profile (where the profile has that many GPUs).
OTHER_MODELS = (("Qwen/Qwen3-8B", 1), ("Qwen/Qwen3-30B-A3B", 2), ("openai/gpt-oss-120b", 2),
                ("deepseek-ai/DeepSeek-V3", 8))  # fmt: skip
# Engine arguments tried on a few (profile, tp); each spelled as every modelled release accepts it.
VARIANTS = (("-O0",), ("-O1",), ("-O3",), ("--enforce-eager",), ("--disable-custom-all-reduce",),
            ("-cc.pass_config.fuse_allreduce_rms=False",), ("--max-num-seqs", "64"))  # fmt: skip
VARIANT_AT = (("h100-sxm-8", 8), ("b200-8", 8), ("a100-sxm-8", 2))
GiB_PER_MiB = 1 / 1024


def scenario_id(profile: str, model: str, tp: int, overrides: tuple[str, ...]) -> str:
    return f"{profile}|{model}|tp{tp}|{' '.join(overrides)}"


def scenarios() -> list[dict]:
    """About 70 scenarios: each resolves in seconds, but a release's run shares two cores with everything else."""
    out = []

    def add(profile: str, model: str, tp: int, overrides: tuple[str, ...] = ()) -> None:
        out.append({"id": scenario_id(profile, model, tp, overrides), "profile": profile, "model": model, "tp": tp,
                    "overrides": list(overrides)})  # fmt: skip

    # Profiles innermost, so that the first lines of a run that is cut short already span every GPU.
    counts = {profile: len(load_profile(profile).engine_gpus) for profile in PROFILES}
    for model, tp in [(BASE_MODEL, tp) for tp in TPS] + list(OTHER_MODELS):
        for profile in PROFILES:
            if tp <= counts[profile]:
                add(profile, model, tp)
    for overrides in VARIANTS:
        for profile, tp in VARIANT_AT:
            add(profile, BASE_MODEL, tp, overrides)
    return out


def gpu_of(profile: str) -> dict:
    """What the faked platform answers for a profile: the first GPU's name, capability and memory, and the count."""
    gpus = load_profile(profile).engine_gpus
    gpu = gpus[0]
    return {"name": gpu.name, "capability": list(gpu.capability), "memory_gib": gpu.memory_total_mib * GiB_PER_MiB,
            "count": len(gpus)}  # fmt: skip


def model_dir(root: Path, model: str) -> Path:
    """A local model directory holding the catalog's config.json (no weights: config resolution reads only this)."""
    path = root / "models" / model.replace("/", "--")
    path.mkdir(parents=True, exist_ok=True)
    entry = json.loads((Path(CATALOG_DIR) / f"{model.replace('/', '--')}.json").read_text())
    (path / "config.json").write_text(json.dumps(entry["config"], indent=1))
    return path


def resolver_input(root: Path, items: list[dict]) -> list[dict]:
    """Each scenario as the resolver takes it: the faked GPU and the ``vllm serve`` argv."""
    return [{"id": s["id"], "gpu": gpu_of(s["profile"]),
             "argv": ["--model", str(model_dir(root, s["model"])), "--tensor-parallel-size", str(s["tp"]),
                      "--skip-tokenizer-init", *s["overrides"]]}
            for s in items]  # fmt: skip
