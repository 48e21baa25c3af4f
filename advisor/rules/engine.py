"""The vocabulary of rules: conditions, verdicts, decisions and problems.

A decision is a tuple of Conditions (data plus small predicates) evaluated by ``evaluate``, not an if-chain; every
condition is evaluated, never short-circuited, so the user sees every blocker at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from advisor.rules.problem import (
    EngineCommandError,
    Problem,  # noqa: F401  (re-exported: the rules import it from here)
)
from advisor.versions import parse_cuda, parse_release, release_text  # noqa: F401  (the rules import them from here)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from launcher.engines import ReadySignal

# Where a multi-node engine's nodes meet when the launch names no address: node 0's host at torch.distributed's default
# rendezvous port.
DEFAULT_RDZV_PORT = 29500

# Decision states (docs/architecture.md, "Contracts").
AUTO_ENABLED = "auto-enabled"
NOT_ENABLED = "not-enabled"
FORCED_ON = "forced-on"
FORCED_OFF = "forced-off"
UNAVAILABLE = "unavailable"
STATES = (AUTO_ENABLED, NOT_ENABLED, FORCED_ON, FORCED_OFF, UNAVAILABLE)
# The problem every engine raises when the release it models names the model's architecture nowhere (each engine's
# rules/<engine>/architectures.py says what that release then does: default rules, or a refusal).
ARCHITECTURE_NOT_NAMED = "architecture_not_named"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a rule comes from: the release it models, the file, and the PR or issue that explains it."""

    release: str  # "sglang v0.5.14"
    file: str  # "python/sglang/srt/server_args.py"
    ref: str | None = None  # "PR #28786"

    def __str__(self) -> str:
        return f"{self.release}, {self.file}" + (f" ({self.ref})" if self.ref else "")


@dataclass(frozen=True, slots=True)
class ConditionResult:
    """One evaluated condition. ``ok`` is None when the facts needed to decide are unknown."""

    id: str
    text: str  # "GPU is SM90 or SM100"
    ok: bool | None
    observed: Any
    expected: Any
    why: str  # why the condition exists
    fix: str  # how to change the outcome


@dataclass(frozen=True, slots=True)
class Setting:
    """A server argument a decision resolves alongside its value (page_size with the attention backend, ep_size with
    the MoE runner); why it has that value is one of the decision's notes."""

    name: str  # "page_size", as the engine's ServerArgs field is named
    value: Any  # None when the facts needed are unknown


@dataclass(frozen=True, slots=True)
class Decision:
    id: str  # "flashinfer_allreduce_fusion"
    title: str
    state: str  # one of STATES
    enabled: bool
    value: Any = None  # the resolved setting where a decision picks one ("fa3", "auto", {...})
    conditions: tuple[ConditionResult, ...] = ()
    flags: tuple[str, ...] = ()  # engine flags this decision puts on the command line
    source: Source | None = None
    notes: tuple[str, ...] = ()  # what happens at run time, log lines to expect, ordering subtleties
    settings: tuple[Setting, ...] = ()  # other server arguments this step resolves (JSON "settings": {name: value})

    @property
    def failed(self) -> tuple[ConditionResult, ...]:
        return tuple(c for c in self.conditions if c.ok is False)

    @property
    def undecided(self) -> tuple[ConditionResult, ...]:
        return tuple(c for c in self.conditions if c.ok is None)


@dataclass(frozen=True, slots=True)
class ReleaseOutcome:
    """One row of the release matrix: the fusion decision under one modelled release."""

    release: str
    enabled: bool
    failed_conditions: tuple[str, ...] = field(default_factory=tuple)


# -- rules as data ------------------------------------------------------------------------------------------------------
# (Everything above is the shared vocabulary.)


def finite_float(raw: str) -> float:
    """A number as the engines' parsers read one (argparse's ``type=float``), but finite: ``nan`` and ``inf`` parse
    there and then break every size the engine computes with them. ValueError for anything else."""
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{raw!r} is not a finite number")
    return value


