"""Predict what ``import flashinfer`` will do with the installed flashinfer-python / -cubin / -jit-cache trio.

Nothing here imports flashinfer (that costs seconds and may itself fail): the prediction models the version checks that
each flashinfer-python release runs at import time, from docs/flashinfer.md and flashinfer/jit/env.py:

- <= 0.3.x: the kernel packages did not exist; nothing is compared.
- 0.4.0 to 0.6.18.post1: a differing flashinfer-cubin or flashinfer-jit-cache raises RuntimeError during the import. The
  jit-cache matches when its version *starts with* flashinfer's (loose: 0.6.1 accepts 0.6.10+cu129); the cubin must be equal.
- 0.7.0, 0.7.1: still RuntimeError; the jit-cache matches only when equal or starting with "<version>+".
- 0.7.2 and later: a mismatched package is ignored with a warning (cubins are downloaded on first use, kernels JIT-compiled).
- FLASHINFER_DISABLE_VERSION_CHECK set to any non-empty value (even "0") skips every check.
- A source install whose ``__version__`` is "0.0.0+unknown" skips the checks (from 0.6.10).
- FLASHINFER_CUBIN_DIR set skips the cubin package (from about 0.6.16).

Also modelled: releases whose import fails on a CPU-only torch (a module-level CUDA query).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.facts import Facts, Package
from advisor.rules.problem import Problem
from advisor.versions import at_least, is_version, parse_cuda
from launcher.runtime.contract import (
    FUSION_MAJORS,
    FUSION_MAJORS_BEFORE_SM12,
    FUSION_MAX_TOKENS,
    FUSION_SM12_SINCE,
)
from launcher.runtime.contract import fusion_workspace_bytes as contract_workspace_bytes

PYTHON = "flashinfer-python"
CUBIN = "flashinfer-cubin"
JIT_CACHE = "flashinfer-jit-cache"
PROVIDER_PREFIX = JIT_CACHE + "-sm"  # 0.7.x per-arch provider wheels: flashinfer-jit-cache-sm100a, ...
_PROVIDER = re.compile(re.escape(PROVIDER_PREFIX) + r"\d{2,3}[af]?")
UNKNOWN_SOURCE_VERSION = "0.0.0+unknown"
BYPASS_VAR = "FLASHINFER_DISABLE_VERSION_CHECK"
CUBIN_DIR_VAR = "FLASHINFER_CUBIN_DIR"
INDEX_URL = "https://flashinfer.ai/whl/{label}"

# Outcomes of ``import flashinfer``.
OK = "ok"
ERROR = "error"
WARNING = "warning"
NOT_INSTALLED = "not-installed"
UNKNOWN = "unknown"

ENV_SOURCE = "flashinfer/jit/env.py"

# Releases whose import fails on a CPU-only torch (docs/flashinfer.md).
CPU_IMPORT_FAILS = frozenset({"0.6.8.post1", "0.6.16.post4", "0.6.17", "0.6.18.post1", "0.7.0"})



@dataclass(frozen=True, slots=True)
class ImportPrediction:
    installed: bool
    version: str | None  # flashinfer-python's version as flashinfer sees it (module __version__ where known)
    outcome: str  # "ok" | "error" | "warning" | "not-installed" | "unknown"
    importable: bool | None  # None when it cannot be predicted
    has_fusion_api: bool | None  # flashinfer.comm.allreduce_fusion + create_allreduce_fusion_workspace (from 0.6.0)
    fusion_majors: tuple[int, ...]  # GPU capability majors the trtllm fusion kernels are built for
    problems: tuple[Problem, ...]
    reason: str
    bypassed: bool = False  # FLASHINFER_DISABLE_VERSION_CHECK is set and a mismatch exists
    ignored: tuple[str, ...] = ()  # kernel packages flashinfer will ignore (0.7.2+)


# -- versions ------------------------------------------------------------------------------------------------------

def public_version(version: str | None) -> str | None:
    """The version without its PEP 440 local label: "0.6.11+cu128" -> "0.6.11"."""
    return version.split("+", 1)[0] if version else None


def cuda_label(cuda: str | None) -> str | None:
    """"12.8" -> "cu128"."""
    parsed = parse_cuda(cuda)
    return f"cu{parsed[0]}{parsed[1]}" if parsed else None


def label_cuda(label: str | None) -> tuple[int, int] | None:
    """"cu128" -> (12, 8), "cu130" -> (13, 0): the wheel index's label, the CUDA version without its dot."""
    digits = label[2:] if label and label.startswith("cu") else ""
    if not (3 <= len(digits) <= 4 and digits.isascii() and digits.isdigit()):
        return None
    return int(digits[:-1]), int(digits[-1])


