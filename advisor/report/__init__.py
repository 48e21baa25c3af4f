"""A Plan as the stable JSON object of `advisor check --json` (advisor/report/data.py) and as rich renderables for people
(advisor/report/render.py). The names below are the package's interface: `from advisor.report import ...`.
"""

from advisor.report.data import (
    PLAN_SCHEMA_VERSION,
    SEVERITIES,
    condition_dict,
    decision_dict,
    dumps,
    facts_to_dict,
    jsonable,
    plan_to_dict,
    problem_dict,
    problems_named_by,
    release_dict,
    startup_dict,
    summary,
)

# The renderers draw with rich, which a --json run never needs: their names are looked up in advisor.report.render when
# first asked for (PEP 562), so that module and rich are loaded only by what draws.
RENDER_NAMES = frozenset({
    "FALLBACK_WIDTH", "SEVERITY_STYLES", "STATE_STYLES", "STATUS_STYLES", "command_renderable", "command_text",
    "decision_renderable", "decisions_renderable", "emit", "machine_renderable", "make_console", "marks", "next_steps",
    "output_width", "packages_renderable", "print_command", "print_facts", "print_next_steps", "print_plan",
    "problems_renderable", "scenario_renderable", "startup_renderable", "summary_text", "topology_renderable",
})  # fmt: skip


def __getattr__(name: str) -> object:
    if name not in RENDER_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from advisor.report import render

    value = globals()[name] = getattr(render, name)  # found here from now on
    return value


__all__ = [
    "FALLBACK_WIDTH", "PLAN_SCHEMA_VERSION", "SEVERITIES", "SEVERITY_STYLES", "STATE_STYLES", "STATUS_STYLES", "command_renderable", "command_text", "condition_dict",
    "decision_dict", "decision_renderable", "decisions_renderable", "dumps", "emit", "facts_to_dict", "jsonable",
    "machine_renderable", "make_console", "marks", "next_steps", "output_width", "packages_renderable", "plan_to_dict",
    "print_command", "print_facts", "print_next_steps", "print_plan", "problem_dict", "problems_named_by",
    "problems_renderable", "release_dict", "scenario_renderable", "startup_dict", "startup_renderable", "summary",
    "summary_text", "topology_renderable",
]  # fmt: skip
