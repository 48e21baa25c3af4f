"""Run inside a release's environment: vLLM's own engine-config resolution over scenarios, on a faked CUDA platform.

    python resolve.py SCENARIOS.json OUT.jsonl

Standalone on purpose (stdlib + the vllm under test): it must not import the advisor, whose facts it checks. Each
scenario is one ``vllm serve`` command line (``argv``) on one faked GPU (``gpu``: name, capability, memory, count).
vLLM parses the argv with its own parser (so a flag a release does not spell fails here), resolves ``VllmConfig`` for
the OpenAI API server usage context, and picks the attention backend through its platform. Nothing touches a GPU:
the platform answers from the scenario, the compiled extension modules are stubbed (config resolution only imports
them for op registration), and flashinfer counts as present (vLLM's wheels depend on flashinfer-python).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import inspect
import io
import json
import logging
import os
import sys
import types
import warnings

GiB = 1 << 30
# The faked host's CPU memory. Up to v0.15.x CacheConfig.verify_with_parallel_config (vllm/config/cache.py) refuses a
# swap space (4 GiB per GPU) over 70% of psutil's total memory, so tp 8 failed on this small build machine; the
# profiles record no host memory, and 8-GPU servers carry 1-2 TiB, where the check never fires.
HOST_MEMORY_BYTES = 2048 * GiB
STUBBED_EXTENSIONS = ("vllm._C", "vllm._C_stable_libtorch", "vllm._moe_C", "vllm.cumem_allocator", "vllm._flashmla_C",
                      "vllm._flashmla_extension_C", "vllm._rocm_C", "vllm.vllm_flash_attn._vllm_fa2_C",
                      "vllm.vllm_flash_attn._vllm_fa3_C")  # fmt: skip


def _stub_extensions() -> None:
    for name in STUBBED_EXTENSIONS:
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules.setdefault(name, module)


class _MissingOps:
    """torch.ops._C and friends without the compiled library: model modules query kernel support at import time."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op: str):
        if op.startswith("__"):
            raise AttributeError(op)
        return _MissingOp(f"{self.name}.{op}")


