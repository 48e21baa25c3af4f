"""predict_import: what `import flashinfer` does with the installed flashinfer-python / -cubin / -jit-cache trio.

The table follows docs/flashinfer.md; the last test checks the 0.7.x rows against the flashinfer 0.7.4 installed in
the project venv (its real version checks, run in a subprocess over fake kernel packages).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.facts import Facts, Package
from advisor.probe.profiles import load_profile
from advisor.rules.flashinfer import (
    ERROR,
    NOT_INSTALLED,
    OK,
    UNKNOWN,
    WARNING,
    predict_import,
)
from advisor.versions import at_least
from advisor.versions import parse_version as version_key


def trio(python: str, jit: str | None = None, cubin: str | None = None, env: dict[str, str] | None = None,
         base: Facts | None = None, **extra: str) -> Facts:  # fmt: skip
    versions = {"flashinfer-python": python}
    if jit:
        versions["flashinfer-jit-cache"] = jit
    if cubin:
        versions["flashinfer-cubin"] = cubin
    versions.update({k.replace("_", "-"): v for k, v in extra.items()})
    facts = (base or Facts()).with_packages(versions)
    return replace(facts, environment=env or {})


BYPASS = {"FLASHINFER_DISABLE_VERSION_CHECK": "1"}

# (flashinfer-python, jit-cache, cubin, environment, outcome, importable, severities of flashinfer_version_mismatch)
TABLE = [
    # <= 0.3.x: the kernel packages did not exist, nothing is compared
    ("0.3.1", "0.2.14+cu124", None, {}, OK, True, []),
    # 0.4.0 .. 0.6.18.post1: RuntimeError at import
    ("0.4.0", "0.4.0+cu128", None, {}, OK, True, []),
    ("0.4.0", "0.3.1+cu128", None, {}, ERROR, False, ["error"]),
    ("0.6.12", "0.6.11+cu128", None, {}, ERROR, False, ["error"]),  # the seed case
    ("0.6.12", "0.6.12+cu128", "0.6.12", {}, OK, True, []),
    ("0.6.12", "0.6.12+cu128", "0.6.11", {}, ERROR, False, ["error"]),  # cubin mismatch
    ("0.6.1", "0.6.10+cu129", None, {}, WARNING, True, ["warning"]),  # loose prefix match accepts it
    ("0.6.18", "0.6.18.post1+cu129", None, {}, WARNING, True, ["warning"]),  # same loose match
    ("0.6.18.post1", "0.6.18+cu129", None, {}, ERROR, False, ["error"]),
    ("0.6.18.post1", "0.6.18.post1+cu129", "0.6.18.post1", {}, OK, True, []),
    # 0.7.0, 0.7.1: still RuntimeError; exact or "<ver>+" only
    ("0.7.0", "0.7.0+cu130", "0.7.0", {}, OK, True, []),
    ("0.7.0", "0.7.0.post1+cu130", None, {}, ERROR, False, ["error"]),
    ("0.7.1", "0.7.10+cu130", None, {}, ERROR, False, ["error"]),  # no loose match any more
    ("0.7.1", "0.7.1", None, {}, OK, True, []),
    # 0.7.2+: warn and ignore the package
    ("0.7.2", "0.7.1+cu130", None, {}, WARNING, True, ["warning"]),
    ("0.7.4", None, "0.7.3", {}, WARNING, True, ["warning"]),
    ("0.7.4", "0.7.4+cu130", "0.7.4", {}, OK, True, []),
    # FLASHINFER_DISABLE_VERSION_CHECK: any non-empty value, even "0", bypasses; empty does not
    ("0.6.12", "0.6.11+cu128", None, BYPASS, WARNING, True, ["warning"]),
    ("0.6.12", "0.6.11+cu128", None, {"FLASHINFER_DISABLE_VERSION_CHECK": "0"}, WARNING, True, ["warning"]),
    ("0.6.12", "0.6.11+cu128", None, {"FLASHINFER_DISABLE_VERSION_CHECK": ""}, ERROR, False, ["error"]),
    ("0.7.1", None, "0.7.0", BYPASS, WARNING, True, ["warning"]),
    # FLASHINFER_CUBIN_DIR skips the cubin package from about 0.6.16, not before
    ("0.6.16", None, "0.6.15", {"FLASHINFER_CUBIN_DIR": "/opt/cubins"}, OK, True, []),
    ("0.6.12", None, "0.6.11", {"FLASHINFER_CUBIN_DIR": "/opt/cubins"}, ERROR, False, ["error"]),
    ("0.7.1", "0.7.0+cu130", "0.7.0", {"FLASHINFER_CUBIN_DIR": "/opt/cubins"}, ERROR, False, ["error"]),
]


@pytest.mark.parametrize(("python", "jit", "cubin", "env", "outcome", "importable", "severities"), TABLE)
def test_behaviour_table(python, jit, cubin, env, outcome, importable, severities):
    pred = predict_import(trio(python, jit, cubin, env))
    assert pred.installed and pred.version == python
    assert (pred.outcome, pred.importable) == (outcome, importable), pred.reason
    assert [p.severity for p in pred.problems if p.id == "flashinfer_version_mismatch"] == severities
    for problem in pred.problems:
        assert problem.source and f"flashinfer-python {python}" in problem.source
        assert problem.fix


def test_seed_case_error_names_failure_and_fixes():
    pred = predict_import(trio("0.6.12", "0.6.11+cu128"))
    (problem,) = pred.problems
    assert problem.id == "flashinfer_version_mismatch" and problem.severity == "error"
    assert "import flashinfer will fail" in problem.message
    assert "0.6.11+cu128" in problem.message and "0.6.12" in problem.message
    assert "pip install 'flashinfer-jit-cache==0.6.12+cu128'" in problem.fix
    assert "--extra-index-url https://flashinfer.ai/whl/cu128" in problem.fix
    assert "FLASHINFER_DISABLE_VERSION_CHECK=1" in problem.fix and "wrong results" in problem.fix


def test_bypass_warning_explains_risk_and_keeps_install_fix():
    pred = predict_import(trio("0.6.12", "0.6.11+cu128", env=BYPASS))
    (problem,) = pred.problems
    assert problem.severity == "warning" and pred.bypassed
    assert "FLASHINFER_DISABLE_VERSION_CHECK" in problem.message and "crashes or wrong results" in problem.message
    assert "import flashinfer will fail" not in problem.message
    assert "pip install 'flashinfer-jit-cache==0.6.12+cu128'" in problem.fix


def test_ignored_packages_in_0_7_2_and_later_say_what_happens_instead():
    pred = predict_import(trio("0.7.4", "0.7.3+cu130", "0.7.3"))
    assert pred.ignored == ("flashinfer-cubin", "flashinfer-jit-cache")
    (problem,) = pred.problems
    assert "downloaded on first use" in problem.message and "JIT-compiled" in problem.message
    assert "flashinfer download-kernels" in problem.fix


def test_per_arch_jit_cache_provider_must_equal_the_shim():
    facts = trio("0.7.4", "0.7.4+cu130", None, flashinfer_jit_cache_sm100a="0.7.3+cu130")
    pred = predict_import(facts)
    assert pred.outcome == WARNING and pred.ignored == ("flashinfer-jit-cache-sm100a",)
    matching = trio("0.7.4", "0.7.4+cu130", None, flashinfer_jit_cache_sm100a="0.7.4+cu130")
    assert predict_import(matching).outcome == OK


PY, CUBIN, JIT, SM100 = "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "flashinfer-jit-cache-sm100a"


@pytest.mark.parametrize(
    ("facts", "packages"),
    [
        (trio("0.6.12", "0.6.11+cu128"), (PY, JIT)),  # the seed case
        (trio("0.6.12", "0.6.12+cu128", "0.6.11"), (PY, CUBIN)),  # the matching jit-cache is not about it
        (trio("0.6.12", "0.6.11+cu128", env=BYPASS), (PY, JIT)),
        (trio("0.6.1", "0.6.10+cu129", "0.6.1"), (PY, JIT)),  # loose prefix match: a warning
        (trio("0.6.1", "0.6.10+cu129", "0.6.6"), (PY, CUBIN, JIT)),  # the error stands in for the loose warning
        (trio("0.7.4", "0.7.3+cu130", "0.7.4"), (PY, JIT)),  # ignored with a warning
        # a provider wheel that differs from the shim; the message names the shim only as the reference
        (trio("0.7.4", "0.7.4+cu130", "0.7.4", flashinfer_jit_cache_sm100a="0.7.3+cu130"), (PY, SM100)),
        (trio("0.7.4", None, "0.7.4", flashinfer_jit_cache_sm100a="0.7.4+cu130"), (PY, JIT, SM100)),  # no shim
    ],
)
def test_mismatch_problem_is_about_flashinfer_python_and_the_packages_that_differ(facts, packages):
    (problem,) = predict_import(facts).problems
    assert problem.id == "flashinfer_version_mismatch" and problem.packages == packages


def test_cpu_import_problem_is_about_flashinfer_python_and_torch():
    cpu = load_profile("cpu-only").with_packages({"flashinfer-python": "0.7.0", "flashinfer-cubin": "0.7.0"})
    (problem,) = predict_import(cpu).problems
    assert problem.id == "flashinfer_cpu_torch_import" and problem.packages == (PY, "torch")


def _source_install(metadata_version: str) -> Facts:
    fi = Package(name="flashinfer-python", installed=True, version=metadata_version, module_version="0.0.0+unknown")
    jit = Package(name="flashinfer-jit-cache", installed=True, version="0.6.11+cu128", local_label="cu128",
                  module_version="0.6.11+cu128")  # fmt: skip
    return Facts(packages=(jit, fi))


def test_source_install_reporting_unknown_version_skips_checks():
    for version in ("0.0.0+unknown", "0.6.12"):
        pred = predict_import(_source_install(version))
        assert (pred.outcome, pred.problems) == (OK, ()), version
        assert "0.0.0+unknown" in pred.reason
    # before 0.6.10 the check compared the literal "0.0.0+unknown" and failed
    old = predict_import(_source_install("0.6.5"))
    assert old.outcome == ERROR and old.problems[0].severity == "error"


def test_cpu_only_torch_breaks_import_of_some_releases():
    cpu = load_profile("cpu-only")
    for version in ("0.6.8.post1", "0.6.16.post4", "0.6.17", "0.6.18.post1", "0.7.0"):
        pred = predict_import(cpu.with_packages({"flashinfer-python": version, "flashinfer-cubin": version}))
        assert (pred.outcome, pred.importable) == (ERROR, False), version
        assert [p.id for p in pred.problems] == ["flashinfer_cpu_torch_import"]
    for version in ("0.6.13", "0.7.1", "0.7.4"):
        pred = predict_import(cpu.with_packages({"flashinfer-python": version, "flashinfer-cubin": version}))
        assert pred.outcome == OK and pred.importable, version
    # the same release imports with a CUDA torch
    gpu = load_profile("h100-pcie-2-bridge").with_packages({"flashinfer-python": "0.7.0", "flashinfer-cubin": "0.7.0"})
    gpu = gpu.with_packages({"flashinfer-jit-cache": "0.7.0+cu129"})
    assert predict_import(gpu).outcome == OK
    # a torch override without a label says nothing about its CUDA variant: no claim
    unlabeled = Facts().with_packages({"flashinfer-python": "0.7.0", "torch": "2.9.0"})
    assert predict_import(unlabeled).problems == ()


def test_not_installed_and_unknown():
    pred = predict_import(Facts())
    assert (pred.outcome, pred.importable, pred.has_fusion_api) == (NOT_INSTALLED, False, False)
    unknown = Facts(packages=(Package(name="flashinfer-python", unknown={"version": "importlib.metadata failed"}),))
    pred = predict_import(unknown)
    assert pred.outcome == UNKNOWN and pred.importable is None and "importlib.metadata failed" in pred.reason
    garbled = predict_import(Facts().with_packages({"flashinfer-python": "banana"}))
    assert garbled.outcome == UNKNOWN and garbled.importable is None


@pytest.mark.parametrize(
    ("version", "has_api", "majors"),
    [("0.5.3", False, (9, 10)), ("0.6.0", True, (9, 10)), ("0.6.16.post4", True, (9, 10)), ("0.6.17", True, (9, 10, 12)),
     ("0.7.4", True, (9, 10, 12))],
)  # fmt: skip
def test_fusion_api_and_majors(version, has_api, majors):
    pred = predict_import(Facts().with_packages({"flashinfer-python": version}))
    assert (pred.has_fusion_api, pred.fusion_majors) == (has_api, majors)


def test_version_ordering():
    ordered = ["0.6.18.dev1", "0.6.18rc1", "0.6.18", "0.6.18.post1", "0.7.0", "0.7.10+cu130"]
    keys = [version_key(v) for v in ordered]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert at_least("0.6.18.post1", "0.7.0") is False and at_least("0.7.2", "0.7.2") is True
    assert version_key("not-a-version") is None and at_least(None, "0.1") is None


# -- the real flashinfer 0.7.4 in the venv, over fake kernel packages ---------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import json, os, sys
    import flashinfer
    from flashinfer.jit import env
    checks = {}
    for version in json.loads(sys.argv[1]):
        try:
            env._check_jit_cache_version("flashinfer-jit-cache", version)
            checks[version] = "ok"
        except RuntimeError:
            checks[version] = "mismatch"
    os.environ["FLASHINFER_DISABLE_VERSION_CHECK"] = "0"
    print(json.dumps({"version": flashinfer.__version__, "checks": checks, "bypassed_cubin_dir": str(env._get_cubin_dir())}))
    """
)


