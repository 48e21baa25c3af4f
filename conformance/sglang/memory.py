"""Conformance for SGLang's start-up memory: run each release's own KV-pool arithmetic on CPU, write goldens.

Usage: python -m conformance sglang-memory [RELEASE ...]   (default: every modelled release)

For each release the wheel (cached under ~/.cache/tp-advisor/conformance/wheels/, as for the other harnesses) is opened
and the functions that size the KV pool at start-up are taken from its source with ``ast``, unchanged, and run with
fakes only for what a CPU cannot measure or what the rest of the server would have set up:

- v0.5.7-v0.5.9: ``ModelRunnerKVCacheMixin.init_memory_pool`` (and ``profile_max_num_token`` it calls), stopped where it
  starts allocating the pools, after its "Not enough memory" check;
- v0.5.10 and later: ``_resolve_memory_pool_config`` with ``_profile_available_bytes`` (the mixin up to v0.5.15,
  ``KVCacheConfigurator`` in mem_cache/kv_cache_configurator.py from v0.5.16), ``_apply_token_constraints``,
  ``_resolve_max_num_reqs``, the release's ``MemoryPoolConfig`` and ``DefaultPoolConfigurator.calculate_pool_sizes``
  (model_executor/pool_configurator.py from v0.5.11), and from v0.5.18 ``mm_runtime_reservation_gb``;
- then, every release, the asserts of managers/tp_worker.py: "max_running_request is zero" (with the
  ``max_running_requests`` the release computed) and, with the statements computing ``max_req_len``, "Memory pool size
  is too small".

Faked: the free memory after the weights load (``get_available_gpu_memory``), the KV cell size (``get_cell_size_per_token``
or the configurator's ``_cell_size``, which follow the model's shape), the server arguments and the parallel state
(one rank, no pipeline parallelism, no speculative decoding, no hybrid/Mamba pools). Each case is written to
tests/conformance/golden/sglang-memory-<release>.jsonl as its inputs and what the release computed:
``max_total_num_tokens`` or the error it raised (type and message). tests/test_sglang_startup_conformance.py holds
advisor/rules/sglang/startup.py to them.

This module imports only the standard library.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import logging
import math
import sys
import types
import typing
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "conformance" / "golden"
WHEELS = Path.home() / ".cache" / "tp-advisor" / "conformance" / "wheels"
RELEASES = tuple(f"0.5.{n}" for n in range(7, 24))
GIB = 1 << 30

MIXIN = "sglang/srt/model_executor/model_runner_kv_cache_mixin.py"
CONFIGURATOR = "sglang/srt/mem_cache/kv_cache_configurator.py"
POOLS = "sglang/srt/model_executor/pool_configurator.py"
TP_WORKER = "sglang/srt/managers/tp_worker.py"
TOO_SMALL = "Memory pool size is too small"
RUNNING_ZERO = "max_running_request is zero"
RELEASE_MODULE = "conformance_sglang_release"  # the module name the release's functions run under

# The cases: free memory before the weights load and after it (GiB, whole MiB so both sides compute the same floats),
# mem_fraction_static, the KV cell size, page size, --max-total-tokens, the context length, a multimodal model.
CASES = (
    # name, pre, available, fraction, cell, page, max_total_tokens, context_len, multimodal
    ("h100-qwen3-30b-tp2", 78.625, 50.5, 0.828, 49152, 1, None, 40960, False),
    ("h100-llama-8b-tp1-page64", 79.125, 64.125, 0.835, 131072, 64, None, 131072, False),
    ("h200-deepseek-v3-tp8-mla", 138.75, 60.625, 0.86, 70272, 1, None, 163840, False),
    ("max-total-tokens-cap", 78.625, 50.5, 0.828, 49152, 1, 100000, 40960, False),
    ("max-total-tokens-cap-page16", 78.625, 50.5, 0.828, 49152, 16, 100001, 40960, False),
    ("weights-fill-the-budget", 78.625, 0.5, 0.818, 70272, 1, None, 163840, False),
    ("dp-attention-reserve", 78.625, 11.875, 0.592, 192512, 1, None, 40960, False),
    ("budget-below-one-page", 78.625, 14.375, 0.818, 16777216, 64, None, 4096, False),
    ("pool-of-four-tokens", 78.625, 14.375, 0.818, 16777216, 1, None, 4096, False),
    ("pool-of-one-token", 78.625, 14.375, 0.818, 66060288, 1, None, 4096, False),
    ("context-of-one-token", 78.625, 50.5, 0.828, 49152, 1, None, 1, False),
    ("multimodal-qwen3-vl-tp2", 78.625, 50.5, 0.828, 49152, 1, None, 262144, True),
    ("rtx-4090-llama-8b-tp1", 23.0, 7.75, 0.79, 131072, 1, None, 131072, False),
)
KEYS = ("pre_model_load_gib", "available_gib", "mem_fraction_static", "cell_size", "page_size", "max_total_tokens",
        "context_len", "multimodal")  # fmt: skip


class Reached(Exception):
    """Raised where the release starts allocating the pools: its sizing (and its checks) are done."""


class Fake(types.SimpleNamespace):
    """A stand-in whose missing attribute is an error naming it (a fake never answers what it was not told)."""

    def __getattr__(self, name: str):
        raise AttributeError(f"the fake has no {name!r}")


def release_sources(release: str) -> dict[str, str]:
    wheel = next(WHEELS.glob(f"sglang-{release}-*.whl"), None)
    if wheel is None:
        raise SystemExit(f"error: no cached wheel for sglang {release} in {WHEELS}; run `python -m conformance sglang"
                         f" {release}` (it downloads it) first")  # fmt: skip
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        return {path: zf.read(path).decode() for path in (MIXIN, CONFIGURATOR, POOLS, TP_WORKER) if path in names}


# -- taking the release's code ------------------------------------------------------------------------------------


def _function(node: ast.FunctionDef, namespace: dict) -> object:
    """Compile one function of the release as written, its decorators dropped (property kept)."""
    keep = [d for d in node.decorator_list if isinstance(d, ast.Name) and d.id in ("property", "staticmethod")]
    node = ast.FunctionDef(**{**{f: getattr(node, f) for f in node._fields}, "decorator_list": []})
    module = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    exec(compile(module, "<sglang release>", "exec", flags=annotations_flag()), namespace)
    func = namespace.pop(node.name)
    for decorator in keep:
        func = {"property": property, "staticmethod": staticmethod}[decorator.id](func)
    return func


def annotations_flag() -> int:
    import __future__

    return __future__.annotations.compiler_flag


def module_parts(source: str, namespace: dict) -> dict[str, ast.ClassDef]:
    """Put the module's top-level functions and simple constants into ``namespace``; return its classes by name."""
    tree = ast.parse(source)
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            namespace[node.name] = _function(node, namespace)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
        elif isinstance(node, ast.Assign):
            # a constant built from what is not faked is not needed here
            with contextlib.suppress(Exception):
                exec(compile(ast.Module(body=[node], type_ignores=[]), "<sglang release>", "exec"), namespace)
    return classes


