"""Known start-up and launch bugs of each engine release: one table per engine (its data in
``advisor/rules/<engine>/known_bugs.json``, each entry with its upstream issue or PR), read here for `check` (a plan that
hits one), `diff` (those fixed and introduced between two releases) and `verify` (a logged error that matches one).

An entry's ``condition`` is data, evaluated on the plan's scenario; every key must hold (absent keys hold):
``min_tp``, ``min_nnodes``, ``min_dp_size`` (at least), ``sm`` (GPU compute capabilities, "9.0"), ``gpu_name`` (any
substring of the GPU's name), ``archs`` (the model's architectures[0]), ``moe``/``mla`` (the model is one),
``quantization`` (the model's), ``flags`` (engine arguments given after --, any of them), ``without_flags`` (none of
them given), ``enabled`` / ``not_enabled`` (decision ids of the plan), ``dp_attention``, ``sm_min`` (at least this
capability), ``sm_below`` (every GPU below this capability), ``moe_a2a_backend`` (any of), ``visible_subset`` (CUDA_VISIBLE_DEVICES hides some of the machine's GPUs),
``flag_at_least`` ({flag: number}: the flag is given with at least that value).

``checked`` says where each bound comes from: "wheels" (the change is seen in the released wheels' code; ``evidence``
names the code) or "tracker" (the issue or PR only: its report, its release notes). Which table an engine has is its
Engine record's ``known_bugs`` field (advisor/rules/engine.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from advisor.rules.engine import Problem, flag_values, parse_release

CONDITION_KEYS = frozenset({
    "min_tp", "min_nnodes", "min_dp_size", "sm", "sm_min", "gpu_name", "archs", "moe", "mla", "quantization", "flags",
    "without_flags", "enabled", "not_enabled", "dp_attention", "moe_a2a_backend", "visible_subset", "flag_at_least",
    "sm_below",
})  # fmt: skip
CHECKED_IN = frozenset({"wheels", "tracker"})  # where a bound comes from (``checked``)
LINK = re.compile(r"^https://github\.com/(sgl-project/sglang|vllm-project/vllm)/(issues|pull)/\d+$")


@dataclass(frozen=True, slots=True)
class KnownBug:
    id: str
    engine: str
    title: str
    link: str  # the upstream issue or PR
    first_affected: str  # the first release it shows in
    fixed_in: str | None  # the first release without it; None while open
    condition: dict[str, Any]
    condition_text: str  # the condition in words
    symptom: str
    workaround: str  # a flag or step that avoids it
    symptom_pattern: str | None = None  # a regex matched against a logged start-up error
    evidence: str = ""  # where first_affected / fixed_in come from (the report, the released wheels)
    checked: dict[str, str] | None = None  # {"first_affected": "wheels"|"tracker", "fixed_in": ...} (CHECKED_IN)

    def affects(self, release: str | None) -> bool:
        """The release lies in first_affected..fixed_in (fixed_in excluded); an unknown release is never affected."""
        version = parse_release(release) if release else None
        if version is None:
            return False
        return parse_release(self.first_affected) <= version and (
            self.fixed_in is None or version < parse_release(self.fixed_in)
        )

    def problem(self) -> Problem:
        fixed = f"fixed in v{self.fixed_in}" if self.fixed_in else "not fixed yet"
        return Problem(
            f"known_bug_{self.id}", "warning",
            f"known {self.engine} bug ({self.condition_text}): {self.symptom} (v{self.first_affected}+, {fixed})",
            self.workaround + (f", or upgrade to v{self.fixed_in}" if self.fixed_in else ""),
            self.link, (self.engine,),
        )  # fmt: skip


@cache
def table(engine: str) -> tuple[KnownBug, ...]:
    """The known bugs of engine ``engine`` (its name), in file order, from the package its Engine record's
    ``known_bugs`` names; () for an engine without a table."""
    from advisor.rules import registry  # registry imports the engines, whose rules import this module

    package = registry.get(engine).known_bugs
    if package is None:
        return ()
    text = resources.files(package).joinpath("known_bugs.json").read_text(encoding="utf-8")
    return tuple(KnownBug(engine=engine, **entry) for entry in json.loads(text)["bugs"])


def applies(bug: KnownBug, scenario: Any, decisions: Any = ()) -> bool:
    """Whether the plan's scenario (advisor.rules.engine.Scenario) and decisions meet every key of the condition."""
    c = bug.condition
    intent, model, facts = scenario.intent, scenario.model, scenario.facts
    enabled = {d.id for d in decisions if d.enabled}
    gpus = facts.engine_gpus or facts.gpus
    capabilities = {f"{g.capability[0]}.{g.capability[1]}" for g in gpus if g.capability}
    tokens = tuple(intent.overrides)
    given = {t.split("=", 1)[0] for t in tokens}
    checks = (
        intent.tp >= c.get("min_tp", 0),
        intent.nnodes >= c.get("min_nnodes", 0),
        intent.dp_size >= c.get("min_dp_size", 0),
        "sm" not in c or bool(capabilities & set(c["sm"])),
        "sm_min" not in c or any(g.capability and g.capability >= tuple(c["sm_min"]) for g in gpus),
        "sm_below" not in c or bool(gpus) and all(g.capability and g.capability < tuple(c["sm_below"]) for g in gpus),
        "gpu_name" not in c or any(s.lower() in (g.name or "").lower() for g in gpus for s in c["gpu_name"]),
        "archs" not in c or (model is not None and model.architecture in c["archs"]),
        "moe" not in c or (model is not None and model.is_moe == c["moe"]),
        "mla" not in c or (model is not None and model.uses_mla == c["mla"]),
        "quantization" not in c or (model is not None and model.quantization in c["quantization"]),
        "flags" not in c or bool(given & set(c["flags"])),
        "without_flags" not in c or not (given & set(c["without_flags"])),
        all(d in enabled for d in c.get("enabled", ())),
        not any(d in enabled for d in c.get("not_enabled", ())),
        "dp_attention" not in c or intent.dp_attention == c["dp_attention"],
        "moe_a2a_backend" not in c or intent.moe_a2a_backend in c["moe_a2a_backend"],
        "visible_subset" not in c or _visible_subset(facts) == c["visible_subset"],
        all(_at_least(tokens, flag, bound) for flag, bound in c.get("flag_at_least", {}).items()),
    )
    return all(checks)


