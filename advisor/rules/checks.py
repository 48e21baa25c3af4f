"""Compatibility checks: what will break (or silently degrade) for this machine, model and intent.

Each check returns Problems (id, severity error|warning|info, message, fix, source, and the packages the problem is
about, which the package table marks). Problem ids are stable (see docs/architecture.md, "Contracts"). Every check degrades when the facts it needs are unknown: it skips, or says what it
cannot check and why; none of them raises.

Ground truth: /work/shared/docs/flashinfer.md, gpus.md, sglang.md, vllm-nvml-torchrun.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from advisor.facts import Facts, Gpu
from advisor.models import ModelSpec, dtype_bytes
from advisor.rules import flashinfer as fi
from advisor.rules.checks_machine import MACHINE_CHECKS
from advisor.rules.engine import Problem, parse_cuda
from launcher.runtime.contract import FUSION_MAJORS_BEFORE_SM12, FUSION_MAX_TOKENS

if TYPE_CHECKING:  # advisor.plan imports this module
    from advisor.plan import Intent

ERROR, WARNING, INFO = "error", "warning", "info"
GIB = 1024**3
MIB = 1024**2

# Engine flags that force the fusion off / on (SGLang names, sglang.md "CLI flags"; vLLM's pass config and eager mode).
FORCE_OFF_FLAGS = ("--enforce-disable-flashinfer-allreduce-fusion", "--enforce-eager")
FORCE_ON_FLAGS = ("--enable-flashinfer-allreduce-fusion", "--flashinfer-allreduce-fusion-backend")
VLLM_FUSION_FIELD = "fuse_allreduce_rms="  # -cc.pass_config.fuse_allreduce_rms=True|False

KV_CACHE_MIN_SHARE = 0.10  # below this share of GPU memory left after weights, the KV cache is starved
FP8_BLOCK = 128  # block-quantized fp8 checkpoints (DeepSeek/Qwen style) use 128x128 weight blocks


def run_checks(facts: Facts, model: ModelSpec | None, intent: Intent, *, fusion: bool | None = None,
               prediction: fi.ImportPrediction | None = None,
               custom_allreduce: bool | None = None) -> list[Problem]:  # fmt: skip
    """Every compatibility check, in a stable order.

    ``fusion`` is the plan's fusion decision when known (enabled or not); None lets the checks estimate whether an engine
    would try FlashInfer's fused allreduce from the GPUs, tp and the installed flashinfer. ``prediction``: the plan's
    ``predict_import(facts)`` when it already has one. ``custom_allreduce``: the plan's custom allreduce decision
    (None: the machine checks estimate it).
    """
    if prediction is None:
        prediction = fi.predict_import(facts)
    context = _Context(facts, model, intent, prediction, fusion, custom_allreduce)
    problems: list[Problem] = []
    for check in CHECKS:
        try:
            problems.extend(check(context))
        except Exception as exc:  # a check bug must not hide every other finding
            problems.append(
                Problem(
                    id="check_failed",
                    severity=INFO,
                    message=f"check {check.__name__.removeprefix('check_')} could not run: {type(exc).__name__}: {exc}",
                    fix="report this to tp-advisor with `advisor probe -o facts.json` attached",
                    source="advisor/rules/checks.py",
                )
            )
    return problems


class _Context:
    def __init__(self, facts: Facts, model: ModelSpec | None, intent: Intent, prediction: fi.ImportPrediction,
                 fusion: bool | None, custom_allreduce: bool | None = None) -> None:  # fmt: skip
        self.facts = facts
        self.custom_allreduce = custom_allreduce
        self.model = model
        self.intent = intent
        self.prediction = prediction
        self.fusion_decided = fusion

    @property
    def tp_per_node(self) -> int:
        return self.intent.gpus_per_node

    @property
    def gpus_used(self) -> tuple[Gpu, ...]:
        return self.facts.engine_gpus[: self.tp_per_node]

    @property
    def dtype(self) -> str | None:
        dtype = self.intent.dtype if self.intent.dtype not in (None, "auto") else None
        return dtype or (self.model.dtype if self.model else None)

    def forced_on(self) -> bool:
        return any(o.split("=", 1)[0] in FORCE_ON_FLAGS or _vllm_fusion(o) is True for o in self.intent.overrides)

    def forced_off(self) -> bool:
        return any(o.split("=", 1)[0] in FORCE_OFF_FLAGS or _vllm_fusion(o) is False for o in self.intent.overrides)

    def fusion(self) -> bool | None:
        """Would an engine try FlashInfer's fused allreduce here? The plan's decision when given, else an estimate."""
        if self.fusion_decided is not None:
            return self.fusion_decided
        if self.forced_off():
            return False
        if self.intent.tp < 2 or self.intent.dp_attention:
            return False
        pred = self.prediction
        if pred.importable is False or pred.has_fusion_api is False:
            return False
        if self.dtype and dtype_bytes(self.dtype) not in (2, None):
            return False
        if self.tp_per_node < 2 and self.intent.nnodes == 1:
            return False
        gpus = self.gpus_used
        majors = {g.capability[0] for g in gpus if g.capability}
        if majors and not majors <= set(pred.fusion_majors or FUSION_MAJORS_BEFORE_SM12):
            return False
        if pred.importable is None or not gpus or any(g.capability is None for g in gpus):
            return None
        return True


# -- flashinfer ----------------------------------------------------------------------------------------------------


def check_flashinfer_import(ctx: _Context) -> list[Problem]:
    """flashinfer_version_mismatch (and friends): what `import flashinfer` does with the installed trio."""
    return list(ctx.prediction.problems)


def check_jit_cache_cuda(ctx: _Context) -> list[Problem]:
    """flashinfer_jit_cache_cuda_mismatch: AOT kernels built for another CUDA than torch's."""
    jit = ctx.facts.package(fi.JIT_CACHE)
    torch = ctx.facts.package("torch")
    if not jit.installed or not torch.installed:
        return []
    label = jit.local_label or (jit.version.split("+", 1)[1] if jit.version and "+" in jit.version else None)
    jit_cuda = fi.label_cuda(label)
    torch_cuda = parse_cuda(torch.cuda)
    src = "flashinfer-jit-cache local label; flashinfer's installer CLI (docs/flashinfer.md)"
    about = (fi.JIT_CACHE, "torch")
    if jit_cuda is None:
        return [_cannot("flashinfer_jit_cache_cuda_mismatch", f"the CUDA variant of flashinfer-jit-cache {jit.version}",
                        "its version has no cuXXX label", src, about)]  # fmt: skip
    if torch_cuda is None:
        if fi.torch_is_cpu_only(ctx.facts):
            return []  # a CPU torch loads no CUDA kernels at all
        return [_cannot("flashinfer_jit_cache_cuda_mismatch", "torch's CUDA version",
                        torch.unknown.get("cuda", "not probed"), src, about)]  # fmt: skip
    torch_label = fi.cuda_label(torch.cuda)
    if jit_cuda[0] != torch_cuda[0] or jit_cuda > torch_cuda:
        why = "another CUDA major" if jit_cuda[0] != torch_cuda[0] else "a newer CUDA than torch's runtime"
        return [
            Problem(
                id="flashinfer_jit_cache_cuda_mismatch",
                severity=WARNING,
                message=(
                    f"flashinfer-jit-cache {jit.version} holds kernels built for CUDA {jit_cuda[0]}.{jit_cuda[1]} ({why})"
                    f" but torch {torch.version} runs CUDA {torch.cuda}: flashinfer does not compare them at import, so the"
                    " AOT kernels fail to load and flashinfer JIT-compiles instead (needs nvcc; minutes per kernel)"
                ),
                fix=(
                    f"install the jit-cache built for torch's CUDA: `pip install 'flashinfer-jit-cache=={jit.base_version}"
                    f"+{torch_label}' --extra-index-url {fi.INDEX_URL.format(label=torch_label)}` (flashinfer's installer"
                    " picks the largest label with the same major that is <= torch's CUDA)"
                ),
                source=src,
                packages=about,
            )
        ]
    return []


