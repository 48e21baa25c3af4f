"""Compilation and CUDA graphs: the optimization level (-O) and what it sets."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Problem, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import (
    BREAKABLE_CUDAGRAPH,
    MODELS_CONFIG_FILE,
    breakable_cudagraph,
    breakable_entry,
    no_compile_full_graphs,
    vllm_architecture,
)
from advisor.rules.vllm.common import ENFORCE_EAGER, NEWEST, VLLM_CONFIG_FILE, rules_release
from advisor.rules.vllm.runner import encoder_decoder, is_pooling

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

OPTIMIZATION_LEVELS = range(4)  # OptimizationLevel O0..O3 (vllm/config/vllm.py, v0.12.0 to v0.33.0)


def _level_values(s: Scenario) -> list[str]:
    """The values given to -O / --optimization-level ("-O1", "-O 1", "-O=1", "--optimization-level 1"), in order."""
    return [v for v in rules.flag_values(s.overrides, "-O", "--optimization-level", next_flag=None) if v is not None]


def optimization_level(s: Scenario) -> int:
    """-O0..-O3 as given (the last one wins); 2 is the default."""
    level = 2
    for raw in _level_values(s):
        if raw.isdigit():
            level = int(raw)
    return level


def optimization_level_problems(s: Scenario) -> list[Problem]:
    """vllm_optimization_level: a numeric -O outside O0..O3 is not a level vLLM knows, so `vllm serve` stops at start-up."""
    bad = [raw for raw in _level_values(s) if raw.isdigit() and int(raw) not in OPTIMIZATION_LEVELS]
    if not bad:
        return []
    return [Problem(
        "vllm_optimization_level", "error",
        f"-O{bad[0]} is not an optimization level vLLM knows (O0 to O3): `vllm serve` refuses it at start-up",
        "pass -O0, -O1, -O2 (the default) or -O3",
        "vllm/config/vllm.py (OptimizationLevel), vllm/utils/argparse_utils.py (-O)",
    )]  # fmt: skip


def compiles(s: Scenario, version: str = NEWEST) -> bool:
    """Whether vLLM compiles the model (CompilationMode.VLLM_COMPILE): -O1 and above, without --enforce-eager, and (from
    v0.25.1) an architecture off the breakable-CUDA-graph list, for which VllmConfig compiles nothing, and without a
    config fix-up that turns compilation off (LongCat-Flash n-gram, v0.27.1+)."""
    return (optimization_level(s) >= 1 and not s.has(ENFORCE_EAGER) and not breakable_cudagraph(s.model, version)
            and not no_compile_full_graphs(s.model, version))  # fmt: skip


# -- compilation and CUDA graphs ---------------------------------------------------------------------------------------

# CompilationMode values (vllm/config/compilation.py) and the CUDA-graph mode each -O level sets.
COMPILE_NONE, VLLM_COMPILE = 0, 3
CUDAGRAPH_BY_LEVEL = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}


# --enforce-eager also lowers the optimization level to -O0 (VllmConfig.__post_init__) up to v0.16.0, not from v0.17.1.
EAGER_LOWERS_LEVEL: list[tuple[str, bool]] = [("0.12.0", True), ("0.17.1", False)]


def compilation_value(s: Scenario, version: str = NEWEST) -> dict[str, int | str]:
    """optimization_level, compilation_mode and cudagraph_mode as VllmConfig resolves them."""
    level = optimization_level(s)
    eager = s.has(ENFORCE_EAGER)
    if eager and at(EAGER_LOWERS_LEVEL, rules_release(version)):
        level = 0
    mode = VLLM_COMPILE if compiles(s, rules_release(version)) else COMPILE_NONE
    graphs = "NONE" if eager else CUDAGRAPH_BY_LEVEL.get(level, "FULL_AND_PIECEWISE")
    if not eager and no_compile_full_graphs(s.model, rules_release(version)):
        graphs = "FULL"  # the fix-up sets it before the -O level's defaults, which fill only what is unset
    if graphs.startswith("FULL") and is_pooling(s.model, rules_release(version)):
        graphs = "PIECEWISE"  # VllmConfig.__post_init__: "Pooling models do not support full cudagraphs"
    elif graphs not in ("NONE", "FULL_DECODE_ONLY") and encoder_decoder(s.model, rules_release(version)):
        graphs = "FULL_DECODE_ONLY"  # VllmConfig.__post_init__: encoder-decoder models capture decode graphs only
    return {"optimization_level": level, "compilation_mode": mode, "cudagraph_mode": graphs}


def compilation_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    value = compilation_value(s, release)

    def level(s: Scenario):
        lvl = value["optimization_level"]
        return lvl >= 1, f"-O{lvl}", "-O1 or above (-O2 is the default)"

    def eager(s: Scenario):
        on = s.has(ENFORCE_EAGER)
        return not on, "--enforce-eager" if on else "not set", "no --enforce-eager"

    conditions = (
        rules.Condition("optimization_level", "an optimization level that compiles", level,
                  "-O0 compiles nothing and captures no CUDA graphs; -O1 piecewise graphs; -O2/-O3 full and piecewise",
                  "drop -O0 (the default is -O2)"),
        rules.Condition("not_eager", "no --enforce-eager", eager,
                  "--enforce-eager turns off torch.compile and CUDA graphs whatever the level", "drop --enforce-eager"),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    forced_off = s.has(ENFORCE_EAGER) or value["optimization_level"] == 0
    state = rules.state_of(results, forced_off=forced_off and bool(s.overrides))
    notes = [f"compilation mode {'VLLM_COMPILE' if value['compilation_mode'] == VLLM_COMPILE else 'NONE'}, CUDA graphs"
             f" {value['cudagraph_mode']}"]  # fmt: skip
    if breakable_cudagraph(s.model, release):
        notes.append(f"{breakable_entry(s.model, release)} is on vLLM's breakable-CUDA-graph list "
                     f"(vllm/{BREAKABLE_CUDAGRAPH}): "
                     "VllmConfig sets VLLM_USE_BREAKABLE_CUDAGRAPH=1 and compiles nothing; set "
                     "VLLM_USE_BREAKABLE_CUDAGRAPH=0 to compile it")  # fmt: skip
    if no_compile_full_graphs(s.model, release):
        notes.append(f"{vllm_architecture(s.model, release)}'s config fix-up ({MODELS_CONFIG_FILE}, MODELS_CONFIG_MAP) "
                     "compiles nothing "
                     "and captures FULL CUDA graphs (prefill runs eager) unless compilation is configured")  # fmt: skip
    if value["compilation_mode"] == COMPILE_NONE:
        notes.append("no compilation pass (e.g. the allreduce + RMSNorm fusion) runs in this mode")
    source = rules.Source(f"vllm v{release}", VLLM_CONFIG_FILE, "OPTIMIZATION_LEVEL_TO_CONFIG, VllmConfig.__post_init__")
    return rules.decided("compilation", "torch.compile and CUDA graphs (-O level)", state, results, source, value=value,
                   notes=notes)  # fmt: skip
