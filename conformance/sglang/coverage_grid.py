"""The scenarios ``python -m conformance sglang-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (GPU, model, layout, flags).

The extras are not conformance goldens (yet): they measure how much of the resolution the inputs the advisor takes can
reach. Each is a grid scenario dict (conformance/sglang/grid.py) with an ``extra`` list of engine arguments.
"""

from __future__ import annotations

from conformance.sglang.grid import scenarios

EXTRAS: tuple[tuple[str, str, dict, tuple[str, ...]], ...] = ()


def extra_scenarios() -> list[dict]:
    out = []
    for gpu, model, layout, extra in EXTRAS:
        sc = {"gpu": gpu, "model": model, "tp": 8, "nnodes": 1, "dp_attention": False, "dp_size": 1, "a2a": "none",
              **layout}  # fmt: skip
        dp = f"dpa{sc['dp_size']}" if sc["dp_attention"] else "dp1"
        sc["id"] = f"{gpu}/{model}/tp{sc['tp']}/nn{sc['nnodes']}/{dp}/{sc['a2a']}/cov[{' '.join(extra)}]"
        sc["speculative"] = list(extra)  # appended to the argv; run in an isolated-environment group
        out.append(sc)
    return out


def coverage_scenarios(limit: int | None = None) -> list[dict]:
    out = scenarios() + extra_scenarios()
    return out if limit is None else out[:limit]
