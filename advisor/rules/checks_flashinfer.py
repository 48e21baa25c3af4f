"""Checks about FlashInfer and the CUDA stack under it: the import of the installed trio, the JIT cache's CUDA, torch's
CUDA vs the driver, the GPU architectures the fused allreduce kernels are built for (docs/flashinfer.md).
"""

from __future__ import annotations

from advisor.rules import flashinfer as fi
from advisor.rules.checks_context import ERROR, INFO, WARNING, _cannot, _Context
from advisor.rules.engine import Problem, parse_cuda


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