def check_torch_cuda_vs_driver(ctx: _Context) -> list[Problem]:
    """torch_cuda_vs_driver: a torch built for CUDA X needs a driver whose CUDA version is >= X."""
    torch = ctx.facts.package("torch")
    driver = ctx.facts.driver
    if not driver.available or not torch.installed or fi.torch_is_cpu_only(ctx.facts):
        return []
    src = "CUDA driver compatibility (NVIDIA CUDA Compatibility guide: a toolkit needs a driver of at least its version); nvmlSystemGetCudaDriverVersion"
    torch_cuda, driver_cuda = parse_cuda(torch.cuda), parse_cuda(driver.cuda_version)
    if torch_cuda is None:
        return [_cannot("torch_cuda_vs_driver", "torch's CUDA version", torch.unknown.get("cuda", "not probed"), src,
                        ("torch",))]  # fmt: skip
    if driver_cuda is None:
        reason = driver.unknown.get("cuda_version", "not probed")
        return [_cannot("torch_cuda_vs_driver", "the driver's CUDA version", reason, src, ("torch",))]
    if torch_cuda <= driver_cuda:
        return []
    if torch_cuda[0] > driver_cuda[0]:
        return [
            Problem(
                id="torch_cuda_vs_driver",
                severity=ERROR,
                message=(
                    f"torch {torch.version} is built for CUDA {torch.cuda} but driver {driver.version} supports CUDA"
                    f" {driver.cuda_version}: a newer CUDA major needs a newer driver, so torch will see no GPU"
                    " (torch.cuda.is_available() is False, or 'driver too old')"
                ),
                fix=(
                    f"upgrade the NVIDIA driver to one supporting CUDA {torch.cuda}, or install a torch built for CUDA"
                    f" {driver_cuda[0]}.x (e.g. `pip install torch --index-url https://download.pytorch.org/whl/"
                    f"cu{driver_cuda[0]}{driver_cuda[1]}`)"
                ),
                source=src,
                packages=("torch",),
            )
        ]
    return [
        Problem(
            id="torch_cuda_vs_driver",
            severity=WARNING,
            message=(
                f"torch {torch.version} is built for CUDA {torch.cuda}, newer than driver {driver.version}'s CUDA"
                f" {driver.cuda_version}: minor-version compatibility usually lets it run, but PTX JIT and kernels"
                " compiled at run time (flashinfer JIT, triton) can fail with 'unsupported toolchain'"
            ),
            fix=f"upgrade the driver to one supporting CUDA {torch.cuda}, or use a torch built for CUDA {driver.cuda_version}",
            source=src,
            packages=("torch",),
        )
    ]