def fusion_majors_for(version: str | None) -> tuple[int, ...]:
    """GPU majors the trtllm allreduce-fusion kernels build for: 9 and 10, plus 12 from flashinfer 0.6.17."""
    if at_least(version, FUSION_SM12_SINCE):
        return FUSION_MAJORS
    return FUSION_MAJORS_BEFORE_SM12


def module_version(pkg: Package) -> str | None:
    """The ``__version__`` flashinfer compares: the module's own where the probe read it, else the dist version."""
    return pkg.module_version or pkg.version


# -- the trtllm fusion workspace -----------------------------------------------------------------------------------

def fusion_workspace_bytes(world: int, hidden: int, max_tokens: int = FUSION_MAX_TOKENS, elem_bytes: int = 2) -> int:
    """Per-GPU bytes of the trtllm fusion workspace: world x tokens x hidden x 2, plus 3x that (capped near 2 GiB) for
    the Lamport buffers (docs/flashinfer.md, "Limits of the trtllm backend"); the runtime sizes its own the same way."""
    return contract_workspace_bytes(world, max_tokens, hidden, elem_bytes)


# -- the prediction ------------------------------------------------------------------------------------------------


def predict_import(facts: Facts) -> ImportPrediction:
    """What ``import flashinfer`` will do on this machine (or with the ``--with-package`` overrides)."""
    fi = facts.package(PYTHON)
    if not fi.installed:
        reason = fi.unknown.get("installed") or fi.unknown.get("version")
        if reason:
            return ImportPrediction(
                installed=False, version=None, outcome=UNKNOWN, importable=None, has_fusion_api=None,
                fusion_majors=(), problems=(), reason=f"cannot tell whether flashinfer-python is installed: {reason}",
            )  # fmt: skip
        return ImportPrediction(
            installed=False, version=None, outcome=NOT_INSTALLED, importable=False, has_fusion_api=False,
            fusion_majors=(), problems=(), reason="flashinfer-python is not installed",
        )  # fmt: skip

    own = module_version(fi)
    # Which release's rules apply: the dist version, unless only the module version is known.
    release = fi.version if is_version(public_version(fi.version)) and fi.version != UNKNOWN_SOURCE_VERSION else own
    source_install = own == UNKNOWN_SOURCE_VERSION
    if source_install and (release is None or release == UNKNOWN_SOURCE_VERSION):
        release = None
    key_release = public_version(release)

    if release is not None and not is_version(key_release):
        return ImportPrediction(
            installed=True, version=own, outcome=UNKNOWN, importable=None, has_fusion_api=None,
            fusion_majors=FUSION_MAJORS_BEFORE_SM12, problems=(), reason=f"cannot parse flashinfer-python version {release!r}",
        )  # fmt: skip

    has_api = True if release is None else bool(at_least(key_release, "0.6.0"))
    majors = fusion_majors_for(key_release) if release is not None else FUSION_MAJORS
    env = facts.environment
    bypass = bool(env.get(BYPASS_VAR))
    cubin_dir = bool(env.get(CUBIN_DIR_VAR))
    src = f"flashinfer-python {release or own}, {ENV_SOURCE}"

    problems: list[Problem] = []
    cpu_problem = _cpu_import_problem(facts, release)
    if cpu_problem:
        problems.append(cpu_problem)

    mismatches = _mismatches(facts, release, own, source_install, cubin_dir)
    providers = _provider_mismatches(facts, release)

    # Classify the mismatches by what this release does with them.
    regime = _regime(key_release)
    outcome, importable, reason, ignored = OK, True, _ok_reason(facts, release, own, source_install, cubin_dir), ()
    accepted_loose = [m for m in mismatches if m.accepted]
    rejected = [m for m in mismatches if not m.accepted]
    if rejected or providers:
        if bypass:
            outcome = WARNING
            reason = (
                f"version check bypassed by {BYPASS_VAR}={env.get(BYPASS_VAR)!r}: "
                + "; ".join(m.text for m in rejected + providers)
            )
            problems.append(_bypassed_problem(facts, rejected + providers, own, src))
        elif regime == "raise" and rejected:
            outcome, importable = ERROR, False
            reason = "RuntimeError at import: " + "; ".join(m.text for m in rejected)
            problems.append(_error_problem(facts, rejected, own, src, loose=accepted_loose))
        elif regime == "ignore" or providers:
            outcome = WARNING
            ignored = tuple(m.package for m in rejected + providers)
            reason = "mismatched kernel packages ignored with a warning: " + "; ".join(
                m.text for m in rejected + providers
            )
            problems.append(_ignored_problem(facts, rejected + providers, own, src))
    if accepted_loose and not (rejected and not bypass and regime == "raise"):
        problems.append(_loose_problem(facts, accepted_loose, own, src))
        if outcome == OK:
            outcome = WARNING
            reason = "accepted by flashinfer's loose prefix match, but built for another release: " + "; ".join(
                m.text for m in accepted_loose
            )
    if cpu_problem:
        outcome, importable = ERROR, False
        reason = cpu_problem.message

    return ImportPrediction(
        installed=True,
        version=own,
        outcome=outcome,
        importable=importable,
        has_fusion_api=has_api,
        fusion_majors=majors,
        problems=tuple(problems),
        reason=reason,
        bypassed=bypass and bool(rejected or providers),
        ignored=ignored,
    )