def flag_values(tokens: Sequence[str], *names: str, next_flag: str | None = "-") -> list[str | None]:
    """Every value given to any of ``names`` in an engine argument list, in order: the one reading of flags that the
    rules, SGLang's argument check and vLLM's -O use.

    ``--name V`` and ``--name=V`` give V (``--name=`` gives ""); a one-letter flag also takes its value attached, as
    argparse and vLLM do (``-O3``, ``-O=3``). Where ``--name`` has no value, because the line ends or the next token
    starts with ``next_flag`` (it is the next flag), the entry is None. ``next_flag``: "-" reads any dash as the next
    flag (vLLM's short flags such as ``-O3`` are never taken as a value) but a negative number such as ``-5`` as a value,
    as both engines' argparse parsers do; "--" is argparse's reading, where ``-x`` is a value too; None takes whatever
    follows."""
    values: list[str | None] = []
    for i, token in enumerate(tokens):
        for name in names:
            if token == name:
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                ends = nxt is None or (next_flag and nxt.startswith(next_flag) and not _negative_number(nxt))
                values.append(None if ends else nxt)
            elif token.startswith(name + "="):
                values.append(token[len(name) + 1:])
            elif len(name) == 2 and token.startswith(name):  # "-O3": a one-letter flag with its value attached
                values.append(token[2:])
            else:
                continue
            break
    return values


def _negative_number(token: str) -> bool:
    """"-5", "-0.5", "-.5": what argparse takes as a value, not a flag (its _negative_number_matcher)."""
    whole, dot, fraction = token[1:].partition(".")
    if not dot:
        return whole.isdecimal()
    return fraction.isdecimal() and (whole == "" or whole.isdecimal())


def flag_value(tokens: Sequence[str], name: str) -> str | None:
    """The value of ``--name VALUE`` / ``--name=VALUE`` (last occurrence wins); "" for a bare flag; None when absent."""
    values = flag_values(tokens, name)
    if not values:
        return None
    return "" if values[-1] is None else values[-1]


def has_flag(tokens: Sequence[str], name: str) -> bool:
    return flag_value(tokens, name) is not None


def flag_groups(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    """Split a token list into flags with their values: ["--a", "1", "--b"] -> [("--a", "1"), ("--b",)]."""
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") and not _is_number(token) or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return [tuple(g) for g in groups]


def long_option(flag: str, options: frozenset[str]) -> str | None:
    """The long option argparse reads ``flag`` as (allow_abbrev, its default): ``flag`` itself when ``options`` holds it,
    else the one option it is a prefix of; None when it is unknown or a prefix of several (argparse refuses both)."""
    if flag in options:
        return flag
    longer = [option for option in options if option.startswith(flag)]
    return longer[0] if len(longer) == 1 else None


def spell_out_abbreviations(tokens: Sequence[str], options: frozenset[str] | None) -> tuple[str, ...]:
    """``tokens`` with every abbreviation of a long option written as the option (``--mem-frac 0.8`` ->
    ``--mem-fraction-static 0.8``, ``--mem-frac=0.8`` likewise), as argparse's allow_abbrev reads it
    (argparse.ArgumentParser._parse_optional: an exact option first, else the one option the text before "=" starts
    with). A flag that is exact, unknown or ambiguous stays as given; everything after a bare "--" is positional to
    argparse and stays too. ``options``: the release's whole option list; None (not known) changes nothing."""
    if not options:
        return tuple(tokens)
    out: list[str] = []
    for i, token in enumerate(tokens):
        if token == "--":
            return (*out, *tokens[i:])
        name, eq, value = token.partition("=")
        full = long_option(name, options) if token.startswith("--") and len(name) > 2 else None
        out.append(full + eq + value if full else token)
    return tuple(out)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)  # no slots: cached_property keeps its values in the instance's __dict__
