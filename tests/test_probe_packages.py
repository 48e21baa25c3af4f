"""The package probe over fake dist-info folders (real importlib.metadata), and over a second real interpreter."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.probe.live import probe_live
from advisor.probe.packages import PythonProbeError, probe_packages, probe_python, python_facts

BUILD_META = '"""Build metadata."""\n__version__ = "{}"\n__git_commit__ = "abc"\n'
# flashinfer/version.py as 0.6.x-0.7.x ship it: the version comes from _build_meta.py, with a fallback.
FLASHINFER_VERSION_PY = (
    "try:\n    from . import _build_meta\n\n    __version__: str = _build_meta.__version__\n"
    'except ImportError:\n    __version__ = "0.0.0+unknown"\n'
)
EXPLODING = 'raise RuntimeError("the probe must not import this package")\n'


def by_name(packages):
    return {p.name: p for p in packages}


def seed_machine(make_dist):
    """flashinfer-python 0.6.12 beside flashinfer-jit-cache 0.6.11+cu128 (the seed case), plus the usual neighbours."""
    make_dist("flashinfer-python", "0.6.12", files={
        "flashinfer/__init__.py": EXPLODING,
        "flashinfer/version.py": FLASHINFER_VERSION_PY,
        "flashinfer/_build_meta.py": BUILD_META.format("0.6.12"),
    })
    make_dist("flashinfer-jit-cache", "0.6.11+cu128", files={
        "flashinfer_jit_cache/__init__.py": EXPLODING,
        "flashinfer_jit_cache/_build_meta.py": BUILD_META.format("0.6.11+cu128"),
    })
    make_dist("flashinfer-cubin", "0.6.12", files={"flashinfer_cubin/_build_meta.py": BUILD_META.format("0.6.12")})
    make_dist("flashinfer-jit-cache-sm90a", "0.6.11+cu128")
    make_dist("torch", "2.9.1+cu128", files={
        "torch/__init__.py": EXPLODING,
        "torch/version.py": "from typing import Optional\n__version__ = '2.9.1+cu128'\ncuda: Optional[str] = '12.8'\n",
    })
    make_dist("nvidia-nccl-cu12", "2.27.5")
    make_dist("nvidia-ml-py", "13.580.82")
    make_dist("pynvml", "12.0.0")  # the unofficial wrapper distribution
    make_dist("numpy", "2.3.0")  # not watched
    return make_dist("sglang", "0.5.12")


def test_flashinfer_trio_with_mismatched_jit_cache(make_dist):
    site = seed_machine(make_dist)
    already_loaded = {"flashinfer", "flashinfer_jit_cache"} & set(sys.modules)  # other tests may import the real one
    found = by_name(probe_packages([str(site)]))
    python, jit, cubin = found["flashinfer-python"], found["flashinfer-jit-cache"], found["flashinfer-cubin"]
    assert (python.version, python.module_version, python.local_label) == ("0.6.12", "0.6.12", None)
    assert (jit.version, jit.module_version, jit.local_label, jit.base_version) == ("0.6.11+cu128", "0.6.11+cu128", "cu128", "0.6.11")
    assert cubin.module_version == "0.6.12"
    assert found["flashinfer-jit-cache-sm90a"].version == "0.6.11+cu128"
    assert jit.location == str(site) and jit.installed and jit.unknown == {}
    assert {"flashinfer", "flashinfer_jit_cache"} & set(sys.modules) == already_loaded  # read as text, never imported


def test_watch_list_and_torch_cuda_variant(make_dist):
    found = by_name(probe_packages([str(seed_machine(make_dist))]))
    assert sorted(found) == [
        "flashinfer-cubin", "flashinfer-jit-cache", "flashinfer-jit-cache-sm90a", "flashinfer-python",
        "nvidia-ml-py", "nvidia-nccl-cu12", "pynvml", "sglang", "torch",
    ]
    torch = found["torch"]
    assert (torch.version, torch.local_label, torch.cuda, torch.module_version) == ("2.9.1+cu128", "cu128", "12.8", "2.9.1+cu128")
    assert found["pynvml"].version == "12.0.0" and found["nvidia-ml-py"].version == "13.580.82"


def test_cpu_torch_has_no_cuda_and_no_unknown(make_dist):
    site = make_dist("torch", "2.13.0+cpu", files={"torch/version.py": "__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n"})
    torch = by_name(probe_packages([str(site)]))["torch"]
    assert torch.cuda is None and torch.unknown == {} and torch.local_label == "cpu"


@pytest.mark.parametrize(
    "metadata, reason",
    [
        ("Metadata-Version: 2.1\nName: sglang\n", "METADATA without Version"),
        (b"Metadata-Version: 2.1\nName: sglang\nVersion: \xff\xfe\n", "unreadable METADATA"),
        (None, "METADATA without Version"),
    ],
    ids=["no-version", "not-utf8", "missing"],
)
def test_broken_metadata_leaves_that_package_unknown_and_others_fine(make_dist, metadata, reason):
    make_dist("sglang", "0.5.12", metadata=metadata)
    site = make_dist("vllm", "0.14.1")
    found = by_name(probe_packages([str(site)]))
    broken = found["sglang"]
    assert broken.installed and broken.version is None
    assert broken.unknown["version"].startswith(reason)
    assert found["vllm"].version == "0.14.1" and found["vllm"].unknown == {}


def test_flashinfer_without_build_meta_reports_the_fallback_version(make_dist):
    site = make_dist("flashinfer-python", "0.7.4", files={"flashinfer/version.py": FLASHINFER_VERSION_PY})
    make_dist("flashinfer-cubin", "0.7.4")  # no _build_meta.py: its __version__ cannot be read
    found = by_name(probe_packages([str(site)]))
    assert found["flashinfer-python"].module_version == "0.0.0+unknown"
    assert found["flashinfer-cubin"].module_version is None
    assert "_build_meta.py" in found["flashinfer-cubin"].unknown["module_version"]


def test_first_distribution_on_the_path_wins(tmp_path, make_dist):
    first = make_dist("vllm", "0.14.1")
    second = tmp_path / "later"
    (second / "vllm-0.9.0.dist-info").mkdir(parents=True)
    (second / "vllm-0.9.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.9.0\n")
    assert by_name(probe_packages([str(first), str(second)]))["vllm"].version == "0.14.1"
    assert by_name(probe_packages([str(second), str(first), str(tmp_path / "missing")]))["vllm"].version == "0.9.0"


def test_this_interpreter_by_default():
    from importlib.metadata import version

    found = by_name(probe_packages())
    assert found["torch"].version == version("torch")
    assert found["nvidia-ml-py"].version == version("nvidia-ml-py")


# -- another interpreter ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def second_python(tmp_path_factory) -> tuple[Path, Path]:
    """A real second interpreter: a bare venv (no pip) whose site-packages hold fake distributions."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    site = Path(purelib)
    for name, version in (("sglang", "0.5.18"), ("flashinfer_jit_cache", "0.7.4+cu130")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    (site / "flashinfer_jit_cache").mkdir()
    (site / "flashinfer_jit_cache" / "_build_meta.py").write_text(BUILD_META.format("0.7.4+cu130"))
    return python, site


def test_probe_python_reads_the_other_interpreters_packages(second_python):
    python, site = second_python
    found = by_name(probe_python(str(python)))
    assert found["sglang"].version == "0.5.18"
    assert found["flashinfer-jit-cache"].module_version == "0.7.4+cu130"
    assert found["sglang"].location == str(site)
    assert "torch" not in found  # ours has torch; the bare venv does not


def test_probe_live_with_python_reports_that_interpreter(second_python, fake_nvml):
    python, _ = second_python
    facts = probe_live(python=str(python), environ={}, nvml=fake_nvml("h20-8"))
    assert facts.python_executable == str(python)
    assert facts.host.python == platform.python_version()
    assert facts.package("sglang").version == "0.5.18" and not facts.package("torch").installed
    assert len(facts.gpus) == 8  # NVML still answers from here


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python3")
def test_probe_python_against_the_system_interpreter():
    packages = probe_python("/usr/bin/python3")
    assert isinstance(packages, tuple)


OLD_PYTHONS = {version: Path.home() / ".pyenv" / "versions" / version / "bin" / "python" for version in ("2.7.18", "3.8.18")}


@pytest.mark.skipif(not all(p.exists() for p in OLD_PYTHONS.values()), reason="no pyenv Python 2.7 / 3.8 here")
def test_the_scan_runs_on_python_38_and_refuses_python_2(make_dist):
    assert probe_python(str(OLD_PYTHONS["3.8.18"])) == ()  # nothing watched there, but it ran
    with pytest.raises(PythonProbeError, match=r"needs Python >= 3.8; this is 2.7.18"):
        probe_python(str(OLD_PYTHONS["2.7.18"]))


def write_program(tmp_path: Path, body: str, mode: int = 0o755) -> Path:
    program = tmp_path / "fake-python"
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(mode)
    return program


@pytest.mark.parametrize(
    "body, words",
    [
        ("echo 'Welcome to my shell'\n", "said: Welcome to my shell"),
        ("echo 'TP_ADVISOR_PACKAGES {not json'\n", "not a working Python"),
        ("echo oops >&2; exit 3\n", "exit status 3, said: oops"),
        ("echo 'TP_ADVISOR_PACKAGES {\"packages\": 5}'\n", "unexpected answer"),
        ("echo 'TP_ADVISOR_PACKAGES {\"python\": 3, \"executable\": \"/x\", \"packages\": []}'\n", "unexpected answer"),
        ("echo 'TP_ADVISOR_PACKAGES {\"python\": \"3.11\", \"executable\": \"/x\", \"packages\": [[1]]}'\n",
         "unexpected answer"),
        ("echo 'TP_ADVISOR_PACKAGES {\"python\": \"3.11\", \"executable\": \"/x\", \"packages\": "
         "[{\"name\": \"torch\", \"version\": 2}]}'\n", "unexpected answer"),
        ("echo 'TP_ADVISOR_PACKAGES {\"python\": \"3.11\", \"executable\": \"/x\", \"packages\": "
         "[{\"name\": \"torch\", \"unknown\": [1]}]}'\n", "unexpected answer"),
    ],
    ids=["garbage", "bad-json", "fails", "wrong-shape", "python-not-text", "package-not-object", "version-not-text",
         "unknown-not-object"],
)
def test_probe_python_against_a_program_that_is_not_python(tmp_path, body, words):
    program = write_program(tmp_path, body)
    with pytest.raises(PythonProbeError) as caught:
        probe_python(str(program))
    message = str(caught.value)
    assert "\n" not in message and str(program) in message and words in message
    assert "pass --python the path of a Python" in message


def test_probe_python_error_cases(tmp_path):
    cases = {
        str(tmp_path / "nope"): "no such file",
        str(tmp_path): "is a directory",
        str(write_program(tmp_path, "exit 0\n", mode=0o644)): "cannot run it",
    }
    for path, words in cases.items():
        with pytest.raises(PythonProbeError, match=words):
            probe_python(path)
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    with pytest.raises(PythonProbeError, match=r"no answer within 0.3 s"):
        probe_python(str(slow), timeout=0.3)


def test_a_bare_name_is_looked_up_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    name = Path(sys.executable).name
    version, executable, _ = python_facts(name)
    assert version == platform.python_version()
    with pytest.raises(PythonProbeError, match="not found on PATH"):
        probe_python("python-that-does-not-exist")


def test_a_relative_path_is_taken_from_the_callers_directory(tmp_path, monkeypatch):
    """The probe runs the interpreter from the interpreter's own directory; a relative --python names a file from ours."""
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    version, _, _ = python_facts(os.path.join("venv", "bin", "python"))
    assert version == platform.python_version()


def test_probe_live_with_a_bad_python_raises_the_one_line_error(tmp_path):
    with pytest.raises(PythonProbeError, match="no such file"):
        probe_live(python=str(tmp_path / "python9"))