def check_flashinfer_gpu_arch(ctx: _Context) -> list[Problem]:
    """flashinfer_gpu_arch: the GPU's capability major vs the majors flashinfer builds its fusion kernels for."""
    pred = ctx.prediction
    if not pred.installed or ctx.intent.tp < 2:
        return []
    gpus = ctx.gpus_used
    if not gpus:
        return []
    src = f"flashinfer-python {pred.version}: trtllm allreduce fusion kernels (docs/flashinfer.md)"
    unknown = [g for g in gpus if g.capability is None]
    if unknown:
        return [_cannot("flashinfer_gpu_arch", f"the compute capability of GPU {unknown[0].index}",
                        unknown[0].unknown.get("capability", "not probed"), src, (fi.PYTHON,))]  # fmt: skip
    majors = sorted({g.capability[0] for g in gpus})
    outside = [m for m in majors if m not in pred.fusion_majors]
    if not outside:
        return []
    names = ", ".join(sorted({f"{g.name or 'GPU'} (SM{g.capability[0]}{g.capability[1]})" for g in gpus
                              if g.capability[0] in outside}))  # fmt: skip
    built = ", ".join(f"SM{m}x" for m in pred.fusion_majors)
    if 12 in outside:
        fix = "upgrade flashinfer-python to >= 0.6.17 (adds SM12x fusion kernels), or accept plain allreduce"
    else:
        fix = f"nothing to do: engines use plain NCCL allreduce + RMSNorm here; fusion needs {built} GPUs"
    return [
        Problem(
            id="flashinfer_gpu_arch",
            severity=WARNING if ctx.forced_on() else INFO,
            message=(
                f"{names}: flashinfer-python {pred.version} builds its fused allreduce + RMSNorm kernels for {built}"
                " only, so no engine will fuse the allreduce on these GPUs"
                + (" (the fusion flag you passed has no effect)" if ctx.forced_on() else "")
            ),
            fix=fix,
            source=src,
            packages=(fi.PYTHON,),
        )
    ]


# -- tensor parallelism vs the machine and the model ---------------------------------------------------------------