class Scenario:
    """What a rule looks at: the machine, the model and the user's intent (advisor.plan.Intent), plus derived facts."""

    facts: Any  # advisor.facts.Facts
    model: Any  # advisor.models.ModelSpec | None
    intent: Any  # advisor.plan.Intent

    @property
    def overrides(self) -> tuple[str, ...]:
        return tuple(self.intent.overrides)

    def flag(self, name: str) -> str | None:
        return flag_value(self.overrides, name)

    def has(self, name: str) -> bool:
        return has_flag(self.overrides, name)

    def int_flag(self, name: str) -> int | None:
        """The flag's value as an int; None when absent, bare or not an integer (the engine's parser refuses those)."""
        raw = self.flag(name)
        if raw:
            try:
                return int(raw)
            except ValueError:
                return None
        return None

    @property
    def tp(self) -> int:
        return self.intent.tp

    @property
    def nnodes(self) -> int:
        return max(1, self.intent.nnodes)

    @property
    def gpus_per_node(self) -> int:
        return self.intent.gpus_per_node

    @property
    def no_gpu(self) -> bool:
        """True when the facts say there is no GPU at all (no driver, no GPUs): a fact, not an unknown."""
        return not self.facts.engine_gpus and not self.facts.driver.available

    @cached_property  # every GPU condition asks; the facts and intent never change under a scenario
    def gpus(self) -> tuple[Any, ...]:
        """The GPUs of one node the engine will use (CUDA order), at most tp / nnodes of them."""
        return tuple(self.facts.engine_gpus[: self.gpus_per_node])

    @cached_property
    def flashinfer(self) -> Any:
        """What ``import flashinfer`` will do (advisor.rules.flashinfer.ImportPrediction), predicted once per scenario."""
        from advisor.rules.flashinfer import predict_import  # that module imports this one

        return predict_import(self.facts)

    @property
    def gpu(self) -> Any | None:
        """The device engines query for capability checks (the current device: the first visible GPU)."""
        return self.gpus[0] if self.gpus else None

    @property
    def capability(self) -> tuple[int, int] | None:
        return self.gpu.capability if self.gpu is not None else None

    @property
    def major(self) -> int | None:
        cap = self.capability
        return cap[0] if cap else None

    @property
    def min_memory_mib(self) -> int | None:
        mems = [g.memory_total_mib for g in self.gpus]
        return min(mems) if mems and all(m is not None for m in mems) else None

    def torch_cuda(self) -> tuple[tuple[int, int] | None, bool]:
        """(torch's CUDA version, known). A CPU build of torch is known to have none."""
        torch = self.facts.package("torch")
        if not torch.installed:
            return None, False
        if torch.cuda:
            cuda = parse_cuda(torch.cuda)
            return cuda, cuda is not None
        return None, "cuda" not in torch.unknown

    @property
    def all_pairs_nvlink(self) -> bool | None:
        indices = [g.index for g in self.gpus]
        if len(indices) < 2:
            return True
        return self.facts.topology.all_pairs_nvlink_p2p(indices)


# A check returns (ok, observed, expected); ok None when the facts it needs are unknown.
if TYPE_CHECKING:
    Check = Callable[[Scenario], tuple]


@dataclass(frozen=True, slots=True)
class Condition:
    """A named condition: a small predicate plus the words that explain it."""

    id: str
    text: str
    check: Check
    why: str
    fix: str

    def evaluate(self, scenario: Scenario) -> ConditionResult:
        ok, observed, expected = self.check(scenario)
        return ConditionResult(self.id, self.text, ok, observed, expected, self.why, self.fix)


def evaluate(conditions: Sequence[Condition], scenario: Scenario) -> tuple[ConditionResult, ...]:
    """Every condition of a decision, never short-circuited: the user sees every blocker at once."""
    return tuple(c.evaluate(scenario) for c in conditions)


# -- checks several engines share (each engine words its own Condition: text, why, fix) ----------------------------


def check_tp_gt_1(s: Scenario) -> tuple:
    return s.tp > 1, f"tp {s.tp}", "tp > 1"


# The world sizes the custom-allreduce kernels of SGLang and vLLM (same lineage) are built for.
CUSTOM_AR_WORLD_SIZES = (2, 4, 6, 8)


def listed(values: Sequence[object]) -> str:
    """(2, 4, 8) -> "2, 4 or 8"."""
    items = [str(v) for v in values]
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else "".join(items)


def check_custom_ar_world_size(s: Scenario) -> tuple:
    return s.tp in CUSTOM_AR_WORLD_SIZES, f"world size {s.tp}", listed(CUSTOM_AR_WORLD_SIZES)


