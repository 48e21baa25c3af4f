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
    """Physical indices CUDA exposes under CUDA_VISIBLE_DEVICES=value, in CUDA order, and a note when it drops some.

    Follows the CUDA runtime as PyTorch models it (torch.cuda._parse_visible_devices, _transform_uuid_to_ordinals):
    - unset: every GPU; empty: none;
    - a list of indices, each read like strtoul ("1gpu" is 1); the first entry that is not a number, is negative
      or is past the last GPU ends the list ("0,1,7,2" on 4 GPUs exposes 0 and 1);
    - a list starting with "GPU-": UUIDs or unique prefixes of them; the first entry that is not "GPU-...", matches
      no GPU or several GPUs ends the list;
    - any GPU listed twice makes the whole list empty.
    Returns (None, note) when the value cannot be resolved here (MIG instances, GPUs whose UUID is unknown).
    """
    gpus = list(gpus)
    if value is None:
        return tuple(g.index for g in gpus), None
    text = value.strip()
    if not text:
        return (), "CUDA_VISIBLE_DEVICES is empty, so no GPU is visible; unset it to use all GPUs"
    if text.startswith("MIG-"):
        return _mig_instances(value, gpus)
    by_uuid = text.startswith("GPU-")
    if by_uuid and any(g.uuid is None for g in gpus):
        return None, f"CUDA_VISIBLE_DEVICES={value!r} uses UUIDs, but the UUID of some GPU is unknown"
    chosen: list[int] = []
    for raw in text.split(","):
        entry = raw.strip() if not by_uuid else raw
        index, why = _by_uuid(entry, gpus) if by_uuid else _by_index(entry, gpus)
        if index is None:
            kept = ",".join(str(i) for i in chosen) or "none"
            return tuple(chosen), (
                f"CUDA_VISIBLE_DEVICES={value!r}: entry {entry!r} {why}; CUDA ignores it and every entry after it,"
                f" so the visible GPUs are: {kept}"
            )
        if index in chosen:
            return (), f"CUDA_VISIBLE_DEVICES={value!r} lists GPU {index} twice, which makes CUDA see no GPU at all"
        chosen.append(index)
    return tuple(chosen), None


def _mig_instances(value: str, gpus: list[Gpu]) -> tuple[tuple[int, ...] | None, str]:
    """CUDA_VISIBLE_DEVICES naming MIG instances. Instances exist only on GPUs in MIG mode: with none, CUDA sees no
    GPU; otherwise each entry is one instance on one of them (which one is not resolved here: NVML's instance UUIDs are
    not probed), so the MIG-enabled GPUs, at most one per entry, stand for them."""
    modes = [g.mig_mode for g in gpus]
    if gpus and all(mode is not None for mode in modes) and "enabled" not in modes:
        return (), (f"CUDA_VISIBLE_DEVICES={value!r} names MIG instances, but no GPU here is in MIG mode, so CUDA sees no"
                    " GPU; unset it or list GPU indices")  # fmt: skip
    mig = [g.index for g in gpus if g.mig_mode == "enabled"]
    if not mig:
        return None, f"CUDA_VISIBLE_DEVICES={value!r} names MIG instances, and the GPUs' MIG mode is unknown here"
    entries = [e for e in value.split(",") if e.strip()]
    chosen = tuple(mig[: len(entries)])
    return chosen, (f"CUDA_VISIBLE_DEVICES={value!r} names MIG instances: taken as instances of the MIG-enabled GPU(s)"
                    f" {', '.join(map(str, chosen))} (instance UUIDs are not resolved here)")  # fmt: skip


def _by_index(entry: str, gpus: list[Gpu]) -> tuple[int | None, str]:
    digits = entry[1:] if entry[:1] in "+-" else entry
    sign = -1 if entry.startswith("-") else 1
    lead = len(digits) - len(digits.lstrip("0123456789"))
    if lead == 0:
        return None, "is not a GPU index"
    index = sign * int(digits[:lead])
    if index < 0:
        return None, "is negative"
    if index not in {g.index for g in gpus}:
        return None, f"is past the last GPU (there are {len(gpus)}, numbered from 0)"
    return index, ""


def _by_uuid(entry: str, gpus: list[Gpu]) -> tuple[int | None, str]:
    if not entry.startswith("GPU-"):
        return None, "does not start with GPU- like the first entry"
    matches = [g for g in gpus if g.uuid and g.uuid.startswith(entry)]
    if len(matches) > 1:
        return None, "is a UUID prefix that matches several GPUs"
    if not matches:
        return None, "matches no GPU's UUID"
    return matches[0].index, ""
