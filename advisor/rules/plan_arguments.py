"""Engine arguments after ``--`` that set what the plan itself puts on the command line (the model, the tensor- and
data-parallel sizes), checked against the plan: the one mechanism every engine uses, with each engine's spellings and
source in its own package (advisor/rules/sglang/arguments.py, advisor/rules/vllm/arguments.py).

Both engines parse with argparse, where the last of two values wins: ``--tp 8 -- --tp-size 4`` would start tp 4 while
the plan (layout, memory, fusion) is made for tp 8. So an engine argument that agrees with the plan is reported (info)
and carried once; one that disagrees is an error naming both and the fix; the command builders drop these arguments
from the user's overrides either way, so the command line never carries two values for one setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.rules.command import without_flag
from advisor.rules.engine import Problem, flag_values

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


@dataclass(frozen=True, slots=True)
class PlanArgument:
    """One setting the plan puts on the engine's command line, and the engine's spellings of it."""

    setting: str  # "tensor-parallel size"
    option: str  # the advisor's own option that sets it: "--tp"
    spellings: tuple[str, ...]  # the engine's: ("--tensor-parallel-size", "--tp-size")
    planned: Callable[[object], object]  # intent -> the plan's value
    parse: Callable[[str], object] = str  # the engine's reading of a value; ValueError: left to the parser check


def given(overrides: Sequence[str], argument: PlanArgument) -> list[tuple[str, str | None]]:
    """Every (spelling, value) of ``argument`` in ``overrides``, in order (value None: the flag has none)."""
    found = []
    for i, token in enumerate(overrides):
        for name in argument.spellings:
            if token == name or token.startswith(name + "="):
                values = flag_values(overrides[i:i + 2], name, next_flag="--")
                found.append((name, values[0] if values else None))
                break
    return found


def plan_argument_problems(
    intent, arguments: Sequence[PlanArgument], engine: str, source: str
) -> list[Problem]:
    """``<engine>_argument_conflicts_plan`` (error) for an engine argument whose value differs from the plan's,
    ``<engine>_argument_in_plan`` (info) for one that repeats it (the command carries it once)."""
    problems = []
    for argument in arguments:
        planned = argument.planned(intent)
        if planned is None:
            continue
        for name, raw in given(intent.overrides, argument):
            if raw is None:
                continue  # "needs a value": the parser check reports it
            try:
                value = argument.parse(raw)
            except ValueError:  # not a number: the engine's parser refuses it; the line carries the plan's value
                problems.append(Problem(
                    f"{engine}_argument_conflicts_plan", "error",
                    f"{name} {raw} after -- is not a {argument.setting} the engine takes, and the plan sets"
                    f" {argument.option} {planned}", f"drop {name} {raw}: {argument.option} {planned} sets it", source,
                ))  # fmt: skip
                continue
            if value == planned:
                problems.append(Problem(
                    f"{engine}_argument_in_plan", "info",
                    f"{name} {raw} after -- sets the {argument.setting} {planned}; the plan uses it and the command"
                    " carries it once", f"nothing to fix; the plan sets it ({argument.option} {planned})", source,
                ))  # fmt: skip
            else:
                problems.append(Problem(
                    f"{engine}_argument_conflicts_plan", "error",
                    f"{name} {raw} after -- contradicts {argument.option} {planned}: the command would carry two"
                    f" {argument.setting}s and the plan is made for {planned}",
                    f"pass {argument.option} {raw} and drop {name} after --, or drop {name} {raw} to keep"
                    f" {argument.option} {planned}", source,
                ))  # fmt: skip
    return problems


def without_plan_arguments(intent, arguments: Sequence[PlanArgument]) -> list[str]:
    """``intent.overrides`` minus every spelling of the ``arguments`` the plan sets (``--x V``, ``--x=V``): the command
    builder puts the plan's value on the line instead."""
    spellings = [name for argument in arguments if argument.planned(intent) is not None for name in argument.spellings]
    return without_flag(intent.overrides, *spellings, next_flag="--")  # flag_values' reading with next_flag="--"
