"""SGLang's start-up decisions, release by release (docs/sglang.md; sources cited per rule).

One module per step SGLang takes while it resolves its server arguments, in its order: ``fusion`` (FlashInfer allreduce
fusion), ``custom_allreduce``, ``attention`` (_handle_attention_backend_compatibility), ``moe_runner``
(_handle_moe_kernel_config and the model steps), ``memory`` (_handle_gpu_memory_settings); ``releases`` holds the
release table every step resolves its release from, ``common`` the files and flags they cite and SGLang's GPU
predicates, ``arguments`` the check of the engine arguments against each release's parser. Import a name from the
module that defines it; this package itself offers ``decide``.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.rules.engine import Decision, Problem, Release, Scenario
from advisor.rules.sglang.architectures import NOT_NAMED, architecture_problems
from advisor.rules.sglang.arguments import argument_problems, plan_problems
from advisor.rules.sglang.attention import attention_decision
from advisor.rules.sglang.context import context_problems
from advisor.rules.sglang.custom_allreduce import custom_allreduce_decision
from advisor.rules.sglang.embedding import embedding_mode, embedding_problems
from advisor.rules.sglang.fusion import fusion_decision, fusion_problems
from advisor.rules.sglang.memory import memory_decision
from advisor.rules.sglang.moe_runner import moe_runner_decision
from advisor.rules.sglang.quantization import problems as quantization_problems
from advisor.rules.sglang.refusals import problems as refusal_problems
from advisor.rules.sglang.releases import unchecked_note


def decide(s: Scenario, release: Release) -> tuple[list[Decision], list[Problem]]:
    version = release.rules
    fusion = fusion_decision(s, version)
    decisions = [
        fusion,
        custom_allreduce_decision(s, version),
        attention_decision(s, version),
        moe_runner_decision(s, version),
        memory_decision(s, version),
    ]
    embedding = embedding_mode(s, version)
    if embedding is not None:  # on the memory decision, beside the chunked prefill and cache settings it changes
        note = f"embedding mode ({embedding}; sglang v{version}, configs/embedding_model_spec.py)"
        decisions[-1] = replace(decisions[-1], notes=(*decisions[-1].notes, note))
    note = unchecked_note(version)
    if note is not None:
        decisions = [replace(d, notes=(*d.notes, note)) for d in decisions]
    unnamed = architecture_problems(s, version)
    if unnamed:  # so `explain` shows the problem beside any decision
        note = f"the release names this architecture nowhere: default rules (see problem {NOT_NAMED})"
        decisions = [replace(d, notes=(*d.notes, note)) for d in decisions]
    # A release newer than the modelled ones is not judged by the newest one's parser: its own may know more.
    arguments = [] if release.newer else argument_problems(s, version)
    problems = fusion_problems(s, fusion, version) + arguments + plan_problems(s) + embedding_problems(s, version)
    problems += quantization_problems(s, version) + context_problems(s, version) + refusal_problems(s, version)
    return decisions, problems + unnamed