@dataclass(frozen=True, slots=True)
class _Mismatch:
    package: str  # distribution name
    found: str
    expected: str
    accepted: bool  # flashinfer's check passes anyway (the loose 0.6.x prefix match)
    text: str
    also: tuple[str, ...] = ()  # other packages the mismatch is about (the missing jit-cache shim)


def _regime(release: str | None) -> str:
    """"none" (no checks), "raise" (RuntimeError at import) or "ignore" (warn and skip the package)."""
    if release is None:
        return "ignore"  # a source install of unknown vintage: assume the newest behaviour
    if not at_least(release, "0.4.0"):
        return "none"
    if not at_least(release, "0.7.2"):
        return "raise"
    return "ignore"


def _mismatches(
    facts: Facts, release: str | None, own: str | None, source_install: bool, cubin_dir: bool
) -> list[_Mismatch]:
    key_release = public_version(release)
    if _regime(key_release) == "none" or own is None:
        return []
    # A source install reporting 0.0.0+unknown skips the checks from 0.6.10 (before, it compared that string).
    if source_install and (release is None or at_least(key_release, "0.6.10")):
        return []
    out: list[_Mismatch] = []
    cubin = facts.package(CUBIN)
    cubin_skipped = cubin_dir and (release is None or at_least(key_release, "0.6.16"))
    if cubin.installed and not cubin_skipped:
        found = module_version(cubin)
        if found and found != own:
            out.append(_Mismatch(CUBIN, found, own, False, f"flashinfer-cubin {found} != flashinfer {own}"))
    jit = facts.package(JIT_CACHE)
    if jit.installed:
        found = module_version(jit)
        if found and found != own:
            exact_or_label = found.startswith(f"{own}+")
            if at_least(key_release, "0.7.0") is False:
                accepted = found.startswith(own)  # 0.6.x: plain prefix, so 0.6.1 accepts 0.6.10+cu129
                if not exact_or_label:
                    verb = "passes only the loose prefix check of" if accepted else "does not start with"
                    text = f"flashinfer-jit-cache {found} {verb} flashinfer {own}"
                    out.append(_Mismatch(JIT_CACHE, found, own, accepted, text))
            elif not exact_or_label:
                text = f"flashinfer-jit-cache {found} is neither {own} nor {own}+<cuda label>"
                out.append(_Mismatch(JIT_CACHE, found, own, False, text))
    return out


def is_provider(name: str) -> bool:
    """A 0.7.x per-arch provider wheel: PROVIDER_PREFIX then an arch, 2 or 3 digits and an optional a or f."""
    return _PROVIDER.fullmatch(name) is not None