class _MissingOp:
    """An op that was never loaded: calling it answers False (kernel-support queries); overloads are itself."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args, **kwargs):
        return False

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self


def _stub_ops(torch) -> None:
    """Stand-ins for the compiled op namespaces; fake (meta) kernels registered for ops that were never loaded are
    skipped, as config resolution never runs a kernel."""
    library = torch.library.Library
    for method in ("_register_fake", "impl"):
        original = getattr(library, method)

        def tolerant(self, *args, __original=original, **kwargs):
            try:
                return __original(self, *args, **kwargs)
            except RuntimeError as exc:
                if "does not exist" not in str(exc):
                    raise
                return None

        setattr(library, method, tolerant)
    for name in ("_C", "_C_cache_ops", "_C_custom_ar", "_moe_C", "_vllm_fa2_C", "_vllm_fa3_C", "_flashmla_C",
                 "_C_utils", "_rocm_C", "_qutlass_C"):
        setattr(torch.ops, name, _MissingOps(name))


def _fake_cuda_allocations(torch) -> None:
    """Tensors asked for on the GPU are made on the meta device (shape and dtype, no memory): attention backend modules
    allocate workspaces when the selector imports them (vllm/v1/attention/backends/mla/cutlass_mla.py, SM100Workspace:
    ``torch.empty(..., device="cuda")``), which a CPU torch refuses; config resolution never reads one."""

    def on_meta(factory):
        def make(*args, **kwargs):
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs["device"] = "meta"
            return factory(*args, **kwargs)

        return make

    for name in ("empty", "zeros", "ones", "full", "empty_strided", "arange", "tensor"):
        setattr(torch, name, on_meta(getattr(torch, name)))


class _Gpu:
    """The faked device every platform query answers from (set per scenario)."""

    name = "NVIDIA H100 80GB HBM3"
    capability = (9, 0)
    memory_bytes = 80 * GiB
    count = 8


def _fake_torch_cuda(torch) -> None:
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: _Gpu.count
    cuda.get_device_capability = lambda device=None: _Gpu.capability
    cuda.get_device_name = lambda device=None: _Gpu.name
    cuda.current_device = lambda: 0
    cuda.is_bf16_supported = lambda *a, **k: _Gpu.capability >= (8, 0)

    def properties(device=None):
        return types.SimpleNamespace(name=_Gpu.name, major=_Gpu.capability[0], minor=_Gpu.capability[1],
                                     total_memory=_Gpu.memory_bytes, multi_processor_count=132, uuid="GPU-fake")

    cuda.get_device_properties = properties


def _fake_device_count() -> None:
    """cuda_device_count_stateless (ParallelConfig checks world size against it) asks NVML through torch, cached per
    CUDA_VISIBLE_DEVICES; its cached helper answers the faked count instead, whichever module holds it."""
    import importlib

    for name in ("vllm.utils.torch_utils", "vllm.utils", "vllm.platforms.cuda"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_cuda_device_count_stateless"):
            module._cuda_device_count_stateless = lambda *args, **kwargs: _Gpu.count


def _fake_host_memory() -> None:
    """get_cpu_memory answers the faked host's memory in every module that imported it (vllm.config.cache does)."""
    import importlib

    for name in ("vllm.utils.mem_utils", "vllm.utils", "vllm.config.cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "get_cpu_memory"):
            module.get_cpu_memory = lambda: HOST_MEMORY_BYTES


def _fake_platform():
    """A subclass of the release's own CUDA platform whose device queries answer from _Gpu; installed as current."""
    import vllm.platforms as platforms
    from vllm.platforms import cuda
    from vllm.platforms.interface import DeviceCapability

    base = getattr(cuda, "NonNvmlCudaPlatform", None) or cuda.CudaPlatform

    class FakeCuda(base):
        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return DeviceCapability(*_Gpu.capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return _Gpu.name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return _Gpu.memory_bytes

        @classmethod
        def is_fully_connected(cls, physical_device_ids) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            return _Gpu.count

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return f"GPU-fake-{device_id}"

        @classmethod
        def get_cuda_runtime_major(cls) -> int:
            return 12

        @classmethod
        def is_integrated_gpu(cls, device_id: int = 0) -> bool:
            return False

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return 132

    FakeCuda.__name__ = base.__name__
    platforms._current_platform = FakeCuda()
    return platforms._current_platform


def _fake_triton_configs() -> None:
    """Without triton, vLLM's placeholder makes ``triton.Config(...)`` a decorator stub; v0.33.0's Mamba kernels filter
    their autotune configs by ``num_stages`` at import on a faked SM90 (layers/mamba/ops/ssd_chunk_scan.py), which the
    stub cannot answer. A config object that holds what it was given answers it; no kernel ever runs."""
    try:
        from vllm.triton_utils import importing, triton
    except ImportError:
        return
    if not isinstance(triton, getattr(importing, "TritonPlaceholder", ())):
        return

    class Config:
        def __init__(self, kwargs=None, num_warps=4, num_stages=1, **rest):
            self.kwargs, self.num_warps, self.num_stages = dict(kwargs or {}), num_warps, num_stages
            self.__dict__.update(rest)

    triton.Config = Config


_MISSING_MODULES: list[str] = []  # modules a model class imports that this environment lacks (env.ensure installs them)


def _inspect_in_process() -> None:
    """The registry inspects each model class in a fresh interpreter (registry._run_in_subprocess), which none of the
    fakes here reach: a multimodal class imports torchvision, whose operators a CPU torch lacks, and the inspection
    fails. Run in this process first, under the fakes (each release names the helper the same); where that fails (v0.33.0's
    Mamba layers build triton autotune configs at import, which the fakes break) the release's own subprocess runs it."""
    import vllm.model_executor.models.registry as registry

    in_subprocess = registry._run_in_subprocess
    failed: dict[tuple[str, str], Exception] = {}  # model class -> how its subprocess inspection failed

    def inspect(fn):
        # The registry's lambda closes over the lazily registered model: a class whose inspection failed fails the
        # same way in every later scenario, so the subprocess (a fresh interpreter importing vllm, most of a minute on
        # shared cores) runs once per class.
        lazy = next((c.cell_contents for c in fn.__closure__ or () if hasattr(c.cell_contents, "class_name")), None)
        key = (getattr(lazy, "module_name", ""), getattr(lazy, "class_name", "")) if lazy is not None else None
        if key in failed:
            raise failed[key]
        try:
            return fn()
        except ModuleNotFoundError as exc:  # named in the scenario's error, so the environment build installs it
            _MISSING_MODULES.append(exc.name or "")
            raise
        except Exception:
            try:
                return in_subprocess(fn)
            except Exception as exc:
                if key is not None:
                    failed[key] = exc
                raise

    registry._run_in_subprocess = inspect


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a malformed record must not end the run
            self.lines.append(f"{record.levelname} {record.getMessage()}")


def _plain(value):
    """JSON-friendly: enums by name, everything else as is or str."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = getattr(value, "name", None)
    if name is not None and hasattr(value, "value"):
        return name
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _get(obj, *names, default=None):
    for name in names:
        if obj is not None and hasattr(obj, name):
            return getattr(obj, name)
    return default


def _attention_backend(config) -> str | None:
    """The backend vLLM's selector picks for the model's main attention layers, or an error text."""
    from vllm.config import set_current_vllm_config

    try:
        from vllm.v1.attention.selector import get_attn_backend
    except ImportError:
        from vllm.attention.selector import get_attn_backend
    model = config.model_config
    params = inspect.signature(get_attn_backend).parameters
    kwargs = {}
    values = {
        "head_size": model.get_head_size(),
        "dtype": model.dtype,
        "kv_cache_dtype": config.cache_config.cache_dtype,
        "block_size": config.cache_config.block_size,
        "use_mla": model.use_mla,
        "has_sink": bool(getattr(model.hf_text_config, "sliding_window", None)) and "gpt_oss" in model.hf_config.model_type,
        # DeepSeek sparse attention is an MLA layer's (a Transformers-backend model with an index_topk is not)
        "use_sparse": bool(model.use_mla and getattr(model.hf_text_config, "index_topk", None)),
        "use_mm_prefix": False,
        # per rank, as the attention layer passes it (the sparse MLA order on SM10x changes at 16 heads)
        "num_heads": model.get_num_attention_heads(config.parallel_config),
        "attn_type": None,
    }
    for name, value in values.items():
        if name in params:
            kwargs[name] = value
    if "attn_type" in kwargs:
        del kwargs["attn_type"]
    with set_current_vllm_config(config):
        if hasattr(get_attn_backend, "cache_clear"):
            get_attn_backend.cache_clear()
        inner = getattr(sys.modules[get_attn_backend.__module__], "_cached_get_attn_backend", None)
        if inner is not None and hasattr(inner, "cache_clear"):
            inner.cache_clear()
        backend = get_attn_backend(**kwargs)
    return backend.get_name()


def _record(config, logs: list[str]) -> dict:
    cc = config.compilation_config
    pc = cc.pass_config
    sched = config.scheduler_config
    cache = config.cache_config
    par = config.parallel_config
    model = config.model_config
    world = par.world_size
    max_size = None
    if hasattr(pc, "flashinfer_max_size"):
        max_size = pc.flashinfer_max_size(world)
    fuse = _get(pc, "fuse_allreduce_rms", "enable_fi_allreduce_fusion")
    out = {
        "optimization_level": _plain(_get(config, "optimization_level")),
        "compilation_mode": _plain(_get(cc, "mode", "level")),
        "cudagraph_mode": _plain(_get(cc, "cudagraph_mode")),
        "fuse_allreduce_rms": fuse,
        "fi_allreduce_fusion_max_bytes": max_size,
        "enforce_eager": model.enforce_eager,
        "disable_custom_all_reduce": par.disable_custom_all_reduce,
        "gpu_memory_utilization": cache.gpu_memory_utilization,
        "kv_cache_dtype": cache.cache_dtype,
        "block_size": cache.block_size,
        "enable_prefix_caching": cache.enable_prefix_caching,
        "enable_chunked_prefill": _get(sched, "enable_chunked_prefill", "chunked_prefill_enabled"),
        "max_num_seqs": sched.max_num_seqs,
        "max_num_batched_tokens": sched.max_num_batched_tokens,
        "async_scheduling": _get(sched, "async_scheduling"),
        "max_model_len": model.max_model_len,
        "dtype": _plain(model.dtype).replace("torch.", ""),
        "use_mla": model.use_mla,
        "quantization": model.quantization,
        # What the registry and the config say about the model (the architectures grid reads them)
        "architecture": _get(model, "architecture"),
        "is_hybrid": _get(model, "is_hybrid"),
        "is_attention_free": _get(model, "is_attention_free"),
        "sliding_window": getattr(model.hf_text_config, "sliding_window", None),
    }
    try:
        out["attention_backend"] = _attention_backend(config)
    except Exception as exc:  # recorded: a backend the selector cannot pick is itself an outcome
        out["attention_backend"] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    keep = ("fusion", "allreduce", "custom all", "cuda graph", "cudagraph", "async", "chunked", "prefix caching",
            "attention backend", "using ", "compilation", "disabling", "enabling", "max_num")  # fmt: skip
    out["log"] = sorted({line for line in logs if any(k in line.lower() for k in keep)})[:40]
    return out


_ENVIRON_AT_START: dict[str, str] = {}


def _fresh_envs(start: set[str]) -> None:
    """Each scenario starts as a new `vllm serve` process would: what vLLM wrote into vllm.envs during an earlier one is
    dropped (up to v0.14 CudaPlatform.check_and_update_config sets ``envs.VLLM_ATTENTION_BACKEND = "CUTLASS_MLA"`` for an
    MLA model on SM100, which would force that backend on every later scenario)."""
    import vllm.envs as envs

    for name in set(vars(envs)) - start:
        delattr(envs, name)
    # ... and what it wrote into the process environment (v0.33.0 VllmConfig._maybe_enable_breakable_cudagraph sets
    # VLLM_USE_BREAKABLE_CUDAGRAPH=1 for the architectures it lists, which would turn compilation off for every later one).
    for name in set(os.environ) - set(_ENVIRON_AT_START):
        del os.environ[name]
    os.environ.update(_ENVIRON_AT_START)


def _reason(exc: Exception) -> str:
    """The first line of an error; for pydantic's ValidationError the validator's own message (its second line), cut
    before the list of every supported architecture."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    message = next((line for line in lines if line.startswith("Value error, ")), lines[0] if lines else "")
    message = message.removeprefix("Value error, ").split(" [type=")[0].split(" Supported architectures:")[0]
    return message[:200]


def resolve(scenario: dict, parser, EngineArgs, UsageContext, handler: _LogCapture) -> dict:
    gpu = scenario["gpu"]
    _Gpu.name, _Gpu.capability = gpu["name"], tuple(gpu["capability"])
    _Gpu.memory_bytes, _Gpu.count = int(gpu["memory_gib"] * GiB), gpu["count"]
    handler.lines.clear()
    _MISSING_MODULES.clear()
    try:
        args = parser.parse_args(scenario["argv"])
        engine_args = EngineArgs.from_cli_args(args)
        config = engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    except SystemExit as exc:
        return {"error": f"argv rejected (exit {exc.code})"}
    except Exception as exc:
        missing = f" (No module named '{_MISSING_MODULES[-1]}')" if _MISSING_MODULES else ""
        return {"error": f"{type(exc).__name__}: {_reason(exc)}{missing}"}
    return _record(config, handler.lines)


def main(argv: list[str]) -> int:
    scenarios_path, out_path = argv
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "DEBUG")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cuda")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    warnings.simplefilter("ignore")
    _stub_extensions()
    import torch

    _fake_torch_cuda(torch)
    _fake_cuda_allocations(torch)
    _stub_ops(torch)
    _fake_platform()
    import vllm.utils.flashinfer as vllm_flashinfer

    vllm_flashinfer.has_flashinfer = lambda: True
    _fake_device_count()
    _fake_host_memory()
    _inspect_in_process()
    _fake_triton_configs()
    from vllm.engine.arg_utils import AsyncEngineArgs as EngineArgs
    from vllm.usage.usage_lib import UsageContext

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    handler = _LogCapture()
    # vLLM may (re)apply its logging config at any time, which replaces the handlers of the "vllm" logger; so every
    # record of a vllm.* logger is copied here at the class level instead.
    call_handlers = logging.Logger.callHandlers

    def capture(self, record, __original=call_handlers):
        if record.name.startswith("vllm"):
            handler.emit(record)
        return __original(self, record)

    logging.Logger.callHandlers = capture
    logging.getLogger("vllm").setLevel(logging.DEBUG)
    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    import vllm.envs

    envs_at_start = set(vars(vllm.envs))
    _ENVIRON_AT_START.update(os.environ)
    with open(scenarios_path) as f:
        scenarios = json.load(f)
    with open(out_path, "w") as out:
        for scenario in scenarios:
            _fresh_envs(envs_at_start)
            with contextlib.redirect_stderr(io.StringIO()):
                result = resolve(scenario, parser, EngineArgs, UsageContext, handler)
            out.write(json.dumps({"scenario": scenario["id"], **result}, sort_keys=True) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
