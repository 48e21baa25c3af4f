"""Compare the advisor's SGLang plan with the goldens: per scenario, per field. Needs only the advisor, never SGLang."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "golden"
CONFIGS = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "configs"

# The fields the advisor models, in report order.
FIELDS = (
    "fusion", "attention_backend", "moe_runner_backend", "chunked_prefill_size", "cuda_graph_max_bs",
    "mem_fraction_static", "disable_custom_all_reduce", "ep_size", "page_size",
    "piecewise_cuda_graph", "piecewise_cuda_graph_max_tokens",
)  # fmt: skip
# Fields a release's golden may lack: the prefill graph's on/off and largest size are recorded up to v0.5.13 as SGLang
# named them then (piecewise_*), from v0.5.14 as cuda_graph_config's prefill phase (cuda_graph_prefill_backend, _max_bs),
# the backend only in goldens written since the runner reads it. Where the golden has no value, that field is not
# compared for that scenario (every stored golden has the largest size).
OPTIONAL_FIELDS = frozenset({"piecewise_cuda_graph", "piecewise_cuda_graph_max_tokens"})
ABSENT = object()


# The argument goldens: sglang-<release>.jsonl (grid.py's grid) and sglang-configs-<release>.jsonl (config_grid.py's
# unnamed and config-keyed variants), sglang-named-<release>.jsonl (config_grid.py's named grid);
# sglang-memory-<release>.jsonl are the KV-pool goldens.
GRIDS = {"main": "sglang-", "configs": "sglang-configs-", "named": "sglang-named-"}


def golden_releases(grid: str = "main") -> list[str]:
    prefix = GRIDS[grid]
    names = [p.name[len(prefix) : -len(".jsonl")] for p in GOLDEN.glob(f"{prefix}[0-9]*.jsonl")]
    return sorted(names, key=lambda r: tuple(int(x) for x in r.split(".")))


def golden_lines(release: str, grid: str = "main") -> Iterator[dict]:
    with open(GOLDEN / f"{GRIDS[grid]}{release}.jsonl") as f:
        for line in f:
            yield json.loads(line)


def golden_values(fields: dict) -> dict:
    backend = fields.get("flashinfer_allreduce_fusion_backend")
    return {
        "fusion": bool(fields.get("enable_flashinfer_allreduce_fusion")) or backend not in (None, "", "none"),
        "attention_backend": fields.get("attention_backend"),
        "moe_runner_backend": fields.get("moe_runner_backend"),
        "chunked_prefill_size": fields.get("chunked_prefill_size"),
        "cuda_graph_max_bs": fields.get("cuda_graph_max_bs"),
        "mem_fraction_static": fields.get("mem_fraction_static"),
        "disable_custom_all_reduce": bool(fields.get("disable_custom_all_reduce")),
        "ep_size": fields.get("ep_size"),
        "page_size": fields.get("page_size"),
        "piecewise_cuda_graph": _prefill_graph_on(fields),
        "piecewise_cuda_graph_max_tokens": _prefill_graph_max_tokens(fields),
    }


def recorded(release: str, grid: str = "main") -> set[str]:
    """The FIELDS this release's golden records for at least one compared scenario (every field but OPTIONAL_FIELDS
    always; those where the harness read them)."""
    out: set[str] = set()
    for line in golden_lines(release, grid):
        if "fields" in line:
            out |= {field for field, value in golden_values(line["fields"]).items() if value is not ABSENT}
    return out


def _prefill_graph_max_tokens(fields: dict):
    """The prefill graph's largest size in tokens, by the field the release records; ABSENT if none."""
    if "piecewise_cuda_graph_max_tokens" in fields:  # up to v0.5.13
        return fields["piecewise_cuda_graph_max_tokens"]
    return fields.get("cuda_graph_prefill_max_bs", ABSENT)  # from v0.5.14: cuda_graph_config.prefill.max_bs


def _prefill_graph_on(fields: dict):
    """Whether the release captures the prefill (piecewise) CUDA graph, by the field it records; ABSENT if none."""
    if "enable_piecewise_cuda_graph" in fields:  # up to v0.5.9
        return bool(fields["enable_piecewise_cuda_graph"])
    if "disable_piecewise_cuda_graph" in fields:  # v0.5.10 to v0.5.13
        return not fields["disable_piecewise_cuda_graph"]
    if "cuda_graph_prefill_backend" in fields:  # from v0.5.14: cuda_graph_config.prefill.backend
        return fields["cuda_graph_prefill_backend"] not in (None, "disabled")
    return ABSENT