def check_tp_vs_gpus(ctx: _Context) -> list[Problem]:
    """tp_exceeds_gpus: tp (per node) vs the GPUs an engine can see after CUDA_VISIBLE_DEVICES."""
    intent, facts = ctx.intent, ctx.facts
    src = "torchrun/engine launch: one rank per visible GPU"
    if intent.tp < 1 or intent.nnodes < 1:
        return [Problem("tp_exceeds_gpus", ERROR, f"tp {intent.tp} over {intent.nnodes} node(s) is not a valid layout",
                        "use --tp >= 1 and --nnodes >= 1", src)]  # fmt: skip
    if intent.tp % intent.nnodes:
        return [
            Problem(
                "tp_exceeds_gpus", ERROR,
                f"tp {intent.tp} cannot be split evenly over {intent.nnodes} nodes (each node runs tp / nnodes ranks)",
                f"pick a tp that is a multiple of {intent.nnodes}", src,
            )
        ]  # fmt: skip
    if not facts.driver.available:
        return []  # no_gpus says what happens instead
    if not facts.gpus and facts.driver.unknown:
        return [_cannot("tp_exceeds_gpus", "how many GPUs there are", next(iter(facts.driver.unknown.values())), src)]
    visible = len(facts.engine_gpus)
    need = ctx.tp_per_node
    if need <= visible:
        return []
    cvd = facts.environment.get("CUDA_VISIBLE_DEVICES")
    hidden = facts.visible_gpus is not None and visible < len(facts.gpus)
    per_node = f" per node ({intent.tp} over {intent.nnodes} nodes)" if intent.nnodes > 1 else ""
    message = f"tp {intent.tp} needs {need} GPUs{per_node} but the engine sees {visible}"
    if hidden or cvd is not None:
        message += f" (CUDA_VISIBLE_DEVICES={cvd!r} hides {len(facts.gpus) - visible} of the {len(facts.gpus)} GPUs)"
        fix = f"widen CUDA_VISIBLE_DEVICES to {need} GPUs, or lower --tp to {max(visible, 1)}"
    else:
        fix = f"lower --tp to at most {visible * intent.nnodes}, or add nodes with --nnodes"
    return [Problem("tp_exceeds_gpus", ERROR, message, fix, src)]


def check_tp_divisibility(ctx: _Context) -> list[Problem]:
    """tp_not_divisible: tp must split heads, kv heads (or replicate them), intermediate sizes and (with EP) experts."""
    model, intent = ctx.model, ctx.intent
    if model is None or intent.tp < 2:
        return []
    tp = intent.tp
    attn_tp = tp // intent.dp_size if intent.dp_attention and intent.dp_size > 1 and tp % intent.dp_size == 0 else tp
    attn_label = f"attention tp {attn_tp} (tp {tp} / dp {intent.dp_size})" if attn_tp != tp else f"tp {tp}"
    src = "column/row-parallel sharding (SGLang/vLLM linear layers, sglang fused_moe under TP)"
    problems: list[Problem] = []

    def bad(message: str, fix: str) -> None:
        problems.append(Problem("tp_not_divisible", ERROR, message, fix, src))

    def divisors(n: int) -> str:
        return ", ".join(str(d) for d in range(2, n + 1) if n % d == 0 and d <= 16) or "1"

    heads, kv = model.num_heads, model.num_kv_heads
    if heads is None or heads <= 0:
        problems.append(_cannot("tp_not_divisible", f"{model.id}'s attention heads", "config has no num_attention_heads",
                                src))  # fmt: skip
    elif heads % attn_tp:
        bad(f"{attn_label} does not divide {model.id}'s {heads} attention heads (each rank holds heads / tp)",
            f"use a tp that divides {heads}: {divisors(heads)}")  # fmt: skip
    if kv is not None and kv > 0 and kv != heads:
        if attn_tp > kv:
            if attn_tp % kv:
                bad(f"{attn_label} is larger than {model.id}'s {kv} KV heads and not a multiple of it, so KV heads"
                    " cannot be replicated evenly", f"use a tp that divides or is a multiple of {kv}")  # fmt: skip
            else:
                problems.append(
                    Problem(
                        "tp_not_divisible", INFO,
                        f"{attn_label} exceeds {model.id}'s {kv} KV heads: each KV head is replicated on"
                        f" {attn_tp // kv} ranks, so every rank stores one whole KV head and the KV cache takes"
                        f" {attn_tp // kv}x the memory of an even split",
                        "nothing to fix; a smaller tp or DP attention stores less duplicate KV cache", src,
                    )
                )  # fmt: skip
        elif kv % attn_tp:
            bad(f"{attn_label} does not divide {model.id}'s {kv} KV heads",
                f"use a tp that divides {kv}: {divisors(kv)}")  # fmt: skip
    if model.intermediate_size and model.intermediate_size % tp:
        bad(f"tp {tp} does not divide {model.id}'s intermediate size {model.intermediate_size} (the MLP's gate/up"
            " projections are split column-wise)", f"use a tp that divides {model.intermediate_size}")  # fmt: skip
    moe_tp = tp
    ep = intent.moe_a2a_backend not in (None, "", "none")
    if model.num_experts and model.moe_intermediate_size and not ep:
        per_rank = model.moe_intermediate_size / moe_tp
        if model.moe_intermediate_size % moe_tp:
            bad(f"tp {tp} does not divide {model.id}'s MoE intermediate size {model.moe_intermediate_size}: under TP"
                " every expert's intermediate dimension is split across ranks (SGLang fused MoE, ep_size 1)",
                f"use a tp that divides {model.moe_intermediate_size}, or expert parallelism (--moe-a2a-backend)")  # fmt: skip
        elif (model.quantization or "").lower() == "fp8" and per_rank % FP8_BLOCK:
            problems.append(
                Problem(
                    "tp_not_divisible", WARNING,
                    f"tp {tp} leaves {int(per_rank)} of {model.id}'s MoE intermediate size {model.moe_intermediate_size}"
                    f" per rank, not a multiple of the fp8 weight block {FP8_BLOCK}: block-quantized fp8 checkpoints"
                    " then fail to load ('not divisible by weight quantization block_n')",
                    f"use a tp with (moe intermediate size / tp) a multiple of {FP8_BLOCK}, or expert parallelism",
                    src,
                )
            )  # fmt: skip
    if model.num_experts and ep and model.num_experts % tp:
        bad(f"with --moe-a2a-backend {intent.moe_a2a_backend} experts are distributed (ep_size = tp_size = {tp}), but"
            f" tp {tp} does not divide {model.id}'s {model.num_experts} experts",
            f"use a tp that divides {model.num_experts}")  # fmt: skip
    return problems