def check_custom_ar_nvlink(s: Scenario) -> tuple:
    """Custom allreduce refuses more than two GPUs unless every pair has NVLink P2P (SGLang and vLLM alike)."""
    if s.tp <= 2:
        return True, f"{s.tp} GPU(s): PCIe P2P suffices", "every pair NVLink P2P when more than 2 GPUs"
    if s.no_gpu:
        return False, "no GPUs", "every pair NVLink P2P OK (NVML) when more than 2 GPUs"
    full = s.all_pairs_nvlink
    observed = {True: "every pair NVLink P2P OK", False: "some pair lacks NVLink P2P", None: "NVLink P2P unknown"}[full]
    return full, observed, "every pair NVLink P2P OK (NVML) when more than 2 GPUs"


def check_peer_access(s: Scenario) -> tuple:
    """Every pair of the node's GPUs has peer-to-peer read and write (NVML's report, the driver's answer to
    cudaDeviceCanAccessPeer). Custom allreduce maps the peers' buffers through CUDA IPC, which needs it."""
    expected = "P2P read and write OK between every pair (NVML)"
    gpus = [g.index for g in s.gpus]
    if s.tp <= 1 or len(gpus) < 2:
        return True, "no GPU pair to connect", expected
    bad, unknown = [], False
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            link = s.facts.topology.pair(a, b)
            if link is None or link.p2p_read is None or link.p2p_write is None:
                unknown = True
            elif link.p2p_read != "OK" or link.p2p_write != "OK":
                bad.append(f"{a}-{b}")
    if bad:
        return False, f"no P2P between GPUs {', '.join(bad)}", expected
    if unknown:
        return None, "P2P not reported for some pair", expected
    return True, "P2P OK between every pair", expected


def fusion_workspace_unmapped(s: Scenario) -> str | None:
    """Why FlashInfer's one-node fusion workspace cannot be created here, or None: it is CUDA IPC memory every rank maps
    (flashinfer comm/trtllm_ar.py), so GPUs without peer-to-peer fail it at start-up and the engines fall back (SGLang
    layers/flashinfer_comm_fusion.py, vLLM AllReduceFusionPass). Across nodes the mnnvl backend decides (not this)."""
    if s.nnodes > 1:
        return None
    ok, observed, _ = check_peer_access(s)
    return observed if ok is False else None


# The condition id of the runtime P2P check: the engine still sets its kernel up when only this one fails.
PEER_ACCESS_CONDITION = "peer_access"


def _before_p2p(results: Sequence[ConditionResult]) -> bool:
    return all(r.ok for r in results if r.id != PEER_ACCESS_CONDITION)


def tries_custom_allreduce(decision: Decision) -> bool:
    """Whether the engine sets its custom allreduce up at start-up: no flag turns it off and every condition but the
    runtime P2P check holds. Without P2P it is then turned off there (the decision says so; p2p_unavailable says how)."""
    return decision.state != FORCED_OFF and _before_p2p(decision.conditions)


def off_at_start_up(results: Sequence[ConditionResult]) -> bool:
    """Only the runtime P2P check fails: the engine sets its custom allreduce up and turns it off at start-up."""
    return _before_p2p(results) and any(r.id == PEER_ACCESS_CONDITION and r.ok is False for r in results)


def custom_ar_conditions(why: dict[str, str], *, one_node: tuple[str, str, str], nvlink_fix: str,
                         p2p_fix: str) -> tuple[Condition, ...]:  # fmt: skip
    """The five conditions of the custom-allreduce kernel SGLang and vLLM share (same lineage), in evaluation order:
    the ones both check in CustomAllreduce.__init__ before the kernel is built, the last their runtime P2P check.

    What the kernel is (its world sizes, the NVLink rule) is worded here once; each engine gives the reasons its own
    source states: ``why`` maps each condition id to its reason, ``one_node`` is (text, expected, fix) of the
    single-node condition in the engine's terms, ``nvlink_fix`` what that engine's users change for full NVLink,
    ``p2p_fix`` what they do when the GPUs lack peer-to-peer."""
    sizes = listed(CUSTOM_AR_WORLD_SIZES)
    node_text, node_expected, node_fix = one_node

    def single_node(s: Scenario) -> tuple:
        return s.nnodes == 1, f"nnodes {s.nnodes}", node_expected

    return (
        Condition("tp_gt_1", "more than one rank", check_tp_gt_1, why["tp_gt_1"], "raise --tp"),
        Condition("single_node", node_text, single_node, why["single_node"], node_fix),
        Condition("world_size", f"world size {sizes}", check_custom_ar_world_size, why["world_size"], f"use tp {sizes}"),
        Condition("full_nvlink", "full NVLink when more than 2 GPUs", check_custom_ar_nvlink, why["full_nvlink"],
                  nvlink_fix),
        Condition(PEER_ACCESS_CONDITION, "peer-to-peer between the GPUs", check_peer_access, why[PEER_ACCESS_CONDITION],
                  p2p_fix),
    )  # fmt: skip


