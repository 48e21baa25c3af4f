"""Start-up log fixtures for `advisor verify`, rendered from each release's own code (run by hand; CI reads the output).

    python -m conformance.logs [--sglang-wheels DIR] [--vllm-wheels DIR] [--out tests/fixtures/logs]

For every modelled release whose wheel is cached, the log lines `advisor verify` reads are rendered from the format
strings in that wheel's source: the logger call is found by its fixed text (``"Load weight end."``, ``"KV Cache is
allocated"``, ``"max_total_num_tokens="``, ``"Initializing a V1 LLM engine"``, ...), and its f-string or %-format is
evaluated with the scenario's values (Python's own f-string and % formatting, on the wheel's own expression tree).
SGLang's ``server_args=`` line is the ServerArgs dataclass as that release's code prints it: ``repr`` of the dataclass
(up to v0.5.18) or its ``resolved_dict()`` (v0.5.19+), built from the dataclass field list of the wheel's server_args.py
(nested CudaGraphConfig / PhaseConfig likewise) with the values the conformance harness recorded for the scenario
(tests/conformance/golden/sglang-X.jsonl) and each other field's literal default. vLLM's engine config line is
``VllmConfig.__str__`` of the wheel evaluated the same way with the values of tests/conformance/golden/vllm-X.jsonl, and
the lines that run recorded (attention backend, max model len) are printed with the wheel's logger format.

Two releases no table models are rendered the same way to test the best-effort reading: SGLang 0.4.6.post5 and
vLLM 0.7.3 (the V0 engine), their arguments filled with the oldest modelled release's recorded values; V0's
compilation_config (pydantic model_dump_json of the set fields) holds illustrative values.

The measured figures (the weights' memory, free memory, the KV pool: max_total_num_tokens / "GPU KV cache size") are what
the release itself computes for the scenario's machine, a faked GPU of the stated profile (h100-sxm-8, b200-8): what a
CPU cannot measure (free memory before the load, the weights' bytes, vLLM's activation peak, non-torch and CUDA-graph
memory) is the start-up model's documented estimate, and the KV pool is sized from those by the release's own code
(conformance/sglang/memory.py's run of its pool arithmetic; conformance/vllm/kv_memory.py in the release's venv).
The unmodelled releases keep illustrative figures (SGLang 0.4.6 uses v0.5.7's arithmetic). A field whose default is not
a literal and that no golden records is printed as None, and any expression the renderer has no value for prints as
``<name>`` (listed under "unrendered" in the expected file). Each fixture X.log comes with X.expected.json: the values
put into the log, which the parser must read back (tests/test_verify_fixtures.py), and under "verify" the arguments
`advisor verify` is run with and where the measured figures come from (tests/test_verify_agreement.py).

    python -m conformance.logs --vllm-wheels ~/.cache/tp-advisor/conformance/wheels [--only vllm-0.33.0 ...]
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import json
import logging
import re
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "conformance" / "golden"
CONFIGS = "tests/conformance/configs"
OUT = REPO / "tests" / "fixtures" / "logs"
SGLANG_WHEELS = Path.home() / ".cache" / "tp-advisor" / "conformance" / "wheels"
VLLM_WHEELS = Path.home() / ".cache" / "tp-advisor" / "wheels"
LOG_CALLS = {"info", "warning", "info_once", "warning_once", "debug", "error", "log_info_on_rank0", "rank0_log"}
# Older releases no table models, rendered to test the best-effort reading: (release, the modelled release whose
# recorded values fill in its arguments).
SGLANG_UNMODELLED = (("0.4.6.post5", "0.5.7"),)
VLLM_UNMODELLED = (("0.7.3", "0.12.0"),)  # the V0 engine's log
START = time.struct_time((2026, 11, 2, 9, 0, 0, 0, 306, 0))


# -- reading a wheel ---------------------------------------------------------------------------------------------------


class Wheel:
    """The Python sources of one wheel, read from the zip as text (nothing is imported or installed)."""

    def __init__(self, path: Path, package: str) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.package = package
        self._trees: dict[str, ast.Module] = {}

    def text(self, member: str) -> str:
        return self.zip.read(member).decode("utf-8")

    def tree(self, member: str) -> ast.Module:
        if member not in self._trees:
            self._trees[member] = ast.parse(self.text(member))
        return self._trees[member]

    def members(self, under: str) -> list[str]:
        return [n for n in self.zip.namelist() if n.startswith(under) and n.endswith(".py")]

    def message(self, anchor: str, *, under: str, must: tuple[str, ...] = (), avoid: tuple[str, ...] = ()):
        """The first logger call under ``under`` whose fixed text holds ``anchor`` and every ``must``: (member, the
        message node, the %-arguments)."""
        for member in sorted(self.members(under)):
            if anchor not in self.text(member):
                continue
            for node in ast.walk(self.tree(member)):
                if not isinstance(node, ast.Call) or _call_name(node) not in LOG_CALLS:
                    continue
                args = [a for a in node.args if not (isinstance(a, ast.Name) and a.id == "logger")]
                if not args:
                    continue
                fixed = static_text(args[0])
                if anchor in fixed and all(m in fixed for m in must) and not any(a in fixed for a in avoid):
                    return member, args[0], args[1:]
        raise LookupError(f"{self.path.name}: no logger call with {anchor!r} {must} under {under}")

    def constant(self, anchor: str, *, under: str) -> str:
        """The first string constant under ``under`` that holds ``anchor`` (a message assigned before it is logged)."""
        for member in sorted(self.members(under)):
            if anchor in self.text(member):
                for node in ast.walk(self.tree(member)):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and anchor in node.value:
                        return node.value
        raise LookupError(f"{self.path.name}: no string with {anchor!r} under {under}")

    def dataclass_fields(self, member: str, name: str) -> list[tuple[str, Any]]:
        """The fields of dataclass ``name`` in ``member`` (in order, repr=False ones left out) with their defaults
        where a default is a literal or a constant of a class in the same file; NOT_LITERAL otherwise."""
        tree = self.tree(member)
        constants = _class_constants(tree)
        cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)
        fields = []
        for stmt in cls.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            default: Any = NOT_LITERAL
            node = stmt.value
            if isinstance(node, ast.Call) and _call_name(node) == "field":
                keywords = {k.arg: k.value for k in node.keywords}
                if isinstance(keywords.get("repr"), ast.Constant) and keywords["repr"].value is False:
                    continue
                if "default" in keywords:
                    default = _literal(keywords["default"], constants)
                elif "default_factory" in keywords:
                    factory = ast.unparse(keywords["default_factory"])
                    default = {"list": [], "dict": {}, "set": set(), "tuple": ()}.get(factory, NOT_LITERAL)
            elif node is not None:
                default = _literal(node, constants)
            fields.append((stmt.target.id, default))
        return fields


NOT_LITERAL = object()


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _class_constants(tree: ast.Module) -> dict[str, Any]:
    """``Backend.FULL`` -> "full": the literal class attributes of a module's classes."""
    found = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                with contextlib.suppress(ValueError, SyntaxError, TypeError):
                    found[f"{cls.name}.{stmt.targets[0].id}"] = ast.literal_eval(stmt.value)
    return found