def build_class(node: ast.ClassDef, namespace: dict, name: str | None = None, classes: dict | None = None) -> type:
    """The release's class with its methods as written, those of its bases in this module first (decorators dropped)."""
    methods: dict[str, object] = {}
    for base in node.bases:
        if classes and isinstance(base, ast.Name) and base.id in classes:
            methods.update(vars(build_class(classes[base.id], namespace, classes=classes)))
    methods.update({item.name: _function(item, namespace) for item in node.body if isinstance(item, ast.FunctionDef)})
    methods = {k: v for k, v in methods.items() if not k.startswith("__") or k == "__init__"}
    return type(name or node.name, (), methods)


def dataclass_from(node: ast.ClassDef, namespace: dict) -> type:
    """A @dataclass of the release (MemoryPoolConfig), compiled as written."""
    module = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    exec(compile(module, "<sglang release>", "exec", flags=annotations_flag()), namespace)
    return namespace[node.name]


def running_check(source: str) -> list[ast.stmt]:
    """The tp worker's assert that the pool serves any request at all."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and isinstance(node.msg, ast.Constant) and node.msg.value == RUNNING_ZERO:
            return [node]
    raise SystemExit(f"error: no {RUNNING_ZERO!r} assert in {TP_WORKER}")


def tp_worker_check(source: str) -> list[ast.stmt]:
    """The statements of the tp worker from the max_req_len computation to its "too small" assert."""
    for parent in ast.walk(ast.parse(source)):
        body = getattr(parent, "body", None)
        if not isinstance(body, list):
            continue
        for j, stmt in enumerate(body):
            if isinstance(stmt, ast.Assert) and isinstance(stmt.msg, ast.Constant) and stmt.msg.value == TOO_SMALL:
                i = max(k for k in range(j) if "max_req_len" in ast.unparse(body[k]).split("=")[0])
                return body[i : j + 1]
    raise SystemExit(f"error: no {TOO_SMALL!r} assert in {TP_WORKER}")


# -- running it ---------------------------------------------------------------------------------------------------


def run_case(release: str, sources: dict[str, str], case: dict) -> dict:
    """What the release computes for one case: {"max_total_num_tokens": N} or {"error": "Type: message"}."""
    try:
        tokens, running = pool_tokens(release, sources, case)
        check_request_fits(sources[TP_WORKER], tokens, running, case["context_len"])
    except (RuntimeError, ValueError, AssertionError) as exc:
        return {"max_total_num_tokens": None, "error": f"{type(exc).__name__}: {exc}"}
    return {"max_total_num_tokens": tokens, "error": None}


def _globals(case: dict, server_args: Fake) -> dict:
    available = case["available_gib"]
    world = Fake(world_size=1, cpu_group=None)
    sys.modules.setdefault(RELEASE_MODULE, types.ModuleType(RELEASE_MODULE))  # dataclasses look their module up
    namespace = {
        "__name__": RELEASE_MODULE, "math": math, "logging": logging, "logger": logging.getLogger("sglang-release"),
        "gc": types.SimpleNamespace(collect=lambda: 0), "Optional": typing.Optional, "dataclass": dataclasses.dataclass,
        "get_available_gpu_memory": lambda *a, **k: available, "get_world_group": lambda: world,
        "configured_pp_size": lambda: 1,
        "get_schedule": lambda: server_args,
        "get_parallel": lambda: Fake(launch_world_size=1, world_group=world, pp_size=1, attn_dcp_size=1,
                                     attn_dp_size=1),
        "get_exec": lambda: Fake(graph=Fake(cuda_graph_config=Fake(prefill=Fake(full_prefill_max_req=None,
                                                                               backend=None)))),
        "get_disagg": lambda: Fake(disaggregation_mode="null"),
        "get_memory": lambda: Fake(enable_unified_memory=False, disable_radix_cache=False),
        "get_mm": lambda: Fake(mm_feature_transport=None),
        "envs": Fake(SGLANG_VLM_CACHE_SIZE_MB=Fake(get=lambda: 100), SGLANG_MM_FEATURE_CACHE_MB=Fake(get=lambda: 1024)),
    }  # fmt: skip
    return namespace


def pool_tokens(release: str, sources: dict[str, str], case: dict) -> int:
    server_args = Fake(
        max_total_tokens=case["max_total_tokens"], page_size=case["page_size"], max_running_requests=None,
        mem_fraction_static=case["mem_fraction_static"], prefill_max_requests=None, max_mamba_cache_size=None,
        speculative_num_draft_tokens=None, disaggregation_mode="null", pp_size=1, mm_feature_transport=None,
        enable_unified_memory=False, disable_radix_cache=False,
    )  # fmt: skip
    namespace = _globals(case, server_args)
    holder = CONFIGURATOR if CONFIGURATOR in sources and "_profile_available_bytes" in sources[CONFIGURATOR] else MIXIN
    classes = module_parts(sources[holder], namespace)
    pools = {}
    if POOLS in sources:
        pool_namespace = _globals(case, server_args)
        pool_classes = module_parts(sources[POOLS], pool_namespace)
        config_class = dataclass_from(pool_classes["MemoryPoolConfig"], pool_namespace)
        pool_namespace["MemoryPoolConfig"] = config_class
        pools["configurator"] = build_class(pool_classes["DefaultPoolConfigurator"], pool_namespace,
                                            classes=pool_classes)  # fmt: skip
    elif "MemoryPoolConfig" in classes:
        namespace["MemoryPoolConfig"] = dataclass_from(classes["MemoryPoolConfig"], namespace)
    runner_class = build_class(classes["KVCacheConfigurator" if holder == CONFIGURATOR else "ModelRunnerKVCacheMixin"],
                               namespace, "Runner")  # fmt: skip
    context = case["context_len"]
    runner = runner_class()
    runner.__dict__.update(
        server_args=server_args, mem_fraction_static=case["mem_fraction_static"], device="cuda", gpu_id=0,
        is_draft_worker=False, mambaish_config=None, num_effective_layers=1, start_layer=0, end_layer=1, pp_size=1,
        dp_size=1, attn_dp_size=1, is_hybrid_swa=False, page_size=case["page_size"],
        spec_algorithm=Fake(is_none=lambda: True, is_eagle=lambda: False, is_standalone=lambda: False),
        model_config=Fake(context_len=context, is_multimodal=case["multimodal"], hf_config=Fake(architectures=["X"]),
                          full_attention_layer_ids=None),
        post_capture_kv_active=False, ps=Fake(attn_dp_size=1, pp_size=1),
    )  # fmt: skip
    runner_class.get_cell_size_per_token = lambda self, num_layers: case["cell_size"]
    if pools:
        configurator = pools["configurator"].__new__(pools["configurator"])
        configurator.__dict__.update(_cell_size=case["cell_size"], _fixed_overhead_bytes=0, _zero_kv_max_tokens=context)
        fake_module(
            "sglang.srt.model_executor.pool_configurator", create_memory_pool_configurator=lambda r: configurator
        )
    pre = case["pre_model_load_gib"]
    if hasattr(runner_class, "_resolve_memory_pool_config"):
        config = runner._resolve_memory_pool_config(pre)
        return config.max_total_num_tokens, config.max_running_requests
    runner_class.req_to_token_pool = property(lambda self: (_ for _ in ()).throw(Reached()))
    takes_server_args = runner_class.init_memory_pool.__code__.co_argcount == 3  # v0.5.7; v0.5.8-v0.5.9 read self's
    try:
        runner.init_memory_pool(pre, server_args) if takes_server_args else runner.init_memory_pool(pre)
    except Reached as stop:
        return runner.max_total_num_tokens, _local(stop, "init_memory_pool", "max_num_reqs")
    raise SystemExit(f"error: sglang {release}'s init_memory_pool did not reach its pools")


def _local(exc: BaseException, function: str, name: str) -> object:
    """A local variable of the release's ``function`` where ``exc`` stopped it."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == function:
            return tb.tb_frame.f_locals[name]
        tb = tb.tb_next
    raise SystemExit(f"error: {function} is not on the traceback")