def _provider_mismatches(facts: Facts, release: str | None) -> list[_Mismatch]:
    """0.7.x splits the jit-cache into per-arch provider wheels that must equal the shim exactly (0.7.4 ignores others)."""
    if release is None or not at_least(public_version(release), "0.7.2"):
        return []
    jit = facts.package(JIT_CACHE)
    shim = module_version(jit) if jit.installed else None
    out = []
    for pkg in facts.packages:
        if not (pkg.installed and is_provider(pkg.name)):
            continue
        found = module_version(pkg)
        if shim is None:
            out.append(_Mismatch(pkg.name, found or "?", "a flashinfer-jit-cache shim", False,
                                 f"{pkg.name} {found} without the flashinfer-jit-cache shim (never discovered)",
                                 also=(JIT_CACHE,)))  # fmt: skip
        elif found and found != shim:
            out.append(_Mismatch(pkg.name, found, shim, False, f"{pkg.name} {found} != flashinfer-jit-cache {shim}"))
    return out


def _ok_reason(facts: Facts, release: str | None, own: str | None, source_install: bool, cubin_dir: bool) -> str:
    key_release = public_version(release)
    if release is None:
        return f"source install reporting {UNKNOWN_SOURCE_VERSION}: flashinfer skips its version checks"
    if _regime(key_release) == "none":
        return f"flashinfer-python {release} predates the kernel packages: no version check at import"
    if source_install and at_least(key_release, "0.6.10"):
        return f"source install reporting {UNKNOWN_SOURCE_VERSION}: flashinfer {release} skips its version checks"
    parts = []
    for name in (CUBIN, JIT_CACHE):
        pkg = facts.package(name)
        if pkg.installed:
            skipped = name == CUBIN and cubin_dir and at_least(key_release, "0.6.16")
            note = f" (skipped: {CUBIN_DIR_VAR} is set)" if skipped else ""
            parts.append(f"{name} {module_version(pkg)}{note}")
    if not parts:
        return f"flashinfer-python {own}; no flashinfer-cubin or flashinfer-jit-cache installed (nothing to compare)"
    return f"flashinfer-python {own} matches " + ", ".join(parts)


# -- problems ------------------------------------------------------------------------------------------------------


def matching_install_command(facts: Facts, packages: list[str], version: str | None) -> str:
    """The pip command that installs kernel packages matching flashinfer-python ``version``."""
    target = public_version(version) or "<flashinfer-python version>"
    jit = facts.package(JIT_CACHE)
    label = jit.local_label if jit.installed and jit.local_label else cuda_label(facts.package("torch").cuda)
    specs = []
    for name in sorted(set(packages)):
        if name == JIT_CACHE:
            specs.append(f"'{JIT_CACHE}=={target}+{label}'" if label else f"'{JIT_CACHE}=={target}+cuXXX'")
        elif name.startswith(f"{JIT_CACHE}-sm"):
            specs.append(f"'{name}=={target}+{label or 'cuXXX'}'")
        else:
            specs.append(f"'{name}=={target}'")
    cmd = "pip install " + " ".join(specs)
    if any(n.startswith(JIT_CACHE) for n in packages) or (CUBIN in packages and at_least(target, "0.6.14")):
        cmd += f" --extra-index-url {INDEX_URL.format(label=label or 'cuXXX')}"
    return cmd


_BYPASS_RISK = (
    "the bypass loads kernels built for another flashinfer release: expect missing symbols, crashes or wrong results"
)


def _fix(facts: Facts, mismatches: list[_Mismatch], own: str | None) -> str:
    names = [m.package for m in mismatches]
    cmd = matching_install_command(facts, names, own)
    return (
        f"install matching versions: `{cmd}` (or `pip uninstall {' '.join(sorted(set(names)))}` to JIT-compile instead);"
        f" or set {BYPASS_VAR}=1 to skip the check ({_BYPASS_RISK})"
    )


def _mismatch_packages(mismatches: list[_Mismatch]) -> tuple[str, ...]:
    """flashinfer-python (whose version the others must match) and the kernel packages that do not match it."""
    named = {name for m in mismatches for name in (m.package, *m.also)}
    return (PYTHON, *sorted(named - {PYTHON}))


