"""The environment an engine inherits: CUDA_VISIBLE_DEVICES resolved to physical GPUs, and the variables that matter."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from advisor.facts import Gpu

PREFIXES = ("CUDA_", "NCCL_", "FLASHINFER_", "SGLANG_", "VLLM_", "TORCH_")
SECRET_WORDS = ("SECRET", "TOKEN", "KEY", "PASSWORD")


def filter_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Variables named CUDA_VISIBLE_DEVICES or starting with a watched prefix, minus anything that looks secret."""
    kept = {}
    for name, value in environ.items():
        upper = name.upper()
        if any(word in upper for word in SECRET_WORDS):
            continue
        if name == "CUDA_VISIBLE_DEVICES" or name.startswith(PREFIXES):
            kept[name] = value
    return dict(sorted(kept.items()))


def visible_gpus(value: str | None, gpus: Iterable[Gpu]) -> tuple[tuple[int, ...] | None, str | None]:
    """Physical indices CUDA exposes under CUDA_VISIBLE_DEVICES=value, in CUDA order, and a note when entries are dropped.

    Like the CUDA runtime: entries are indices or "GPU-<uuid>" (a unique prefix is enough); the first invalid, unknown
    or repeated entry ends the list, so "0,1,7,2" on a 4-GPU machine exposes GPUs 0 and 1 only. Unset means all GPUs.
    Returns (None, note) only when the value cannot be resolved at all (MIG instances, unknown UUIDs of failed GPUs).
    """
    gpus = list(gpus)
    indices = [g.index for g in gpus]
    if value is None:
        return tuple(indices), None
    text = value.strip()
    if not text:
        return (), "CUDA_VISIBLE_DEVICES is empty, so no GPU is visible; unset it to use all GPUs"
    chosen: list[int] = []
    for raw in text.split(","):
        entry = raw.strip()
        index, why = _resolve(entry, gpus)
        if index is None and why == "unresolvable":
            return None, f"CUDA_VISIBLE_DEVICES entry {entry!r} names a MIG instance or a GPU whose UUID is unknown"
        if index is not None and index in chosen:
            index, why = None, f"GPU {index} is listed twice"
        if index is None:
            kept = ",".join(str(i) for i in chosen) or "none"
            return tuple(chosen), (
                f"CUDA_VISIBLE_DEVICES={value!r}: entry {entry!r} is invalid ({why}); CUDA ignores it and every entry"
                f" after it, so the visible GPUs are: {kept}"
            )
        chosen.append(index)
    return tuple(chosen), None


def _resolve(entry: str, gpus: list[Gpu]) -> tuple[int | None, str]:
    if entry.upper().startswith("MIG-"):
        return None, "unresolvable"
    if entry.upper().startswith("GPU-"):
        wanted = entry.lower()
        matches = [g for g in gpus if g.uuid and g.uuid.lower().startswith(wanted)]
        if len(matches) == 1:
            return matches[0].index, ""
        if len(matches) > 1:
            return None, "the UUID prefix matches several GPUs"
        if any(g.uuid is None for g in gpus):
            return None, "unresolvable"
        return None, "no GPU has this UUID"
    if entry.isdigit():
        index = int(entry)
        if index in {g.index for g in gpus}:
            return index, ""
        return None, f"there are {len(gpus)} GPUs, numbered from 0"
    return None, "not an index or a GPU-<uuid>"