def fake_module(name: str, **attrs: object) -> None:
    """Answer the release's function-level import of ``name`` with these attributes."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    sys.modules[name].__dict__.update(attrs)


def check_request_fits(source: str, tokens: int, running: int, context_len: int) -> None:
    """The tp worker's asserts, as written, with a model runner whose pool holds ``tokens`` and serves ``running``
    requests at once: first that it serves any ("max_running_request is zero"), then that one request fits."""
    runner = Fake(max_token_pool_size=tokens, effective_max_total_num_tokens=tokens,
                  effective_logical_max_total_num_tokens=tokens, max_running_requests=running, dcp_size=1)  # fmt: skip
    worker = Fake(model_config=Fake(context_len=context_len), model_runner=runner, ps=Fake(attn_dcp_size=1, dcp_size=1),
                  max_running_requests=running)  # fmt: skip
    for statements in (running_check(source), tp_worker_check(source)):
        module = ast.fix_missing_locations(ast.Module(body=statements, type_ignores=[]))
        exec(compile(module, "<sglang release>", "exec"), {"self": worker})


def golden(release: str) -> list[dict]:
    sources = release_sources(release)
    rows = []
    for name, *values in CASES:
        case = dict(zip(KEYS, values, strict=True))
        rows.append({"release": release, "case": name, "inputs": case, **run_case(release, sources, case)})
    return rows


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    releases = tuple(argv) or RELEASES
    unknown = [r for r in releases if r not in RELEASES]
    if unknown:
        print(f"error: not a modelled release: {', '.join(unknown)}; pick from {RELEASES[0]}..{RELEASES[-1]}",
              file=sys.stderr)  # fmt: skip
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for release in releases:
        rows = golden(release)
        path = GOLDEN / f"sglang-memory-{release}.jsonl"
        path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows), encoding="utf-8")
        errors = sum(row["error"] is not None for row in rows)
        print(f"sglang {release}: {len(rows)} cases ({errors} start-up errors) -> {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