@cache
def _facts(profile: str):
    from advisor.probe.profiles import load_profile

    return load_profile(profile)


@cache
def _model(name: str):
    from advisor.models import load_config_dir

    return load_config_dir(CONFIGS / name, model_id=name)


def engine_args(scenario: dict) -> tuple[str, ...]:
    """The engine arguments after `--` the scenario passed to SGLang beyond the layout (its --speculative-* arguments)."""
    draft = ("--speculative-draft-model-path", str(CONFIGS / scenario["draft"])) if scenario.get("draft") else ()
    return (*scenario.get("speculative", ()), *draft)


def advisor_values(release: str, scenario: dict, grid: str = "main") -> dict:
    """The advisor's values of FIELDS for the scenario."""
    return plan_values(advisor_plan(release, scenario, grid=grid))


def advisor_plan(release: str, scenario: dict, model=None, grid: str = "main"):
    """The advisor's plan for the scenario (``model``: a ModelSpec read elsewhere; default: the scenario's folder under
    CONFIGS). A grid that stands in remote config code is planned with --trust-remote-code (REMOTE_CODE_STAND_IN)."""
    from advisor.plan import Intent, build_plan
    from conformance.sglang import REMOTE_CODE_STAND_IN

    trust = ("--trust-remote-code",) if grid in REMOTE_CODE_STAND_IN else ()
    intent = Intent(
        model=scenario["model"], tp=scenario["tp"], nnodes=scenario["nnodes"], dp_attention=scenario["dp_attention"],
        dp_size=scenario["dp_size"], moe_a2a_backend=scenario["a2a"], engine="sglang", engine_version=release,
        overrides=(*engine_args(scenario), *trust),
    )  # fmt: skip
    return build_plan(_facts(scenario["gpu"]), _model(scenario["model"]) if model is None else model, intent)


def plan_values(plan) -> dict:
    """The FIELDS as the plan resolves them."""
    from advisor.rules.engine import FORCED_OFF

    memory = plan.decision("memory_defaults").value or {}
    fraction = memory.get("mem_fraction_static")
    return {
        # the flag SGLang sets: on, or set with no effect at tp 1 (its decision then says not-enabled)
        "fusion": plan.decision("flashinfer_allreduce_fusion").enabled or bool(plan.decision("flashinfer_allreduce_fusion").flags),
        "attention_backend": plan.decision("attention_backend").value,
        "moe_runner_backend": plan.decision("moe_runner_backend").value,
        "chunked_prefill_size": memory.get("chunked_prefill_size"),
        "cuda_graph_max_bs": memory.get("cuda_graph_max_bs"),
        "mem_fraction_static": None if fraction is None else round(fraction, 3),
        "disable_custom_all_reduce": plan.decision("custom_allreduce").state == FORCED_OFF,
        "ep_size": _setting(plan.decision("moe_runner_backend"), "ep_size"),
        "page_size": _setting(plan.decision("attention_backend"), "page_size"),
        "piecewise_cuda_graph": _setting(plan.decision("memory_defaults"), "piecewise_cuda_graph"),
        "piecewise_cuda_graph_max_tokens": _setting(plan.decision("memory_defaults"), "piecewise_cuda_graph_max_tokens"),
    }


def _setting(decision, name: str):
    """A setting the decision resolved with its value (Decision.settings), or None."""
    return next((s.value for s in decision.settings if s.name == name), None) if decision is not None else None


def disagreements(release: str, grid: str = "main") -> tuple[set[tuple[str, str, str]], int, int]:
    """({(release, scenario id, field)} where the advisor differs, scenarios compared, scenarios SGLang rejected)."""
    out: set[tuple[str, str, str]] = set()
    compared = rejected = 0
    for line in golden_lines(release, grid):
        if "fields" not in line:
            rejected += 1  # SGLang refused the arguments; the advisor's checks are not compared here
            continue
        compared += 1
        want, got = golden_values(line["fields"]), advisor_values(release, line["scenario"], grid)
        out |= {(release, line["id"], field) for field in differing_fields(want, got)}
    return out, compared, rejected


def differing_fields(want: dict, got: dict) -> list[str]:
    """The FIELDS where the advisor's values (``got``) differ from the release's (``want``: golden_values)."""
    out = []
    for field in FIELDS:
        a, b = want[field], got[field]
        if a is ABSENT:
            continue  # this golden does not record the field (OPTIONAL_FIELDS)
        if field == "mem_fraction_static" and a is not None and b is not None:
            same = round(a, 3) == round(b, 3)
        else:
            same = a == b
        if not same:
            out.append(field)
    return out