def _literal(node: ast.AST, constants: dict[str, Any]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return constants.get(ast.unparse(node), NOT_LITERAL)


def static_text(node: ast.AST) -> str:
    """The fixed parts of a message (a string, or an f-string's constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return static_text(node.left) + static_text(node.right)
    return ""


# -- rendering a message -----------------------------------------------------------------------------------------------


class Shown:
    """A value printed as given text (a repr the renderer built, an enum, torch.bfloat16)."""

    def __init__(self, text: str, values: Values | None = None) -> None:
        self.text = text
        self._values = values  # its attributes (self.server_args.chunked_prefill_size): looked up there

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_") or self._values is None:
            raise AttributeError(attr)
        return self._values.lookup(attr)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)


@dataclass
class Values:
    """What the expressions of a message evaluate to: every name and attribute looks up ``named`` by its last
    component (``self.model_config.max_model_len`` -> named["max_model_len"]); a call returns what it is called on
    (``get_schedule().chunked_prefill_size``); anything else prints as ``<name>`` and is recorded."""

    named: dict[str, Any]
    unrendered: set[str] = field(default_factory=set)

    def lookup(self, name: str) -> Any:
        if name in self.named:
            return self.named[name]
        return _Unknown(self, name)


class _Unknown:
    def __init__(self, values: Values, name: str) -> None:
        self._values, self._name = values, name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._values.lookup(attr)

    def __call__(self, *args, **kwargs) -> Any:
        return self

    def __getitem__(self, key) -> Any:
        return self

    def _shown(self) -> str:
        self._values.unrendered.add(self._name)
        return f"<{self._name}>"

    def __format__(self, spec: str) -> str:
        return self._shown()

    __repr__ = __str__ = _shown


class _Names(dict):
    """eval's local names: the values, Python's builtins where the values do not have the name."""

    def __init__(self, values: Values) -> None:
        super().__init__()
        self.values = values

    def __missing__(self, name: str) -> Any:
        if name in self.values.named or not hasattr(builtins, name):
            return self.values.lookup(name)
        raise KeyError(name)


def evaluate(node: ast.AST, values: Values) -> Any:
    code = compile(ast.Expression(body=node), "<wheel>", "eval")
    return eval(code, {"__builtins__": builtins}, _Names(values))  # noqa: S307 - the wheel's own format expressions


def render(message: ast.AST, args: list[ast.AST], values: Values) -> str:
    """The message as the release formats it: its f-string evaluated, then ``%`` with its arguments."""
    text = evaluate(message, values) if isinstance(message, (ast.JoinedStr, ast.BinOp)) else static_text(message)
    if args:
        text = text % tuple(evaluate(a, values) for a in args)
    return text


# -- scenarios ---------------------------------------------------------------------------------------------------------

SGLANG_SCENARIOS = ("h100-sxm-8/llama-3.1-8b/tp8/nn1/dp1/none", "b200-8/qwen3-30b-a3b/tp4/nn1/dp1/none")
# Per model: architecture, weights GiB over all ranks (the unmodelled V0 fixture's illustrative figure), context length.
MODELS = {
    "llama-3.1-8b": ("LlamaForCausalLM", 14.96, 131072),
    "qwen3-30b-a3b": ("Qwen3MoeForCausalLM", 56.87, 40960),
    "meta-llama/Llama-3.1-8B-Instruct": ("LlamaForCausalLM", 14.96, 131072),
    "Qwen/Qwen3-30B-A3B": ("Qwen3MoeForCausalLM", 56.87, 40960),
}
VLLM_SCENARIOS = (
    {"profile": "h100-sxm-8", "model": "meta-llama/Llama-3.1-8B-Instruct", "tp": 8, "overrides": []},
    {"profile": "h100-sxm-8", "model": "meta-llama/Llama-3.1-8B-Instruct", "tp": 8, "overrides": ["--max-num-seqs", "64"]},
)  # fmt: skip


def _release_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _wheel(directory: Path, package: str, release: str) -> Path | None:
    found = sorted(directory.glob(f"{package}-{release}-*.whl"))
    return found[0] if found else None


def _stamp(seconds: int, fmt: str) -> str:
    return time.strftime(fmt, time.localtime(time.mktime(START) + seconds))


# -- measured figures: the release's own arithmetic on a faked GPU of the stated profile ---------------------------------

GIB = 2**30


@dataclass(frozen=True)
class Measured:
    """What the engine measures and computes at start-up for one scenario. A CPU loads no weights and runs no forward
    pass, so what the GPU would measure (the weights' memory, the free memory before the load, vLLM's activation peak,
    non-torch and CUDA-graph memory) is the start-up model's documented estimate for the profile's GPU
    (advisor/rules/startup_overhead.py, advisor/rules/<engine>/startup.py ESTIMATES); the KV pool the release sizes from
    those is computed by the release's own code (conformance/sglang/memory.py, conformance/vllm/kv_memory.py)."""

    weights_gib: float  # the weights on one GPU
    free_before_gib: float  # free when the load starts
    available_gib: float  # free after the load (SGLang), or left for the KV cache (vLLM)
    kv_tokens: int  # the release's max_total_num_tokens / num_blocks x block_size
    kv_gib: float  # the pool's bytes
    max_running_requests: int | None = None  # SGLang's _resolve_max_num_reqs (v0.5.10+), when the release computes it
    how: str = ""  # the provenance, written into the expected file


def _plan(engine: str, profile: str, model: str, tp: int, release: str, overrides: tuple[str, ...] = ()):
    from advisor.context import Options, plan_for, resolve

    facts, spec, intent = resolve(Options(profile=profile, model=model, tp=tp, engine=engine, engine_version=release,
                                          overrides=overrides))  # fmt: skip
    return plan_for(facts, spec, intent), spec


def sglang_measured(release: str, arithmetic_of: str, profile: str, model: str, tp: int, recorded: dict) -> Measured:
    """SGLang ``arithmetic_of``'s KV-pool sizing (its own functions, conformance/sglang/memory.py) with the free memory
    and weights a ``profile`` GPU would measure (the start-up model's estimates) and the arguments ``recorded``."""
    from advisor.rules.startup import kv_bytes_per_token
    from advisor.rules.startup_overhead import MIB, free_before_load_mib
    from conformance.sglang import memory

    plan, spec = _plan("sglang", profile, model, tp, arithmetic_of)
    startup = plan.startup
    pre = free_before_load_mib(startup.total_bytes / MIB, tp) * MIB / GIB
    weights = startup.weights_bytes / GIB
    case = {
        "pre_model_load_gib": pre, "available_gib": pre - weights, "mem_fraction_static": recorded["mem_fraction_static"],
        "cell_size": kv_bytes_per_token(spec, tp, 2), "page_size": recorded["page_size"] or 1, "max_total_tokens": None,
        "context_len": spec.max_position_embeddings, "multimodal": False,
    }  # fmt: skip
    sources = memory.release_sources(arithmetic_of)
    outcome = memory.run_case(arithmetic_of, sources, case)
    if outcome["error"]:
        raise SystemExit(f"sglang {arithmetic_of} does not start this scenario: {outcome['error']}")
    tokens, running = memory.pool_tokens(arithmetic_of, sources, case)
    how = (f"max_total_num_tokens: sglang v{arithmetic_of}'s own pool arithmetic (conformance/sglang/memory.py) on a faked"
           f" {profile} GPU: free before load {pre:.3f} GiB and weights {weights:.3f} GiB are the start-up model's"
           " estimates (advisor/rules/startup_overhead.py, weights_bytes_per_gpu)")  # fmt: skip
    return Measured(
        weights,
        pre,
        pre - weights,
        tokens,
        tokens * case["cell_size"] / GIB,
        running if isinstance(running, int) else None,
        how,
    )


def vllm_measured(release: str, scenarios: list[dict], goldens: list[dict]) -> list[Measured]:
    """vLLM ``release``'s KV-cache block count (its own planning code in its conformance venv,
    conformance/vllm/kv_memory.py) for the bytes a profile's GPU would leave for the KV cache: gpu_memory_utilization
    x the GPU less the weights, the activation peak, non-torch and CUDA-graph memory, each the start-up model's
    estimate (advisor/rules/vllm/startup.py ESTIMATES)."""
    from advisor.rules.startup import kv_heads_per_rank, kv_layers
    from conformance.vllm import memory

    items, known = [], []
    for scenario, golden in zip(scenarios, goldens, strict=True):
        plan, spec = _plan("vllm", scenario["profile"], scenario["model"], scenario["tp"], release,
                           tuple(scenario["overrides"]))  # fmt: skip
        startup = plan.startup
        memory_value = plan.decision("memory_defaults").value
        available = int(startup.total_bytes * startup.fraction - startup.weights_bytes - startup.reserve_bytes)
        items.append({"layers": kv_layers(spec), "num_kv_heads": kv_heads_per_rank(spec, scenario["tp"]),
                      "head_size": spec.head_dim, "dtype": golden["dtype"] if golden["kv_cache_dtype"] == "auto" else "fp8",
                      "mla": False, "block_size": memory_value["block_size"], "max_model_len": golden["max_model_len"],
                      "batched_tokens": memory_value["max_num_batched_tokens"], "available": available})  # fmt: skip
        known.append((startup, available))
    results = memory.release_results(release, items, log=logging.info)
    measured = []
    for (startup, available), item, result in zip(known, items, results, strict=True):
        if not result["ok"]:
            raise SystemExit(f"vllm {release} does not start this scenario: {result['message']}")
        how = (f"num_blocks: vllm v{release}'s own KV-cache planning (conformance/vllm/kv_memory.py) for"
               f" {available / GIB:.3f} GiB left on a faked {scenarios[0]['profile']} GPU: its weights, activation peak,"
               " non-torch and CUDA-graph memory are the start-up model's estimates (advisor/rules/vllm/startup.py)")  # fmt: skip
        measured.append(Measured(startup.weights_bytes / GIB, startup.total_bytes / GIB, available / GIB,
                                 result["num_blocks"] * item["block_size"], available / GIB, None, how))  # fmt: skip
    return measured


# -- SGLang ------------------------------------------------------------------------------------------------------------


def sglang_fixture(wheel: Wheel, release: str, golden: dict, measured: Measured) -> tuple[list[str], dict]:
    scenario, recorded = golden["scenario"], golden["fields"]
    model = scenario["model"]
    arch, _, context_len = MODELS[model]
    tp = scenario["tp"]
    weights = round(measured.weights_gib, 2)
    kv_tokens = measured.kv_tokens
    half = round(measured.kv_gib / 2, 2)  # K and V, each half of the pool
    after_pool = round(measured.available_gib - measured.kv_gib, 2)
    graph_max = recorded["cuda_graph_max_bs"]
    capture_bs = [1, 2, 4, 8, *range(16, graph_max + 1, 8)] if graph_max else []
    given = {
        "model_path": f"{CONFIGS}/{model}", "tp_size": tp, "dp_size": scenario["dp_size"], "nnodes": scenario["nnodes"],
        "enable_dp_attention": scenario["dp_attention"], "moe_a2a_backend": scenario["a2a"],
    }  # fmt: skip
    server_args = _server_args(wheel, release, {**recorded, **given})
    values = Values({
        "server_args": server_args, "resolved_dict": lambda: server_args,
        "_server_args_for_logging": lambda _args: server_args,
        "max_total_num_tokens": kv_tokens, "chunked_prefill_size": recorded["chunked_prefill_size"],
        "max_prefill_tokens": 16384,
        "max_running_requests": recorded.get("max_running_requests") or measured.max_running_requests or 4096,
        "context_len": context_len, "device": "cuda", "avail_mem": after_pool, "startup_available_gpu_memory_gb": after_pool,
        "after_avail_memory": round(measured.available_gib, 2), "before_avail_memory": round(measured.free_before_gib, 2),
        "weight_load_mem_usage": weights, "weight_load_time": 4.2,
        "model": type(arch, (), {})(), "dtype": Shown("torch.bfloat16"), "quant_str": "", "tic_total": 0.0,
        "time": type("Clock", (), {"perf_counter": staticmethod(lambda: 4.2)}), "num_tokens": kv_tokens,
        "k_size_GB": half, "v_size_GB": half, "GB": 2**30, "size": kv_tokens, "k_size": half * 2**30,
        "v_size": half * 2**30, "kv_size_GB": round(measured.kv_gib, 2), "capture_bs": capture_bs,
        "post_capture_active": False, "allocation_label": None, "cache_name": "KV Cache",
        "capture_name": "target decode", "graph_backend": {"cuda": "CUDA graph"}, "decode_backend": "full",
        "num_tokens_per_bs": 1, "num_tokens_per_req": 1, "before_mem": 9.5, "after_mem": 8.9, "capture_time": 12.3,
        "memory_usage_gb": 0.6, "mem_usage": 0.6, "capture_bs_list": capture_bs, "self": None,
    })  # fmt: skip
    server_args._values = values
    values.named["self"] = _Unknown(values, "self")
    values.named["runner"] = values.named["model_runner"] = values.named["self"]
    srt = "sglang/srt/"
    messages = [
        (0, "", wheel.message("server_args=", under=srt + "entrypoints/")),
        (8, "TP0", wheel.message("Load weight end.", under=srt, must=("mem usage=",))),
        (9, "TP0", wheel.message("#tokens: ", under=srt + "mem_cache/memory_pool.py", must=("K size",))),
        (10, "TP0", wheel.message("max_total_num_tokens=", under=srt + "managers/")),
        (11, "TP0", _graph_message(wheel, srt)),
        (30, "", wheel.message("The server is fired up and ready to roll!", under=srt + "entrypoints/http_server.py")),
    ]
    lines = [_sglang_line(at, rank, render(node, args, values)) for at, rank, (_, node, args) in messages]
    expected = {
        "engine": "sglang", "tp_size": tp, "model_path": given["model_path"],
        "mem_fraction_static": recorded["mem_fraction_static"], "chunked_prefill_size": recorded["chunked_prefill_size"],
        "cuda_graph_max_bs": graph_max, "attention_backend": recorded["attention_backend"],
        "page_size": recorded["page_size"], "kv_cache_tokens": kv_tokens, "max_total_num_tokens": kv_tokens,
        "context_len": context_len, "weights_gib": weights, "cuda_graph_bs": capture_bs,
        "custom_allreduce_disabled": False if tp > 1 else None,
    }  # fmt: skip
    return lines, {k: v for k, v in expected.items() if v is not None}, sorted(values.unrendered)


def _graph_message(wheel: Wheel, srt: str):
    try:
        return wheel.message("Capture cuda graph bs", under=srt + "model_executor/")
    except LookupError:
        pass
    try:  # v0.5.14-v0.5.21: the sizes in the begin line; v0.5.22+: in the end line
        return wheel.message("Capture ", under=srt + "model_executor/", must=("begin. ", "bs="))
    except LookupError:
        return wheel.message("Capture ", under=srt + "model_executor/", must=("end. ", "bs="))


def _sglang_measured_for(release: str, arithmetic_of: str, golden: dict) -> Measured:
    scenario = golden["scenario"]
    model = str(REPO / CONFIGS / scenario["model"])
    profile = golden["id"].split("/")[0]
    return sglang_measured(release, arithmetic_of, profile, model, scenario["tp"], golden["fields"])


def _sglang_line(seconds: int, rank: str, message: str) -> str:
    """SGLang's logger format (python/sglang/srt/utils/common.py configure_logger: "[%(asctime)s{prefix}] %(message)s",
    datefmt "%Y-%m-%d %H:%M:%S", prefix " TP0" in the scheduler processes)."""
    return f"[{_stamp(seconds, '%Y-%m-%d %H:%M:%S')}{' ' + rank if rank else ''}] {message}"


def _server_args(wheel: Wheel, release: str, values: dict) -> Shown:
    """ServerArgs as the release logs it: the dataclass repr (up to v0.5.18) or resolved_dict() (v0.5.19+)."""
    fields = wheel.dataclass_fields("sglang/srt/server_args.py", "ServerArgs")
    if not fields:  # v0.5.20+: a struct assembled from the namespaces of arg_groups/fields/ (_INPUT_NAMESPACES)
        fields = _namespace_fields(wheel)
    as_dict = _release_key(release) >= (0, 5, 19)
    graph = _cuda_graph_config(wheel, values, as_dict) if any(n == "cuda_graph_config" for n, _ in fields) else None
    chosen: dict[str, Any] = {}
    for name, default in fields:
        if name == "cuda_graph_config":
            chosen[name] = graph
        elif name in values:
            chosen[name] = values[name]
        else:
            chosen[name] = None if default is NOT_LITERAL else default
    if as_dict:
        return Shown(repr(chosen))
    return Shown("ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in chosen.items()) + ")")


def _namespace_fields(wheel: Wheel) -> list[tuple[str, Any]]:
    """The public fields of the namespaces ServerArgs is assembled from, in _INPUT_NAMESPACES order (private
    bookkeeping fields, named with a leading underscore, are left out)."""
    tree = wheel.tree("sglang/srt/server_args.py")
    listing = next(
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_INPUT_NAMESPACES" for t in n.targets)
    )  # fmt: skip
    homes = {}
    for member in wheel.members("sglang/srt/arg_groups/fields/"):
        for node in ast.walk(wheel.tree(member)):
            if isinstance(node, ast.ClassDef):
                homes.setdefault(node.name, member)
    fields = []
    for element in listing.elts:
        name = ast.unparse(element)
        fields += [(n, d) for n, d in wheel.dataclass_fields(homes[name], name) if not n.startswith("_")]
    return fields


def _cuda_graph_config(wheel: Wheel, values: dict, as_dict: bool) -> Any:
    """v0.5.14+: CudaGraphConfig(decode=PhaseConfig(...), prefill=PhaseConfig(...)) from the wheel's dataclasses."""
    member = "sglang/srt/model_executor/cuda_graph_config.py"
    phase_fields = wheel.dataclass_fields(member, "PhaseConfig")
    phases = {
        "decode": {"backend": "full", "max_bs": values.get("cuda_graph_max_bs")},
        "prefill": {"backend": values.get("cuda_graph_prefill_backend"), "max_bs": values.get("cuda_graph_prefill_max_bs")},
    }  # fmt: skip
    built = {}
    for phase, given in phases.items():
        entries = {n: given.get(n, None if d is NOT_LITERAL else d) for n, d in phase_fields}
        built[phase] = (
            entries if as_dict else Shown("PhaseConfig(" + ", ".join(f"{k}={v!r}" for k, v in entries.items()) + ")")
        )
    if as_dict:
        return built
    return Shown(f"CudaGraphConfig(decode={built['decode']!r}, prefill={built['prefill']!r})")


# -- vLLM --------------------------------------------------------------------------------------------------------------


def vllm_fixture(wheel: Wheel, release: str, golden: dict, measured: Measured) -> tuple[list[str], dict]:
    scenario = golden["scenario"]
    model = scenario["model"]
    tp = scenario["tp"]
    max_len = golden["max_model_len"]
    kv_tokens = measured.kv_tokens
    non_default = {"model_tag": model, "model": model, "tensor_parallel_size": tp}
    overrides = list(scenario["overrides"])
    while overrides:
        flag = overrides.pop(0).lstrip("-").replace("-", "_")
        non_default[flag] = int(overrides.pop(0)) if overrides and overrides[0].isdigit() else True
    mode_names = _enum_names(wheel, "vllm/config/compilation.py", "CompilationMode")
    graph_modes = _enum_names(wheel, "vllm/config/compilation.py", "CUDAGraphMode")
    compilation = {
        "mode": Shown(f"<CompilationMode.{mode_names[golden['compilation_mode']]}: {golden['compilation_mode']}>")
    }
    graph_value = graph_modes.get(golden["cudagraph_mode"], golden["cudagraph_mode"])
    compilation["cudagraph_mode"] = Shown(f"<CUDAGraphMode.{golden['cudagraph_mode']}: {graph_value}>")
    named = {
        "model": model, "tokenizer": model, "max_model_len": max_len, "tensor_parallel_size": tp,
        "pipeline_parallel_size": 1, "data_parallel_size": 1, "decode_context_parallel_size": 1,
        "disable_custom_all_reduce": golden["disable_custom_all_reduce"], "quantization": golden["quantization"],
        "enforce_eager": golden["enforce_eager"], "cache_dtype": golden["kv_cache_dtype"], "device": "cuda",
        "dtype": Shown(f"torch.{golden['dtype']}"), "seed": 0, "served_model_name": model,
        "enable_prefix_caching": golden["enable_prefix_caching"], "enable_chunked_prefill": golden["enable_chunked_prefill"],
        "compilation_config": Shown(repr(compilation)), "speculative_config": None, "pooler_config": None,
        "skip_tokenizer_init": False, "tokenizer_mode": "auto", "revision": None, "tokenizer_revision": None,
        "trust_remote_code": False, "download_dir": None, "load_format": "auto", "model_memory_usage": measured.weights_gib * 2**30,
        "consumed_memory": measured.weights_gib * 2**30, "available_kv_cache_memory_bytes": measured.kv_gib * 2**30,
        "time_after_load": 9.1, "time_before_load": 4.0, "num_tokens": kv_tokens, "max_concurrency": kv_tokens / max_len,
        "pools": "GPU", "num_tokens_str": f"{kv_tokens:,}", "max_model_len_str": f"{max_len:,}",
        "VLLM_VERSION": release, "dcp_comm_backend": None, "enable_return_routed_experts": False,
        "quantization_config": None, "aux_output_config": None, "device_type": "cuda", "GiB_bytes": 2**30, "GiB": lambda b: b / 2**30, "format_gib": lambda b: f"{b / 2**30:.2f}",
    }  # fmt: skip
    values = Values(named)
    vllm_config = render(*_method_return(wheel, "vllm/config/vllm.py", "VllmConfig", "__str__"), values)
    named["vllm_config"] = Shown(vllm_config)
    named["non_default_args"] = non_default
    named["redact_sensitive_args"] = lambda args: args
    try:
        _, node, args = wheel.message("vLLM API server version", under="vllm/entrypoints/openai/")
        version_line = render(node, args, values)
    except LookupError:  # later releases: log_version_and_model, its plain form (VLLM_DISABLE_LOG_LOGO or no formatter)
        version_line = wheel.constant("vLLM server version %s, serving model %s", under="vllm/entrypoints/") % (
            release,
            model,
        )
    messages = [
        ("APIServer", "INFO", wheel.message("non-default args", under="vllm/entrypoints/")),
        ("EngineCore_DP0", "INFO", wheel.message("Initializing a V1 LLM engine", under="vllm/v1/engine/core.py")),
    ]
    lines = [_vllm_line(wheel, 0, "APIServer", "INFO", version_line)]
    lines += [
        _vllm_line(wheel, i, proc, level, render(n, a, values))
        for i, (proc, level, (_, n, a)) in enumerate(messages, 1)
    ]
    for i, recorded in enumerate(golden["log"]):  # what the conformance run of this release logged, as it logged it
        level, _, text = recorded.partition(" ")
        if level == "INFO":
            lines.append(_vllm_line(wheel, 3 + i, "EngineCore_DP0", level, text))
    worker = "Worker_TP0" if _release_key(release) >= (0, 20, 0) else "VllmWorker rank=0"
    measured_lines = (
        (20, worker, "Model loading took", "vllm/v1/worker/gpu_model_runner.py"),
        (21, worker, "Available KV cache memory", "vllm/v1/worker/gpu_worker.py"),
        (22, "EngineCore_DP0", "KV cache size: %s tokens", "vllm/v1/core/kv_cache_utils.py"),
    )
    shown = {}  # the figures as the release's format prints them (v0.12 "%.4f GiB", later "%.2f")
    for at, process, anchor, under in measured_lines:
        _, node, args = wheel.message(anchor, under=under)
        text = render(node, args, values)
        shown[anchor] = float(re.search(r"(-?[\d.]+) ?GiB", text).group(1)) if "GiB" in text else None
        lines.append(_vllm_line(wheel, at, process, "INFO", text))
    if _release_key(release) < (0, 30, 0):
        _, node, args = wheel.message("Maximum concurrency for", under="vllm/v1/core/kv_cache_utils.py")
        lines.append(_vllm_line(wheel, 24, "EngineCore_DP0", "INFO", render(node, args, values)))
    lines.append(_vllm_line(wheel, 40, "APIServer", "INFO", "Application startup complete."))
    expected = {
        "engine": "vllm", "release": release, "model": model, "tensor_parallel_size": tp,
        "max_model_len": max_len, "enforce_eager": golden["enforce_eager"], "kv_cache_dtype": golden["kv_cache_dtype"],
        "enable_prefix_caching": golden["enable_prefix_caching"], "compilation_mode": golden["compilation_mode"],
        "cudagraph_mode": golden["cudagraph_mode"], "attention_backend": golden["attention_backend"],
        "weights_gib": shown["Model loading took"], "kv_cache_tokens": kv_tokens,
        "kv_cache_gib": shown["Available KV cache memory"],
        **{k: v for k, v in non_default.items() if k not in ("model_tag",)},
    }  # fmt: skip
    if not any("attention backend" in x for x in golden["log"]):  # logged by the worker, which the run did not start
        expected.pop("attention_backend")
    return lines, expected, sorted(values.unrendered)


def vllm_v0_fixture(wheel: Wheel, release: str, golden: dict) -> tuple[list[str], dict, list[str]]:
    """The V0 engine's start-up (v0.7): args: Namespace(...), the V0 config line, weights in GB, blocks, not tokens.
    The arguments' values are those the modelled release ``golden`` recorded; the Namespace holds only the given ones."""
    scenario = golden["scenario"]
    model, tp = scenario["model"], scenario["tp"]
    _, weights_total, _ = MODELS[model]
    weights = round(weights_total / tp, 4)
    blocks, max_len = 125000, golden["max_model_len"]
    named = {
        "model": model, "tokenizer": model, "max_model_len": max_len, "tensor_parallel_size": tp,
        "pipeline_parallel_size": 1, "disable_custom_all_reduce": golden["disable_custom_all_reduce"],
        "quantization": None, "enforce_eager": golden["enforce_eager"], "cache_dtype": golden["kv_cache_dtype"],
        "device": Shown("cuda"), "dtype": Shown(f"torch.{golden['dtype']}"), "seed": 0, "served_model_name": model,
        "enable_prefix_caching": False, "chunked_prefill_enabled": golden["enable_chunked_prefill"],
        "speculative_config": None, "skip_tokenizer_init": False, "tokenizer_mode": "auto", "revision": None,
        "tokenizer_revision": None, "trust_remote_code": False, "download_dir": None, "load_format": Shown("auto"),
        "num_scheduler_steps": 1, "multi_step_stream_outputs": True, "use_async_output_proc": True,
        "disable_mm_preprocessor_cache": False, "mm_processor_kwargs": None, "override_neuron_config": None,
        "pooler_config": None, "compilation_config": Shown('{"level":0,"splitting_ops":[],"cudagraph_capture_sizes":[]}'),
        "VLLM_VERSION": release, "use_cached_outputs": False, "model_memory_usage": weights * 2**30,
        "device_name": "cuda", "num_gpu_blocks": blocks, "num_cpu_blocks": 2048,
        "max_concurrency": blocks * 16 / max_len, "args": Shown(f"Namespace(model_tag={model!r}, model={model!r},"
                                                                f" tensor_parallel_size={tp})"),
    }  # fmt: skip
    values = Values(named)
    named["vllm_config"] = Shown(render(*_method_return(wheel, "vllm/config.py", "VllmConfig", "__str__"), values))
    found = (
        (0, "INFO", "vLLM API server version", "vllm/entrypoints/openai/", ()),
        (1, "INFO", "args: %s", "vllm/entrypoints/openai/api_server.py", ()),
        (2, "INFO", "Initializing a V0 LLM engine", "vllm/engine/llm_engine.py", ()),
        (9, "INFO", "Using Flash Attention backend.", "vllm/platforms/cuda.py", ()),
        (20, "INFO", "Loading model weights took", "vllm/worker/model_runner.py", ()),
        (22, "INFO", " blocks: %d, # CPU blocks", "vllm/executor/executor_base.py", ()),
        (23, "INFO", "Maximum concurrency for", "vllm/executor/executor_base.py", ()),
    )
    lines = []
    for at, level, anchor, under, _ in found:
        _, node, args = wheel.message(anchor, under=under)
        text = render(node, args, values)
        stamp = _stamp(at, "%m-%d %H:%M:%S")
        lines.append(
            f"{level} {stamp} {Path(under).name if under.endswith('.py') else 'api_server.py'}:{100 + at}] {text}"
        )
    lines.append(f"INFO {_stamp(40, '%m-%d %H:%M:%S')} launcher.py:80] Application startup complete.")
    expected = {
        "engine": "vllm", "release": release, "model": model, "tensor_parallel_size": tp, "max_model_len": max_len,
        "enforce_eager": golden["enforce_eager"], "attention_backend": "FLASH_ATTN", "weights_gib": weights,
        "kv_cache_blocks": blocks, "compilation_mode": 0,
    }  # fmt: skip
    return lines, expected, sorted(values.unrendered)


def _enum_names(wheel: Wheel, member: str, name: str) -> dict:
    """An enum's value -> name (CompilationMode) or name -> value text (CUDAGraphMode), from the wheel's class."""
    cls = next(n for n in ast.walk(wheel.tree(member)) if isinstance(n, ast.ClassDef) and n.name == name)
    found: dict = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            try:
                value = ast.literal_eval(stmt.value)
            except (ValueError, SyntaxError):
                continue
            target = stmt.targets[0].id
            if isinstance(value, int):
                found[value] = target
            else:
                found[target] = repr(value) if not isinstance(value, tuple) else repr(value)
    return found


def _method_return(wheel: Wheel, member: str, cls_name: str, method: str) -> tuple[ast.AST, list]:
    cls = next(n for n in ast.walk(wheel.tree(member)) if isinstance(n, ast.ClassDef) and n.name == cls_name)
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method)
    ret = next(n for n in ast.walk(func) if isinstance(n, ast.Return))
    return ret.value, []