def state_of(results: Sequence[ConditionResult], *, forced_on: bool = False, forced_off: bool = False) -> str:
    """forced-off beats forced-on beats the conditions; any failed condition -> not-enabled; any unknown -> unavailable."""
    if forced_off:
        return FORCED_OFF
    if forced_on:
        return FORCED_ON
    if any(r.ok is False for r in results):
        return NOT_ENABLED
    if any(r.ok is None for r in results):
        return UNAVAILABLE
    return AUTO_ENABLED


def is_enabled(state: str) -> bool:
    return state in (AUTO_ENABLED, FORCED_ON)


def decided(
    decision_id: str,
    title: str,
    state: str,
    conditions: Sequence[ConditionResult],
    source: Source,
    *,
    value: Any = None,
    flags: Sequence[str] = (),
    notes: Sequence[str] = (),
    settings: Sequence[Setting] = (),
) -> Decision:
    """The Decision a rule reached: enabled follows from the state."""
    return Decision(decision_id, title, state, is_enabled(state), value, tuple(conditions), tuple(flags), source,
                    tuple(notes), tuple(settings))  # fmt: skip


def fusion_outcomes(
    fusion_decision: Callable[[Scenario, str], Decision], releases: Sequence[str], s: Scenario
) -> tuple[ReleaseOutcome, ...]:
    """The release matrix (the what-if view): the outcome of an engine's fusion decision for this scenario under each of
    its releases. An engine binds its own two with functools.partial."""
    outcomes = []
    for release in releases:
        decision = fusion_decision(s, release)
        outcomes.append(release_outcome(release, decision.enabled, decision.conditions))
    return tuple(outcomes)


def release_outcome(release: str, enabled: bool, results: Sequence[ConditionResult]) -> ReleaseOutcome:
    """One row of the release matrix: whether the fusion is on under ``release`` and the ids of its failed conditions."""
    return ReleaseOutcome(release, enabled, tuple(r.id for r in results if r.ok is False))


# -- an engine: what the registry (advisor.rules.registry) holds for each one ------------------------------------------


@dataclass(frozen=True, slots=True)
class Release:
    """The engine release one plan models, resolved once (``Engine.resolve``): the version asked for or installed, and
    the modelled release whose rules apply (the same but for a version outside the modelled range)."""

    version: str  # "0.6.0"
    rules: str  # "0.5.23"

    @property
    def newer(self) -> bool:
        """The version is newer than every modelled release: the newest one's rules apply."""
        return parse_release(self.version) > parse_release(self.rules)


class ReleaseError(ValueError):
    """An engine version the engine's tables cannot model; the message is one line naming the fix."""


@dataclass(frozen=True, slots=True)
class Forcing:
    """The engine arguments (after `--`) that force one decision on or off whatever its conditions say."""

    on: tuple[str, ...] = ()  # flags (`--name` or `--name=VALUE`) that force it on
    off: tuple[str, ...] = ()  # flags that force it off
    # A `NAME=True|False` field inside an argument (vLLM's `-cc.pass_config.fuse_allreduce_rms=False`): True forces it on.
    field: str | None = None

    def forces_on(self, tokens: Sequence[str]) -> bool:
        return any(t.split("=", 1)[0] in self.on or self._field(t) is True for t in tokens)

    def forces_off(self, tokens: Sequence[str]) -> bool:
        return any(t.split("=", 1)[0] in self.off or self._field(t) is False for t in tokens)

    def _field(self, token: str) -> bool | None:
        if not self.field or f"{self.field}=" not in token:
            return None
        return token.rsplit("=", 1)[1].strip().lower() in ("true", "1")


