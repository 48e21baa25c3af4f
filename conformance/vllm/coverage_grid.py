"""The scenarios ``python -m conformance vllm-coverage`` runs: the conformance grid, then extra scenarios that take
branches of the release's resolution the grid leaves untaken, on inputs the advisor models (profile, model, tp, the
engine arguments after ``--``). The extras are not conformance goldens (yet)."""

from __future__ import annotations

from conformance.vllm.grid import scenario_id, scenarios

# (profile, model id from the catalog, tp, engine arguments)
EXTRAS: tuple[tuple[str, str, int, tuple[str, ...]], ...] = ()


def coverage_scenarios(limit: int | None = None) -> list[dict]:
    out = scenarios() + [
        {"id": scenario_id(p, m, tp, o), "profile": p, "model": m, "tp": tp, "overrides": list(o)}
        for p, m, tp, o in EXTRAS
    ]
    return out if limit is None else out[:limit]
