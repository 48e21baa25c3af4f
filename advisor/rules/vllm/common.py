"""vLLM's files and flags the rules cite, and the release whose rules apply to a version."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Problem, ReleaseError

ENGINE = "vllm"
# v0.12.0 renamed the pass option to fuse_allreduce_rms (enable_fi_allreduce_fusion before, off by default).
MODELLED_FROM = "0.12.0"
# Releases whose engine-config resolution is recorded in tests/conformance/golden/vllm-X.jsonl (python -m conformance.vllm).
VERIFIED = ("0.12.0", "0.15.1", "0.20.2", "0.25.1", "0.30.0", "0.33.0")
NEWEST = VERIFIED[-1]  # the newest modelled release: used when no version is known, and for newer releases
PASS_FILE = "vllm/compilation/passes/fusion/allreduce_rms_fusion.py"
CONFIG_FILE = "vllm/config/compilation.py"
VLLM_CONFIG_FILE = "vllm/config/vllm.py"
ARG_UTILS_FILE = "vllm/engine/arg_utils.py"
CACHE_CONFIG_FILE = "vllm/config/cache.py"
PLATFORM_FILE = "vllm/platforms/cuda.py"
ATTENTION_FLAG = "--attention-backend"  # the attention rules and the MLA block size both read it
CUSTOM_AR_FILE = "vllm/distributed/device_communicators/custom_all_reduce.py"

FUSE_FLAG = "-cc.pass_config.fuse_allreduce_rms"
DISABLE_CUSTOM_AR = "--disable-custom-all-reduce"
ENFORCE_EAGER = "--enforce-eager"
MiB = 2**20
GiB = 2**30


def rules_release(version: str) -> str:
    """The release whose behaviour is modelled: the version itself from v0.12 to the newest modelled release; v0.12
    for older ones and the newest for newer ones (each with a plan warning)."""
    release = rules.parse_release(version)
    if release is None:
        raise ReleaseError(f"vllm version {version!r} is not a version; pass --engine-version X.Y.Z (e.g. {NEWEST})")
    release = max(release, rules.parse_release(MODELLED_FROM))
    return rules.release_text(min(release, rules.parse_release(NEWEST)))


def version_problems(version: str, installed: str | None = None) -> list[Problem]:
    """engine_version_older / engine_version_newer; about the vllm package when ``installed`` is the release judged."""
    about = ("vllm",) if installed is not None and rules.parse_release(installed) == rules.parse_release(version) else ()
    if rules.parse_release(version) > rules.parse_release(NEWEST):
        return [Problem(
            "engine_version_newer", "warning",
            f"vllm {version} is newer than the newest modelled release; this plan uses the newest modelled rules v{NEWEST}",
            "check vLLM's release notes for changed defaults, or pass --engine-version to pick a modelled release",
            f"vllm v{NEWEST}", about,
        )]  # fmt: skip
    if rules.parse_release(version) >= rules.parse_release(MODELLED_FROM):
        return []
    return [Problem(
        "engine_version_older", "warning",
        f"vllm {version} predates the modelled behaviour (v{MODELLED_FROM}+): it spelled the fusion enable_fi_allreduce_fusion"
        " and kept it off by default, so the fusion decision below is likely too optimistic",
        f"upgrade vLLM to v{MODELLED_FROM} or newer, or read the decision as what a current vLLM would do",
        f"vllm v{MODELLED_FROM}, {CONFIG_FILE}", about,
    )]  # fmt: skip
