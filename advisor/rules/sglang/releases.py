"""SGLang's release table: the releases this package models, one row per release range, and the release whose rules
apply to a version (every step of advisor.rules.sglang resolves its release here).

A row also holds what changes in FlashInfer allreduce fusion over its range (advisor.rules.sglang.fusion): the
architectures added in that range (the list is cumulative), the named conditions that must all hold, the flag that
release sets, and the flags that force it off. Adding a release is one row; adding an architecture is one name in a
row's ``added``.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.engine import ReleaseError, parse_release, release_text
from advisor.rules.releases import within
from advisor.rules.sglang.common import (
    BACKEND_FLAG,
    BOOL_FLAG,
    DETERMINISTIC,
    ENFORCE_DISABLE,
    OVERRIDES,
    SERVER_ARGS,
)

# MiMo V2 (v0.5.23): auto-enabled with the "cutedsl" backend, only on SM10x at the CuTe DSL kernel's tp sizes
# (python/sglang/srt/layers/flashinfer_mnnvl_cutedsl.py SUPPORTED_TP_SIZES).
MIMO_ARCHS_ORDERED = ("MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM")
MIMO_ARCHS = frozenset(MIMO_ARCHS_ORDERED)
MIMO_TP_SIZES = (2, 4, 8, 16)

V057 = ("sm90_or_blackwell", "no_dp_attention", "not_nsa_dp_attention", "single_node", "not_h20", "a2a_none")
V058 = ("sm90_or_sm100", "no_dp_attention", "single_node", "not_h20", "a2a_none")
V0510 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "attn_cp_size", "single_node", "not_h20", "a2a_none")
V0511 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node", "not_h20", "a2a_none")
V0513 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node", "a2a_none")
V0514 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node_or_sm100", "a2a_none")
V0521 = (*V0514, "not_dsv41_tp4")
V0522 = ("sm90_or_sm100", "tp_gt_1", "no_attn_dp", "single_node_or_sm100", "a2a_none", "not_dsv41_tp4")
V0523 = (*V0522, "mimo_sm100")
OFF_V057 = ()  # --enforce-disable-flashinfer-allreduce-fusion does not exist yet
OFF_V0510 = (ENFORCE_DISABLE,)
OFF_V0512 = (ENFORCE_DISABLE, DETERMINISTIC)


@dataclass(frozen=True, slots=True)
class FusionRow:
    """FlashInfer allreduce fusion under releases first..last."""

    first: str
    last: str
    added: tuple[str, ...]  # architectures added to the (cumulative) list in this range
    conditions: tuple[str, ...]  # FUSION_CONDITIONS ids, besides the architecture
    flag: str  # what SGLang sets when it auto-enables
    off_flags: tuple[str, ...]  # user flags that force it off in this range
    file: str
    ref: str


# fmt: off
FUSION_TABLE: tuple[FusionRow, ...] = (
    FusionRow("0.5.7", "0.5.7", ("DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "Qwen3MoeForCausalLM"), V057, BOOL_FLAG, OFF_V057, SERVER_ARGS, "first architecture list; silent"),
    FusionRow("0.5.8", "0.5.8", ("Glm4MoeLiteForCausalLM",), V058, BOOL_FLAG, OFF_V057, SERVER_ARGS, "SM120 dropped"),
    FusionRow("0.5.9", "0.5.9", ("KimiK25ForConditionalGeneration",), V058, BOOL_FLAG, OFF_V057, SERVER_ARGS, "Kimi K2.5 added"),
    FusionRow("0.5.10", "0.5.10", ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"), V0510, BOOL_FLAG, OFF_V0510, SERVER_ARGS, "tp > 1 and attn_cp checks; enforce-disable flag"),
    FusionRow("0.5.11", "0.5.11", ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "Qwen3NextForCausalLM"), V0511, BOOL_FLAG, OFF_V0510, SERVER_ARGS, "PR #22664 (Qwen3-Next, H100)"),
    FusionRow("0.5.12", "0.5.12", ("InternS2PreviewForConditionalGeneration",), V0511, BOOL_FLAG, OFF_V0512, SERVER_ARGS, "deterministic inference forces it off"),
    FusionRow("0.5.13", "0.5.13", ("MistralLarge3ForCausalLM",), V0513, BOOL_FLAG, OFF_V0512, SERVER_ARGS, "H20 exclusion removed"),
    FusionRow("0.5.14", "0.5.17", ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "Qwen3VLMoeForConditionalGeneration"), V0514, BACKEND_FLAG, OFF_V0512, SERVER_ARGS, "PR #28786 (Qwen3-VL-MoE, B300); backend flag"),
    FusionRow("0.5.18", "0.5.18", ("DeepseekV4ForCausalLM",), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "DeepSeek V4 added"),
    FusionRow("0.5.19", "0.5.19", (), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "list unchanged; SGLANG_FLASHINFER_MNNVL_CUTEDSL_AR_FUSION (off by default) hands Qwen3.5 MoE to the CuTe DSL path"),
    FusionRow("0.5.20", "0.5.20", ("NemotronH_Omni_Reasoning_V3", "Qwen4ExpForConditionalGeneration"), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "Nemotron-H Omni and Qwen4 added"),
    FusionRow("0.5.21", "0.5.21", (), V0521, BACKEND_FLAG, OFF_V0512, OVERRIDES, "DeepSeek V4.1 at tp 4 on Blackwell keeps the custom allreduce"),
    FusionRow("0.5.22", "0.5.22", (), V0522, BACKEND_FLAG, OFF_V0512, OVERRIDES, "the attention-DP size, not the flag, blocks it"),
    FusionRow("0.5.23", "0.5.23", MIMO_ARCHS_ORDERED, V0523, BACKEND_FLAG, OFF_V0512, OVERRIDES, "MiMo V2 added with the cutedsl backend on SM10x"),
)
# fmt: on


def _expand(row: FusionRow) -> tuple[str, ...]:
    """"0.5.14".."0.5.17" -> each patch release in between."""
    first, last = parse_release(row.first), parse_release(row.last)
    return tuple(release_text((*first[:2], n)) for n in range(first[2], last[2] + 1))


# Every modelled release, for the release matrix (oldest first); derived from the table, so a new row is all it takes.
RELEASES = tuple(r for row in FUSION_TABLE for r in _expand(row))
NEWEST = RELEASES[-1]
OLDEST = RELEASES[0]


# The releases whose own ServerArgs resolution is stored as a golden (tests/conformance/golden/sglang-X.jsonl, written by
# `python -m conformance sglang X`) and agrees with these rules on every compared field; the conformance test keeps this
# list equal to the goldens. For any other modelled release every decision says it is unchecked.
CHECKED_RELEASES = frozenset({
    "0.5.7", "0.5.8", "0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18",
    "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23",
})  # fmt: skip


def unchecked_note(version: str) -> str | None:
    """A note for every decision when the release applied has no golden, else None."""
    release = rules_release(version)
    if release in CHECKED_RELEASES:
        return None
    return (f"unverified for v{release}: no golden of SGLang v{release}'s own resolution is stored; the nearest checked"
            " releases agree on every field (python -m conformance sglang X checks one)")  # fmt: skip


def row_for(version: str) -> tuple[FusionRow, bool]:
    """The table row for ``version`` and whether the version is newer than the newest modelled release."""
    release = parse_release(version)
    if release is None:
        raise ReleaseError(f"sglang version {version!r} is not a version; pass --engine-version X.Y.Z (e.g. {NEWEST})")
    if release < parse_release(OLDEST):
        raise ReleaseError(
            f"sglang {version} is older than the oldest modelled release v{OLDEST}; pass --engine-version {OLDEST} or newer"
        )
    for row in FUSION_TABLE:
        if within(release, row.first, row.last):
            return row, False
    return FUSION_TABLE[-1], True


def architectures(row: FusionRow) -> tuple[str, ...]:
    """The cumulative architecture list of a row."""
    out: list[str] = []
    for r in FUSION_TABLE:
        out.extend(r.added)
        if r is row:
            break
    return tuple(out)


def rules_release(version: str) -> str:
    """The modelled release whose rules apply to ``version`` ("0.5.15" -> "0.5.15", "0.6.0" -> the newest)."""
    row, newer = row_for(version)
    if newer:
        return NEWEST
    return release_text(parse_release(version))