@dataclass(frozen=True, slots=True)
class GpuMemory:
    """How an engine sizes GPU memory: its static memory fraction, the KV pool it carves from it, and what goes wrong
    when other processes hold part of a GPU (advisor.layouts, the gpu_memory_in_use check)."""

    fraction: str  # the fraction's ServerArgs field: "mem_fraction_static"; its flag is the dashed form
    # (release) -> the fraction when no flag gives one; None where a decision of the plan computes it at start-up.
    default: Callable[[str | None], float] | None
    # (fraction or None, total MiB, weights MiB per GPU) -> the MiB a GPU must have free at start-up.
    need: Callable[[float | None, float, float], float]
    # (the setting, the GiB needed) -> what happens at start-up when a GPU has less free.
    short: Callable[[str, float], str]
    automatic: str  # how the setting reads when neither a flag nor a default gives the fraction
    source: str  # where the engine checks its memory at start-up
    kv_block: int = 1  # the KV pool is a whole number of blocks of this many tokens
    refuses_short_context: str | None = None  # what it does when one --context-len sequence does not fit the pool
    balance: float | None = None  # it reports unbalanced memory when a rank has less than this share of another's free
    unbalanced: str = ""  # that report, worded for the gpu_memory_in_use warning

    @property
    def flag(self) -> str:
        return "--" + self.fraction.replace("_", "-")


@dataclass(frozen=True, slots=True)
class PeerAccess:
    """What an engine does when GPUs of its TP group lack peer-to-peer while its custom allreduce is on."""

    source: str
    # (what NVML reports, the engine arguments) -> (the problem's severity, message, fix).
    problem: Callable[[str, Sequence[str]], tuple[str, str, str]]