def _error_problem(facts: Facts, mismatches: list[_Mismatch], own: str | None, src: str,
                   loose: list[_Mismatch] | None = None) -> Problem:  # fmt: skip
    """``loose``: packages accepted only by the loose prefix match; their own warning is not raised beside this error,
    so this problem is about them too."""
    detail = "; ".join(m.text for m in mismatches)
    return Problem(
        id="flashinfer_version_mismatch",
        severity="error",
        message=(
            f"import flashinfer will fail: flashinfer-python {own} raises RuntimeError at import because {detail}"
            " (it compares the kernel packages' __version__ with its own)"
        ),
        fix=_fix(facts, mismatches, own),
        source=src,
        packages=_mismatch_packages(mismatches + (loose or [])),
    )


def _bypassed_problem(facts: Facts, mismatches: list[_Mismatch], own: str | None, src: str) -> Problem:
    detail = "; ".join(m.text for m in mismatches)
    value = facts.environment.get(BYPASS_VAR)
    return Problem(
        id="flashinfer_version_mismatch",
        severity="warning",
        message=(
            f"{BYPASS_VAR}={value!r} is set, so import flashinfer will succeed despite {detail};"
            f" {_BYPASS_RISK}"
        ),
        fix=_fix(facts, mismatches, own).split("; or set")[0] + f", then unset {BYPASS_VAR}",
        source=src,
        packages=_mismatch_packages(mismatches),
    )


def _ignored_problem(facts: Facts, mismatches: list[_Mismatch], own: str | None, src: str) -> Problem:
    detail = "; ".join(m.text for m in mismatches)
    consequences = []
    names = {m.package for m in mismatches}
    if CUBIN in names:
        consequences.append("cubins are downloaded on first use (needs network)")
    if names - {CUBIN}:
        consequences.append("kernels are JIT-compiled on first use (needs nvcc; minutes)")
    return Problem(
        id="flashinfer_version_mismatch",
        severity="warning",
        message=(
            f"import flashinfer will warn and ignore the mismatched package ({detail}): " + "; ".join(consequences)
        ),
        fix=_fix(facts, mismatches, own).split("; or set")[0] + " or `flashinfer download-kernels`",
        source=src,
        packages=_mismatch_packages(mismatches),
    )


def _loose_problem(facts: Facts, mismatches: list[_Mismatch], own: str | None, src: str) -> Problem:
    detail = "; ".join(f"{m.package} {m.found}" for m in mismatches)
    return Problem(
        id="flashinfer_version_mismatch",
        severity="warning",
        message=(
            f"import flashinfer will succeed only because flashinfer-python {own} checks the jit-cache version with a"
            f" loose prefix match: {detail} starts with {own!r} but was built for another release;"
            " its AOT kernels may not match this flashinfer's sources"
        ),
        fix=_fix(facts, mismatches, own).split("; or set")[0],
        source=src,
        packages=_mismatch_packages(mismatches),
    )


def _cpu_import_problem(facts: Facts, release: str | None) -> Problem | None:
    if release is None or public_version(release) not in CPU_IMPORT_FAILS and release not in CPU_IMPORT_FAILS:
        return None
    if torch_is_cpu_only(facts) is not True:
        return None
    torch = facts.package("torch")
    return Problem(
        id="flashinfer_cpu_torch_import",
        severity="warning",
        message=(
            f"import flashinfer will fail: flashinfer-python {release} queries CUDA at module level and torch"
            f" {torch.version} is a CPU-only build (the bundled runtime uses torch.distributed with gloo here)"
        ),
        fix="install a CUDA build of torch, or a flashinfer-python release that imports on CPU (0.6.13, 0.7.1, 0.7.2+)",
        source=f"flashinfer-python {release}, flashinfer/__init__.py (docs/flashinfer.md)",
        packages=(PYTHON, "torch"),
    )


def torch_is_cpu_only(facts: Facts) -> bool | None:
    """True for a CPU-only torch build, False for a CUDA build, None when unknown (or no torch)."""
    torch = facts.package("torch")
    if not torch.installed:
        return None
    if torch.cuda:
        return False
    if torch.local_label == "cpu":
        return True
    if torch.local_label and torch.local_label.startswith("cu"):
        return False
    if torch.overridden or "cuda" in torch.unknown or torch.version is None:
        return None  # "--with-package torch==2.9.0" says nothing about the CUDA variant
    return True