def _visible_subset(facts: Any) -> bool:
    return facts.visible_gpus is not None and len(facts.engine_gpus) < len(facts.gpus)


def _at_least(tokens: tuple[str, ...], flag: str, bound: float) -> bool:
    values = [v for v in flag_values(tokens, flag, next_flag="--") if v is not None]
    try:
        return bool(values) and float(values[-1]) >= bound
    except ValueError:
        return False


def hit(engine: Any, release: str | None, scenario: Any, decisions: Any = ()) -> list[Problem]:
    """The warnings of the known bugs this plan hits under ``release``; ``engine`` is its advisor.rules.engine.Engine,
    whose ``known_bugs`` field names the table."""
    if engine.known_bugs is None:
        return []
    return [b.problem() for b in table(engine.name) if b.affects(release) and applies(b, scenario, decisions)]


def changed(engine: str, old: str, new: str) -> tuple[list[KnownBug], list[KnownBug]]:
    """(fixed, introduced) going from release ``old`` to ``new``: affecting old but not new, and the other way round."""
    bugs = table(engine)
    fixed = [b for b in bugs if b.affects(old) and not b.affects(new)]
    introduced = [b for b in bugs if b.affects(new) and not b.affects(old)]
    return fixed, introduced


def matching(engine: str, error: str | None, release: str | None) -> tuple[KnownBug, ...]:
    """The known bugs whose symptom pattern matches a logged start-up error (the release's own ones first)."""
    if not error:
        return ()
    found = [b for b in table(engine) if b.symptom_pattern and re.search(b.symptom_pattern, error, re.I)]
    return tuple(sorted(found, key=lambda b: not b.affects(release)))