@dataclass(frozen=True, slots=True)
class Engine:
    """One serving engine as the advisor models it; each package under advisor/rules/ exports one as ``ENGINE`` from
    its engine.py, and advisor.rules.registry lists them.

    ``resolve(version)`` is called once per plan: the modelled release whose rules apply and any warning about the
    choice (raises :class:`ReleaseError` for a version the tables cannot model). ``version`` is None for an engine
    without releases. ``decide(scenario, release)`` returns the decisions and the problems they raise under that
    :class:`Release` (its rules, resolved once; its version for warnings about the version itself)."""

    name: str  # "sglang": the --engine value and the plan's engine name
    package: str  # the distribution whose installed version picks the rules ("torch" for the bundled runtime)
    releases: tuple[str, ...]  # the modelled releases, oldest first; () for an engine without releases
    resolve: Callable[[str | None], tuple[str, list[Problem]]]
    decide: Callable[[Scenario, Release], tuple[list[Decision], list[Problem]]]
    # The what-if view: the FlashInfer fusion outcome of a scenario under every modelled release.
    release_matrix: Callable[[Scenario], tuple[ReleaseOutcome, ...]]
    # Builds its argv: (plan, *, mode, extra, python, node_rank, dist_init_addr) -> list[str]. command_line checks the
    # node rank and fills in the rendezvous address first; it raises EngineCommandError (one line naming the fix) for a
    # plan it cannot start.
    command: Callable[..., list[str]]
    install_hint: Callable[[str | None], str]  # (version) -> the pip command that installs it
    dtypes: tuple[str, ...] = ("auto",)  # the --dtype values it accepts
    decision_ids: tuple[str, ...] = ()  # the ids of the decisions it makes (`advisor explain RULE` completes them)
    forcing: dict[str, Forcing] = field(default_factory=dict)  # decision id -> the arguments that force it
    # GPU memory and the KV cache; None: a KV cache preallocated at a fixed size (slots x --max-model-len).
    memory: GpuMemory | None = None
    # The dtype it picks for the device itself, whatever the model's (scenario -> dtype); None: the model's or --dtype.
    device_dtype: Callable[[Scenario], str | None] | None = None
    dp_attention: bool = False  # it has DP attention (`advisor layouts` tries it for MoE models)
    # Runs a demo model when no --model is given, with this many ranks on a machine without GPUs; None: needs a model.
    demo_tp: int | None = None
    # Its own spellings of the tensor-parallel size: read from the arguments after -- when --tp is not given, so the plan
    # adopts `-- --tp-size 4` (advisor.context.resolve); () for an engine whose tp only --tp sets.
    tp_flags: tuple[str, ...] = ()
    # (arguments after --, rules release) -> them as its parser reads them (an abbreviation as the option it stands for,
    # vLLM's --under_scores as --dashes): the plan reads the arguments once this way (advisor.plan.spelled_out), so every
    # rule sees the value the engine takes. None: read as given.
    spell_out: Callable[[tuple[str, ...], str], tuple[str, ...]] | None = None
    dp_flags: tuple[str, ...] = ()  # the same for the data-parallel size, when --dp-size is not given
    kv_notes: tuple[str, ...] = ()  # caveats of the layouts' KV arithmetic for this engine
    # (scenario, release) -> its custom allreduce decision; None: it has no custom allreduce.
    custom_allreduce: Callable[[Scenario, str], Decision] | None = None
    peer_access: PeerAccess | None = None
    # (scenario, release, its decisions) -> advisor.rules.startup.Startup: the memory it carves at start-up and whether
    # it refuses to start; the plan computes it once and every face reads it. None: no start-up model.
    startup: Callable[[Scenario, Release, Sequence[Decision]], Any] | None = None
    # Its flag for the longest sequence (`advisor layouts --context-len` passes it); None: it has none.
    context_flag: str | None = None
    # The id of the problem its rules raise when that flag is above what it derives from the model's config (RoPE
    # scaling, context keys, its env overrides): `advisor layouts --context-len` turns it into a usage error with the
    # engine's own bound. None: layouts holds the flag to the model's max_position_embeddings (the bundled runtime's).
    context_too_long: str | None = None
    cpu_run: str | None = None  # how it runs on a machine without GPUs; None: it needs CUDA GPUs
    # How its start-up log reads (an advisor.verify.parse.LogPatterns, built in its logs.py); None: `advisor verify`
    # cannot read its logs.
    logs: Any = None
    # The package whose known_bugs.json lists its releases' known bugs (advisor.rules.known_bugs reads it); None: none.
    known_bugs: str | None = None

    # -- how it is launched (advisor.launch_prep, `advisor launch`, the app's launch screen) --------------------------
    # It runs in this interpreter (it ships with tp-advisor), whatever --python names for the other engines.
    in_this_interpreter: bool = False
    # Its ranks are known before it starts (one per GPU of the node), so the app opens their log tabs up front; an
    # engine's own ranks otherwise appear as they log.
    ranks_known_up_front: bool = False
    modes: tuple[str, ...] = ()  # the --mode values it takes (the bundled runtime's serve, generate, bench)
    # The environment variables naming directories it writes, checked before a launch (the runtime's model cache).
    directories: tuple[str, ...] = ()
    ready: tuple[ReadySignal, ...] = ()  # the lines it prints once it accepts requests; (): any engine's
    # (plan, python, mode) -> why it cannot start here, naming the fix, or None. Unset: the probed ``package`` decides.
    not_installed: Callable[[Any, str | None, str], str | None] | None = None
    title: str = ""  # how `advisor launch` names it ("bundled runtime"); "": its name
    # (release version or None) -> advisor.rules.multinode.MultiNode: what a scheduler's job file needs (its image,
    # HTTP port, health path, shared memory); None: `advisor launch --on` cannot write a job for it.
    multinode: Callable[[str | None], Any] | None = None

    @property
    def newest(self) -> str | None:
        return self.releases[-1] if self.releases else None

    def command_line(
        self,
        plan: Any,
        *,
        mode: str | None = None,
        extra: Sequence[str] = (),
        python: str | None = None,
        node_rank: int = 0,
        dist_init_addr: str | None = None,
    ) -> list[str]:
        """The argv that starts ``plan`` (an advisor.plan.Plan, which imports this module) on node ``node_rank`` (0
        for single-node plans): the checks every engine shares, then its own ``command``. The rendezvous address
        defaults to node 0's host name at torch's default port."""
        nnodes = max(1, plan.intent.nnodes)
        if not 0 <= node_rank < nnodes:
            raise EngineCommandError(f"node rank {node_rank} is outside 0..{nnodes - 1}; pass a rank below --nnodes")
        addr = dist_init_addr or f"{plan.facts.host.hostname or 'NODE0_HOST'}:{DEFAULT_RDZV_PORT}"
        return self.command(plan, mode=mode, extra=extra, python=python, node_rank=node_rank, dist_init_addr=addr)
