"""The engine arguments after ``--`` that set what the vLLM command builder (advisor/rules/vllm/command.py) sets from the
plan, as vLLM spells them (advisor.rules.plan_arguments checks them against the plan and leaves them out of the line).

EngineArgs.add_cli_args (vllm/engine/arg_utils.py, every modelled release) declares ``--tensor-parallel-size`` / ``-tp``
and ``--data-parallel-size`` / ``-dp``; ``--model`` is EngineArgs.model, which ``vllm serve`` replaces with its
positional model (``model_tag``, vllm/entrypoints/cli/serve.py).
"""

from __future__ import annotations

from advisor.rules.engine import Problem, Scenario
from advisor.rules.plan_arguments import PlanArgument, plan_argument_problems
from advisor.rules.vllm.common import ARG_UTILS_FILE

TP_FLAGS = ("--tensor-parallel-size", "-tp")
DP_FLAGS = ("--data-parallel-size", "-dp")
PLAN_ARGUMENTS = (
    PlanArgument("model", "--model", ("--model",), lambda intent: intent.model),
    PlanArgument("tensor-parallel size", "--tp", TP_FLAGS, lambda intent: intent.tp, int),
    PlanArgument("data-parallel size", "--dp-size", DP_FLAGS, lambda intent: intent.dp_size, int),
)  # fmt: skip


def plan_problems(s: Scenario) -> list[Problem]:
    """vllm_argument_conflicts_plan / vllm_argument_in_plan (advisor.rules.plan_arguments)."""
    return plan_argument_problems(s.intent, PLAN_ARGUMENTS, "vllm", f"vllm, {ARG_UTILS_FILE} (EngineArgs.add_cli_args)")