# -- memory --------------------------------------------------------------------------------------------------------


def weight_bytes_per_param(dtype: str | None, quantization: str | None) -> float | None:
    """Bytes per parameter of the checkpoint as loaded (quantized formats: an estimate including scales)."""
    quant = (quantization or "").lower()
    if quant:
        if "fp4" in quant or quant in ("awq", "gptq", "w4a16", "int4", "awq_marlin", "gptq_marlin", "bitsandbytes"):
            return 0.5625
        if "fp8" in quant or quant in ("int8", "w8a8", "w8a8_int8", "w8a8_fp8", "modelopt", "fbgemm_fp8"):
            return 1.0
        return None
    return dtype_bytes(dtype)


def check_weights_fit(ctx: _Context) -> list[Problem]:
    """weights_exceed_memory: weights per GPU (+ the fusion workspace when fusion is on) vs the smallest GPU."""
    model, intent = ctx.model, ctx.intent
    if model is None or not ctx.facts.driver.available or not ctx.gpus_used:
        return []
    src = "estimate: num_params x bytes per param / tp (+ FlashInfer fusion workspace, docs/flashinfer.md)"
    if not model.num_params:
        return [_cannot("weights_exceed_memory", f"whether {model.id} fits", "its parameter count is unknown", src)]
    per_param = weight_bytes_per_param(ctx.dtype, model.quantization)
    if per_param is None:
        what = f"quantization {model.quantization!r}" if model.quantization else f"dtype {ctx.dtype!r}"
        return [_cannot("weights_exceed_memory", f"whether {model.id} fits", f"unknown bytes per parameter for {what}",
                        src)]  # fmt: skip
    memories = [g.memory_total_mib for g in ctx.gpus_used]
    if any(m is None for m in memories):
        return [_cannot("weights_exceed_memory", "GPU memory", "NVML did not report the memory of every GPU", src)]
    smallest = min(memories) * MIB
    weights = model.num_params * per_param / max(intent.tp, 1)
    workspace = 0
    if ctx.fusion() and model.hidden_size:
        workspace = fi.fusion_workspace_bytes(ctx.tp_per_node, model.hidden_size, FUSION_MAX_TOKENS)
    needed = weights + workspace
    parts = f"{_gib(weights)} of weights ({model.num_params / 1e9:.1f}B params x {per_param:g} B / tp {intent.tp})"
    if workspace:
        parts += f" + {_gib(workspace)} FlashInfer fusion workspace = {_gib(needed)}"
    if needed > smallest:
        fit_tp = next((t for t in (2, 4, 8, 16, 32, 64) if model.num_params * per_param / t + workspace < smallest * 0.9),
                      None)  # fmt: skip
        return [
            Problem(
                "weights_exceed_memory", ERROR,
                f"{parts} per GPU exceeds the smallest GPU's {_gib(smallest)}: loading will run out of"
                " memory",
                (f"raise --tp to {fit_tp} (across nodes if needed)" if fit_tp else "use more GPUs")
                + ", or use a quantized checkpoint (fp8 halves bf16 weights)",
                src,
            )
        ]  # fmt: skip
    left = smallest - needed
    if left < KV_CACHE_MIN_SHARE * smallest:
        return [
            Problem(
                "weights_exceed_memory", WARNING,
                f"{parts} per GPU leaves {_gib(left)} of {_gib(smallest)} ({left / smallest:.0%}) for"
                " the KV cache, CUDA graphs and activations: the engine may refuse to start or serve tiny batches",
                "raise --tp, or use a quantized checkpoint", src,
            )
        ]  # fmt: skip
    return []


