"""Runs inside the conformance venv (never imported by the project): one GPU type, many scenarios, one SGLang release.

Usage: python runner.py JOB.json OUT.jsonl

JOB.json holds {"groups": [{"gpu": {"name", "memory_mib", "capability", "count"}, "torch_cuda": "12.8", "scenarios":
[...]}]}, each scenario {"id", "config_dir", "argv"}. The GPU is faked where SGLang reads it (torch.cuda, torch.version.cuda and an
``nvidia-smi`` on PATH) before sglang is imported; between groups SGLang's cached device checks are cleared.
Each scenario's ServerArgs is built from its argv by the release's own ``prepare_server_args`` and resolved by the
release's own code (``__post_init__`` up to v0.5.18, ``resolve_once()`` from v0.5.19); the resolved fields and the log
lines are written as one JSON line per scenario.

This file must only import the standard library and what the release itself imports: it runs in SGLang's venv.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import logging
import os
import stat
import sys
import tempfile
import traceback
import types

FIELDS = (
    "enable_flashinfer_allreduce_fusion",
    "flashinfer_allreduce_fusion_backend",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "moe_runner_backend",
    "chunked_prefill_size",
    "cuda_graph_max_bs",
    "mem_fraction_static",
    "disable_custom_all_reduce",
    "ep_size",
    "page_size",
    "enable_piecewise_cuda_graph",
    "disable_piecewise_cuda_graph",
    "piecewise_cuda_graph_max_tokens",
    "enable_dp_attention",
    "dp_size",
    "moe_a2a_backend",
    "quantization",
    # speculative decoding (what the memory reserve and the batch sizes follow) and the request cap it resets
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "max_running_requests",
    "disable_overlap_schedule",
)
# From v0.5.14 the CUDA graphs are one cuda_graph_config with a decode and a prefill phase (the prefill phase is what the
# piecewise settings were); its prefill phase is recorded as cuda_graph_prefill_<key> for the keys the release has.
PREFILL_PHASE_KEYS = ("backend", "max_bs", "max_seq_len")


_GPU: dict = {}  # the GPU the fakes answer for; switched between groups
_SMI_DIR = tempfile.mkdtemp(prefix="fake-nvidia-smi-")


def fake_gpu(gpu: dict, torch_cuda: str) -> None:
    """Make torch (CPU build) and nvidia-smi answer as ``count`` GPUs of this kind."""
    import torch

    _GPU.clear()
    _GPU.update(gpu)
    total = gpu["memory_mib"] * 1024 * 1024
    major, minor = gpu["capability"]
    _GPU["props"] = types.SimpleNamespace(
        name=gpu["name"],
        total_memory=total,
        major=major,
        minor=minor,
        multi_processor_count=gpu.get("sms", 132),
        uuid="GPU-00000000-0000-0000-0000-000000000000",
        is_integrated=False,
        L2_cache_size=50 * 1024 * 1024,
        gcnArchName="",
        warp_size=32,
    )
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: _GPU["count"]
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a, **k: None
    cuda.get_device_capability = lambda device=None: tuple(_GPU["capability"])
    cuda.get_device_name = lambda device=None: _GPU["name"]
    cuda.get_device_properties = lambda device=None: _GPU["props"]
    cuda.mem_get_info = lambda device=None: (_GPU["props"].total_memory - 512 * 1024 * 1024, _GPU["props"].total_memory)
    cuda.is_bf16_supported = lambda *a, **k: True
    torch.version.cuda = torch_cuda

    smi = os.path.join(_SMI_DIR, "nvidia-smi")
    with open(smi, "w") as f:
        # Answers the memory query SGLang makes (one line per GPU, MiB); anything else gets the GPU names.
        lines = "\\n".join([str(gpu["memory_mib"])] * gpu["count"])
        names = "\\n".join([gpu["name"]] * gpu["count"])
        f.write(f'#!/bin/sh\ncase "$*" in *memory.total*) printf "{lines}\\n";; *) printf "{names}\\n";; esac\n')
    os.chmod(smi, os.stat(smi).st_mode | stat.S_IEXEC)
    if _SMI_DIR not in os.environ.get("PATH", ""):
        os.environ["PATH"] = _SMI_DIR + os.pathsep + os.environ.get("PATH", "")


def clear_sglang_caches() -> None:
    """SGLang caches its device checks (functools caches); a new GPU group must not see the last group's answers."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang") or module is None:
            continue
        for value in list(vars(module).values()):
            if callable(getattr(type(value), "cache_clear", None)):  # never getattr on the value: lazy imports load
                with contextlib.suppress(Exception):
                    value.cache_clear()


