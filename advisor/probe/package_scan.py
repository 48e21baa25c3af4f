"""Scan sys.path for the watched distributions; stdlib only, Python 3.8 compatible, no imports of the packages.

This file runs twice: imported by advisor.probe.packages for this interpreter, and sent as source to another interpreter
(`--python PATH`), where it prints one JSON line. Keep it self-contained: no advisor imports, no f-string `=`,
no `X | Y` annotations, nothing newer than Python 3.8.

Versions come from each dist-info's METADATA through importlib.metadata; module versions from package files read as text:
- flashinfer_cubin/_build_meta.py, flashinfer_jit_cache/_build_meta.py: ``__version__ = "0.6.11+cu128"`` (what
  `import flashinfer` compares against its own version);
- flashinfer/_build_meta.py, else a literal ``__version__`` in flashinfer/version.py (else "0.0.0+unknown", as
  flashinfer itself falls back to);
- torch/version.py: ``__version__`` and ``cuda = '12.8'`` (``None`` on CPU builds).
"""

import json
import os
import re
import sys

WATCH_EXACT = (
    "torch",
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "sglang",
    "sglang-kernel",
    "sgl-kernel",
    "vllm",
    "triton",
    "transformers",
    "nvidia-ml-py",
    "pynvml",
)
WATCH_PREFIXES = ("flashinfer-jit-cache-", "nvidia-nccl-")
MARKER = "TP_ADVISOR_PACKAGES "

_VERSION_RE = re.compile(r"""^__version__\s*(?::\s*[\w\[\]., ]+)?=\s*['"]([^'"]+)['"]""", re.M)
_TORCH_CUDA_RE = re.compile(r"""^cuda\s*(?::\s*[\w\[\]., ]+)?=\s*(?:['"]([^'"]*)['"]|(None))""", re.M)


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower().strip("-")


def watched(name):
    return name in WATCH_EXACT or name.startswith(WATCH_PREFIXES)


def _dist_name(entry):
    """Distribution name from a *.dist-info / *.egg-info directory name, or None."""
    for suffix in (".dist-info", ".egg-info"):
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            return normalize(stem.split("-", 1)[0])
    return None


def find(path):
    """(normalised name, metadata directory) of each watched distribution; the first on the path wins, as for import."""
    found = {}
    for entry_dir in path:
        if not entry_dir:
            entry_dir = os.getcwd()
        try:
            names = sorted(os.listdir(entry_dir))
        except OSError:
            continue
        for entry in names:
            name = _dist_name(entry)
            if name and watched(name) and name not in found:
                found[name] = os.path.join(entry_dir, entry)
    return found


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _literal_version(path):
    try:
        match = _VERSION_RE.search(_read(path))
    except (OSError, UnicodeDecodeError):
        return None
    return match.group(1) if match else None


def module_version(name, location, unknown):
    """The __version__ the package's files define, or None (with a reason in unknown) when it cannot be read."""
    files = {
        "flashinfer-cubin": ["flashinfer_cubin/_build_meta.py"],
        "flashinfer-jit-cache": ["flashinfer_jit_cache/_build_meta.py"],
        "flashinfer-python": ["flashinfer/_build_meta.py", "flashinfer/version.py"],
        "torch": ["torch/version.py"],
    }.get(name)
    if not files:
        return None
    for rel in files:
        version = _literal_version(os.path.join(location, rel))
        if version:
            return version
    if name == "flashinfer-python" and os.path.exists(os.path.join(location, "flashinfer", "version.py")):
        return "0.0.0+unknown"  # flashinfer/version.py falls back to this when _build_meta.py is missing
    unknown["module_version"] = "no __version__ in " + " or ".join(files)
    return None


def torch_cuda(location, unknown):
    path = os.path.join(location, "torch", "version.py")
    try:
        match = _TORCH_CUDA_RE.search(_read(path))
    except (OSError, UnicodeDecodeError) as exc:
        unknown["cuda"] = "cannot read torch/version.py (" + type(exc).__name__ + ")"
        return None
    if not match:
        unknown["cuda"] = "torch/version.py has no cuda = ..."
        return None
    return match.group(1) or None


def describe(name, meta_dir):
    """A dict with the fields of advisor.facts.Package; unreadable metadata leaves fields unknown with a reason."""
    import pathlib
    from importlib.metadata import PathDistribution

    location = os.path.dirname(meta_dir)
    info = {"name": name, "installed": True, "version": None, "local_label": None, "location": location,
            "module_version": None, "cuda": None, "unknown": {}}
    unknown = info["unknown"]
    try:
        metadata = PathDistribution(pathlib.Path(meta_dir)).metadata
        version = metadata.get("Version") if metadata is not None else None
    except Exception as exc:  # noqa: BLE001 - broken METADATA: this package's fields unknown, the others fine
        version = None
        unknown["version"] = "unreadable METADATA in " + meta_dir + " (" + type(exc).__name__ + ")"
    if version:
        version = version.strip()
        info["version"] = version
        info["local_label"] = version.split("+", 1)[1] if "+" in version else None
    elif "version" not in unknown:
        unknown["version"] = "METADATA without Version in " + meta_dir
    if "version" in unknown:
        unknown["local_label"] = unknown["version"]
    info["module_version"] = module_version(name, location, unknown)
    if name == "torch":
        info["cuda"] = torch_cuda(location, unknown)
    return info


def scan(path=None):
    """Dicts for every watched distribution on ``path`` (default sys.path), sorted by name."""
    found = find(sys.path if path is None else path)
    return [describe(name, found[name]) for name in sorted(found)]


def main():
    import platform

    if sys.version_info < (3, 8):  # noqa: UP036 - this file also runs in other interpreters
        sys.stderr.write("the package probe needs Python >= 3.8; this is " + platform.python_version() + "\n")
        sys.exit(2)
    payload = {"python": platform.python_version(), "executable": sys.executable, "packages": scan([p for p in sys.path if p])}
    sys.stdout.write(MARKER + json.dumps(payload) + "\n")


if __name__ == "__main__":
    main()