# -- topology and platform -----------------------------------------------------------------------------------------


def check_multicast(ctx: _Context) -> list[Problem]:
    """no_multicast_for_fusion: FlashInfer's fusion workspace needs NVSwitch multicast on a multi-GPU node."""
    if ctx.tp_per_node < 2 or not ctx.facts.driver.available or len(ctx.gpus_used) < 2:
        return []
    if ctx.fusion() is not True or ctx.prediction.importable is False:
        return []  # no fusion attempted, or flashinfer never imports (reported by flashinfer_version_mismatch)
    topo = ctx.facts.topology
    src = "flashinfer create_allreduce_fusion_workspace; SGLang/vLLM fall back on failure (docs/flashinfer.md)"
    if topo.nvswitch is None:
        return [_cannot("no_multicast_for_fusion", "whether NVSwitch multicast is available",
                        topo.unknown.get("nvswitch", "NVLink remote device types not probed"), src)]  # fmt: skip
    if topo.nvswitch:
        return []
    nvlink = any((link.nvlinks or 0) > 0 for link in topo.links)
    via = "an NVLink bridge without NVSwitch" if nvlink else "PCIe only"
    return [
        Problem(
            "no_multicast_for_fusion", WARNING,
            f"these GPUs connect through {via}, so NVLink multicast is unavailable: creating FlashInfer's fused allreduce"
            " workspace will fail; SGLang and vLLM log the error and fall back to plain allreduce + RMSNorm (no speed-up)",
            "nothing to fix for correctness; to avoid the failed attempt pass"
            " --enforce-disable-flashinfer-allreduce-fusion (SGLang) or -cc.pass_config.fuse_allreduce_rms=False (vLLM);"
            " fusion needs an NVSwitch (HGX) node",
            src,
        )
    ]  # fmt: skip


def check_pynvml(ctx: _Context) -> list[Problem]:
    """unofficial_pynvml: the `pynvml` wrapper distribution beside (or instead of) NVIDIA's nvidia-ml-py."""
    wrapper = ctx.facts.package("pynvml")
    if not wrapper.installed:
        return []
    official = ctx.facts.package("nvidia-ml-py")
    beside = f"beside nvidia-ml-py {official.version}" if official.installed else "without nvidia-ml-py"
    # the wrapper is what is wrong; NVIDIA's nvidia-ml-py is only part of the problem when it is missing
    about = ("pynvml",) if official.installed else ("pynvml", "nvidia-ml-py")
    return [
        Problem(
            "unofficial_pynvml", WARNING,
            f"the unofficial `pynvml` distribution {wrapper.version} is installed {beside}: both provide the `pynvml`"
            " module, and the wrapper's old copies shadow NVIDIA's bindings (missing newer calls such as fabric info);"
            " recent wrappers only warn that they are deprecated",
            "`pip uninstall -y pynvml && pip install -U --force-reinstall nvidia-ml-py`",
            "vLLM / SGLang requirements: nvidia-ml-py (docs/nvml-and-torchrun.md)",
            about,
        )
    ]  # fmt: skip