class _Placeholder:
    """Stands for any torchvision name: SGLang's multimodal helpers touch them at import time, never in resolution."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs):
        return _Placeholder()

    def __getattr__(self, name):
        return _module_attribute(name)

    def __mro_entries__(self, bases):
        return (object,)


def _module_attribute(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Placeholder()


class _PlaceholderModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import-only stand-in for a CUDA-only package (see PLACEHOLDER_PACKAGES)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname, path, target=None):
        if fullname == self.root or fullname.startswith(self.root + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _module_attribute  # type: ignore[attr-defined]
        return module

    def exec_module(self, module) -> None:
        if module.__name__ == self.root:
            module.__version__ = "0.0.0+placeholder"


# CUDA-only packages the release depends on (the harness derives the list from its wheel's Requires-Dist); their PyPI
# wheels cannot load against CPU torch. Resolution imports them and asks whether they exist, never calls them. A package
# the release does not depend on (triton_kernels, for one) stays absent, as in a plain `pip install sglang`.
PLACEHOLDER_PACKAGES: list[str] = []


def stand_in_for_cuda_packages(packages: list[str]) -> None:
    PLACEHOLDER_PACKAGES[:] = packages
    import torch

    # The placeholder kernel packages register no ops, so SGLang's fake-tensor registrations for them are skipped.
    register_fake = torch.library.register_fake

    def lenient_register_fake(op, *args, **kwargs):
        name = op if isinstance(op, str) else ""
        if name.split("::")[0] in PLACEHOLDER_PACKAGES:
            return lambda fn=None, *a, **k: fn
        return register_fake(op, *args, **kwargs)

    torch.library.register_fake = lenient_register_fake
    for root in PLACEHOLDER_PACKAGES:
        try:
            importlib.import_module(root)
        except Exception:
            sys.modules.pop(root, None)
            sys.meta_path.insert(0, _PlaceholderModules(root))


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a log call with bad arguments must not sink the scenario
            self.lines.append(record.getMessage())


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def read_fields(server_args) -> dict:
    try:
        from sglang.srt.arg_groups.overrides import resolution_result
    except ImportError:
        resolution_result = None
    out = {}
    for name in FIELDS:
        if resolution_result is not None:
            value = resolution_result(server_args, name, "<absent>")
        else:
            value = getattr(server_args, name, "<absent>")
        if value == "<absent>" and name == "cuda_graph_max_bs":
            value = _cuda_graph_max_bs(server_args, resolution_result)
        if value != "<absent>":
            out[name] = _plain(value)
    prefill = _cuda_graph_phase(server_args, resolution_result, "prefill")
    for key in PREFILL_PHASE_KEYS:
        value = getattr(prefill, key, "<absent>") if prefill is not None else "<absent>"
        if value != "<absent>":
            out[f"cuda_graph_prefill_{key}"] = _plain(value)
    return out


def _cuda_graph_phase(server_args, resolution_result, phase: str):
    config = resolution_result(server_args, "cuda_graph_config", None) if resolution_result else None
    config = config if config is not None else getattr(server_args, "cuda_graph_config", None)
    return getattr(config, phase, None) if config is not None and not isinstance(config, (str, dict)) else None


def _cuda_graph_max_bs(server_args, resolution_result):
    """Newer releases keep the decode max batch in cuda_graph_config.decode.max_bs."""
    decode = _cuda_graph_phase(server_args, resolution_result, "decode")
    return getattr(decode, "max_bs", "<absent>") if decode is not None else "<absent>"


def capture_logs(collect: Collect) -> None:
    """Every INFO+ record of an sglang logger, whatever handlers or propagation SGLang configures."""
    handle = logging.Logger.handle

    def recording_handle(self, record):
        if self.name.startswith("sglang") and record.levelno >= logging.INFO:
            collect.emit(record)
        return handle(self, record)

    logging.Logger.handle = recording_handle
    logging.getLogger().setLevel(logging.INFO)


def stand_in_remote_config(config_dir: str) -> None:
    """A checkpoint whose config class is remote code (``auto_map``) needs ``--trust-remote-code`` and that file; the
    named grid stores only config.json, so a plain config class with the file's keys as attributes (what such a class
    loads) is registered for a model_type the release's transformers does not know."""
    try:
        with open(os.path.join(config_dir, "config.json")) as f:
            config = json.load(f)
    except (OSError, ValueError):
        return
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or "AutoConfig" not in (config.get("auto_map") or {}):
        return
    from transformers import AutoConfig, PretrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        AutoConfig.register(
            model_type, type(f"RemoteCodeConfig_{model_type}", (PretrainedConfig,), {"model_type": model_type})
        )


def run(job: dict, out_path: str) -> None:
    groups = job["groups"]
    fake_gpu(groups[0]["gpu"], groups[0]["torch_cuda"])
    stand_in_for_cuda_packages(job["placeholders"])
    collect = Collect()
    capture_logs(collect)
    from sglang.srt.server_args import prepare_server_args

    with open(out_path, "w") as out:
        for group in groups:
            fake_gpu(group["gpu"], group["torch_cuda"])
            clear_sglang_caches()
            if group.get("remote_code_stand_in"):
                for scenario in group["scenarios"]:
                    stand_in_remote_config(scenario["config_dir"])
            run_group(group["scenarios"], prepare_server_args, collect, out, group.get("isolate_env", False))


def run_group(scenarios, prepare_server_args, collect, out, isolate_env: bool = False) -> None:
    """``isolate_env``: put os.environ back after each scenario (SGLang sets SGLANG_* variables while resolving, which
    the next scenario would read); the speculative groups run this way, the plain groups as they always have."""
    for scenario in scenarios:
        collect.lines = []
        environ = dict(os.environ) if isolate_env else None
        record: dict = {"id": scenario["id"]}
        try:
            server_args = prepare_server_args(scenario["argv"])
            if hasattr(server_args, "resolve_once"):
                server_args.resolve_once()
            record["fields"] = read_fields(server_args)
        except BaseException as exc:  # SGLang rejects a scenario: that is a result too
            if isinstance(exc, KeyboardInterrupt):
                raise
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            record["error"] = f"{type(exc).__name__}: {message}"[:300]
            if os.environ.get("CONFORMANCE_DEBUG"):
                traceback.print_exc()
        if environ is not None:
            os.environ.clear()
            os.environ.update(environ)
        config_dir, draft_dir = scenario["config_dir"], scenario.get("draft_dir") or "<no draft>"
        lines = [line.replace(draft_dir, "<draft>").replace(config_dir, "<model>") for line in collect.lines]
        record["log"] = [line[:300] for line in lines][:40]
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        run(json.load(f), sys.argv[2])