@pytest.mark.slow
def test_prediction_matches_installed_flashinfer(tmp_path):
    """Run flashinfer 0.7.4's own import-time checks over fake flashinfer-cubin / -jit-cache modules."""
    if importlib.util.find_spec("flashinfer") is None:
        pytest.skip("flashinfer-python is not installed")
    fake = tmp_path / "site"
    (fake / "flashinfer_jit_cache").mkdir(parents=True)
    (fake / "flashinfer_cubin").mkdir()
    (fake / "flashinfer_jit_cache" / "__init__.py").write_text(
        '__version__ = "0.7.3+cu130"\ndef get_jit_cache_providers():\n    return []\n'
    )
    cubin_dir = tmp_path / "cubins"
    (fake / "flashinfer_cubin" / "__init__.py").write_text(
        f'__version__ = "0.7.3"\ndef get_cubin_dir():\n    return {str(cubin_dir)!r}\n'
    )
    candidates = ["0.7.4", "0.7.4+cu130", "0.7.4.post1+cu130", "0.7.40+cu130", "0.7.3+cu130"]
    env = {**os.environ, "PYTHONPATH": str(fake), "HOME": str(tmp_path)}
    env.pop("FLASHINFER_DISABLE_VERSION_CHECK", None)
    env.pop("FLASHINFER_CUBIN_DIR", None)
    result = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(candidates)], env=env, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    if result.returncode and "No module named 'torch'" in result.stderr:
        pytest.skip("flashinfer needs torch")
    assert result.returncode == 0, result.stderr[-2000:]
    real = json.loads(result.stdout.strip().splitlines()[-1])
    if real["version"] != "0.7.4":
        pytest.skip(f"modelled against flashinfer 0.7.4, found {real['version']}")
    # import succeeded and both mismatched packages were ignored with a warning, as predicted
    assert "Ignoring incompatible flashinfer-cubin" in result.stderr
    assert "Ignoring incompatible flashinfer-jit-cache" in result.stderr
    predicted = predict_import(trio("0.7.4", "0.7.3+cu130", "0.7.3"))
    assert predicted.outcome == WARNING and predicted.importable
    assert predicted.ignored == ("flashinfer-cubin", "flashinfer-jit-cache")
    # the jit-cache match rule agrees version by version
    for version, verdict in real["checks"].items():
        ours = predict_import(trio("0.7.4", version))
        assert (ours.outcome == OK) == (verdict == "ok"), (version, verdict, ours.reason)
    # with the bypass set, the mismatched cubin package is used again
    assert real["bypassed_cubin_dir"] == str(cubin_dir)
    assert predict_import(trio("0.7.4", None, "0.7.3", BYPASS)).ignored == ()


@settings(max_examples=300)
@given(st.text(alphabet="0123456789afbx٣²-", max_size=6))
def test_is_provider_is_the_regex_it_replaces(arch):
    import re

    from advisor.rules.flashinfer import PROVIDER_PREFIX, is_provider

    for name in (PROVIDER_PREFIX + arch, "flashinfer-python" + arch, arch):
        assert is_provider(name) == bool(re.fullmatch(PROVIDER_PREFIX + r"\d{2,3}[af]?", name)), name