def check_no_gpus(ctx: _Context) -> list[Problem]:
    """no_gpus: no NVIDIA driver (a fact, not an error for the bundled runtime)."""
    driver = ctx.facts.driver
    if driver.available:
        return []
    reason = driver.reason or "NVML unavailable"
    if ctx.intent.engine == "bundled":
        return [
            Problem(
                "no_gpus", INFO,
                f"{reason}, so no GPU: the bundled runtime will run on CPU with torch.distributed gloo"
                " (no NCCL, no FlashInfer fusion)",
                "nothing to fix to try it here; run on a GPU node for real speed", "advisor probe (NVML)",
            )
        ]  # fmt: skip
    return [
        Problem(
            "no_gpus", WARNING,
            f"{reason}, so no GPU: {ctx.intent.engine} needs CUDA GPUs; the plan only explains what it would do",
            "run on a GPU node, or use --engine bundled to try the runtime on CPU", "advisor probe (NVML)",
        )
    ]  # fmt: skip


def check_mig(ctx: _Context) -> list[Problem]:
    """mig_enabled: MIG partitions a GPU; NVLink P2P, custom allreduce and the fusion workspace do not work across them."""
    mig = [g for g in ctx.gpus_used if g.mig_mode == "enabled"]
    if not mig:
        return []
    return [
        Problem(
            "mig_enabled", WARNING,
            f"MIG is enabled on GPU {', '.join(str(g.index) for g in mig)}: CUDA sees MIG instances, not whole GPUs,"
            " and tensor parallelism across them gets no NVLink P2P, custom allreduce or FlashInfer fusion",
            "disable MIG (`sudo nvidia-smi -i <index> -mig 0`, then reset the GPU) for tensor-parallel serving",
            "nvmlDeviceGetMigMode (docs/nvml-and-torchrun.md)",
        )
    ]  # fmt: skip


def check_engine_installed(ctx: _Context) -> list[Problem]:
    """sglang_not_installed / vllm_not_installed / torch_not_installed: the chosen engine is missing here."""
    engine = ctx.intent.engine
    name = {"sglang": "sglang", "vllm": "vllm", "bundled": "torch"}.get(engine)
    if name is None:
        return []
    pkg = ctx.facts.package(name)
    if pkg.installed:
        return []
    if pkg.unknown:
        return [_cannot(f"{name}_not_installed", f"whether {name} is installed", next(iter(pkg.unknown.values())),
                        "importlib.metadata", (name,))]  # fmt: skip
    from launcher.engines import install_command  # one home for install hints (`advisor launch` names the same)

    live = ctx.facts.source == "live"
    if engine == "bundled":
        if not live:
            return []
        return [Problem("torch_not_installed", WARNING,
                        "torch is not installed in the probed Python: the bundled runtime cannot start",
                        f"`{install_command('bundled')}` (installs a CUDA torch on GPU nodes)", "importlib.metadata",
                        (name,))]  # fmt: skip
    version = ctx.intent.engine_version
    rules = f"version {version}" if version else "the newest modelled release"
    return [
        Problem(
            f"{name}_not_installed", WARNING if live else INFO,
            f"{name} is not installed {'here' if live else 'in these facts'}: the plan follows {rules}"
            + ("; `advisor launch` cannot start it" if live else ""),
            f"`{install_command(engine, version)}`, or pass --engine-version to model another"
            " release",
            "importlib.metadata",
            (name,),
        )
    ]  # fmt: skip


CHECKS: tuple[Callable[[_Context], list[Problem]], ...] = (
    check_no_gpus,
    check_engine_installed,
    check_flashinfer_import,
    check_jit_cache_cuda,
    check_torch_cuda_vs_driver,
    check_flashinfer_gpu_arch,
    check_tp_vs_gpus,
    check_tp_divisibility,
    check_weights_fit,
    check_multicast,
    check_mig,
    check_pynvml,
    *MACHINE_CHECKS,  # advisor/rules/checks_machine.py: launch pitfalls of the machine itself
)


# -- helpers -------------------------------------------------------------------------------------------------------


def _vllm_fusion(token: str) -> bool | None:
    """True/False for vLLM's `-cc.pass_config.fuse_allreduce_rms=True|False`, None for any other token."""
    if VLLM_FUSION_FIELD not in token:
        return None
    return token.rsplit("=", 1)[1].strip().lower() in ("true", "1")


def _cannot(problem_id: str, what: str, reason: str, source: str, packages: tuple[str, ...] = ()) -> Problem:
    return Problem(problem_id, INFO, f"cannot check {what}: {reason}", "probe on the target machine", source, packages)


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