def _vllm_line(wheel: Wheel, seconds: int, process: str, level: str, message: str) -> str:
    """vLLM's logger format (vllm/logger.py _FORMAT: "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s
    [%(fileinfo)s:%(lineno)d] %(message)s" in the newer releases; older ones without the process part, which the engine
    core's output then gains as a prefix), datefmt "%m-%d %H:%M:%S"."""
    stamp = _stamp(seconds, "%m-%d %H:%M:%S")
    pid = 4100 + len(process)
    return f"({process} pid={pid}) {level} {stamp} [core.py:{100 + seconds}] {message}"


# -- messy variants: what real logs add ----------------------------------------------------------------------------


def messy_variants(name: str, lines: list[str], expected: dict) -> dict[str, tuple[str, dict, list[str]]]:
    """Variants of a rendered log (file name -> text, expected, notes expected): ANSI colours and CRLF with other
    ranks interleaved; two start-ups where the second is cut short; a server_args line truncated mid-way."""
    colored = []
    for line in lines:
        colored.append(f"\x1b[32m{line}\x1b[0m")
        if " TP0]" in line:  # the other ranks print their own weights and pool lines
            colored.append("\x1b[32m" + line.replace(" TP0]", " TP3]").replace("mem usage=", "mem usage=") + "\x1b[0m")
    variants = {f"{name}.ansi-crlf": ("\r\n".join(colored) + "\r\n", expected, [])}
    cut = len(lines) // 2
    two_runs = lines + lines[:cut]
    variants[f"{name}.two-runs"] = ("\n".join(two_runs) + "\n", expected, ["reading run 1"])
    timestamped = [f"2026-11-02T09:00:{i:02d}.000000Z {line}" for i, line in enumerate(lines)]
    variants[f"{name}.kubectl"] = ("\n".join(timestamped) + "\n", expected, [])
    return variants


# -- main --------------------------------------------------------------------------------------------------------------


def write(
    out: Path, name: str, text: str, expected: dict, notes: list[str], unrendered: list[str], verify: dict | None = None
) -> None:
    """X.log and X.expected.json; ``verify``: the machine and release `advisor verify` is run with on it ("args") and
    where its measured figures come from ("measured")."""
    (out / f"{name}.log").write_bytes(text.encode("utf-8"))
    body = {"observed": expected, "notes": notes, "unrendered": unrendered}
    if verify:
        body["verify"] = verify
    (out / f"{name}.expected.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.logs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sglang-wheels", type=Path, default=SGLANG_WHEELS)
    parser.add_argument("--vllm-wheels", type=Path, default=VLLM_WHEELS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", default=None, metavar="ENGINE-RELEASE",
                        help="render only these, e.g. vllm-0.33.0 sglang-0.5.23 (default: every release)")  # fmt: skip
    args = parser.parse_args(argv)
    wanted = (lambda engine, release: f"{engine}-{release}" in args.only) if args.only else (lambda *_: True)
    sys.path.insert(0, str(REPO))
    from advisor.rules.sglang.releases import RELEASES as SGLANG_RELEASES
    from advisor.rules.vllm.common import VERIFIED as VLLM_RELEASES

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for release in filter(lambda r: wanted("sglang", r), SGLANG_RELEASES):
        path = _wheel(args.sglang_wheels, "sglang", release)
        if path is None:
            logging.warning("sglang %s: no wheel in %s; skipped", release, args.sglang_wheels)
            continue
        wheel = Wheel(path, "sglang")
        goldens = {g["id"]: g for g in map(json.loads, (GOLDEN / f"sglang-{release}.jsonl").open())}
        for scenario in SGLANG_SCENARIOS:
            golden = goldens[scenario]
            measured = _sglang_measured_for(release, release, golden)
            lines, expected, unrendered = sglang_fixture(wheel, release, golden, measured)
            name = f"sglang-{release}-{scenario.split('/')[1]}-tp{golden['scenario']['tp']}"
            # SGLang's log does not name its release: verify is told it.
            verify = {
                "args": ["--profile", scenario.split("/")[0], "--engine-version", release],
                "measured": measured.how,
            }
            write(args.out, name, "\n".join(lines) + "\n", expected, [], unrendered, verify)
            written += 1
            if scenario == SGLANG_SCENARIOS[0] and release in ("0.5.7", "0.5.14", "0.5.23"):
                for variant, (text, exp, notes) in messy_variants(name, lines, expected).items():
                    write(args.out, variant, text, exp, notes, unrendered, verify)
                    written += 1
    for release, values_of in filter(lambda r: wanted("sglang", r[0]), SGLANG_UNMODELLED):
        path = _wheel(args.sglang_wheels, "sglang", release)
        if path is None:
            logging.warning("sglang %s: no wheel in %s; skipped", release, args.sglang_wheels)
            continue
        goldens = {g["id"]: g for g in map(json.loads, (GOLDEN / f"sglang-{values_of}.jsonl").open())}
        golden = goldens[SGLANG_SCENARIOS[0]]
        measured = _sglang_measured_for(release, values_of, golden)
        lines, expected, unrendered = sglang_fixture(Wheel(path, "sglang"), release, golden, measured)
        name = f"sglang-{release}-unmodelled-llama-3.1-8b-tp8"
        write(args.out, name, "\n".join(lines) + "\n", expected, [], unrendered)
        written += 1
    for release in filter(lambda r: wanted("vllm", r), VLLM_RELEASES):
        path = _wheel(args.vllm_wheels, "vllm", release)
        if path is None:
            logging.warning("vllm %s: no wheel in %s; skipped", release, args.vllm_wheels)
            continue
        wheel = Wheel(path, "vllm")
        goldens = list(map(json.loads, (GOLDEN / f"vllm-{release}.jsonl").open()))
        chosen = [next(g for g in goldens if g["scenario"] == scenario) for scenario in VLLM_SCENARIOS]
        for scenario, golden, measured in zip(
            VLLM_SCENARIOS, chosen, vllm_measured(release, list(VLLM_SCENARIOS), chosen), strict=True
        ):
            lines, expected, unrendered = vllm_fixture(wheel, release, golden, measured)
            suffix = "-".join(o.lstrip("-") for o in scenario["overrides"])
            name = f"vllm-{release}-llama-3.1-8b-tp{scenario['tp']}" + (f"-{suffix}" if suffix else "")
            verify = {"args": ["--profile", scenario["profile"]], "measured": measured.how}
            write(args.out, name, "\n".join(lines) + "\n", expected, [], unrendered, verify)
            written += 1
            if not scenario["overrides"] and release in ("0.12.0", "0.33.0"):
                for variant, (text, exp, notes) in messy_variants(name, lines, expected).items():
                    write(args.out, variant, text, exp, notes, unrendered, verify)
                    written += 1
    for release, values_of in filter(lambda r: wanted("vllm", r[0]), VLLM_UNMODELLED):
        path = _wheel(args.vllm_wheels, "vllm", release)
        if path is None:
            logging.warning("vllm %s: no wheel in %s; skipped", release, args.vllm_wheels)
            continue
        golden = next(g for g in map(json.loads, (GOLDEN / f"vllm-{values_of}.jsonl").open())
                      if g["scenario"] == VLLM_SCENARIOS[0])  # fmt: skip
        lines, expected, unrendered = vllm_v0_fixture(Wheel(path, "vllm"), release, golden)
        write(
            args.out,
            f"vllm-{release}-unmodelled-v0-llama-3.1-8b-tp8",
            "\n".join(lines) + "\n",
            expected,
            [],
            unrendered,
        )
        written += 1
    logging.info("wrote %d fixtures to %s", written, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
