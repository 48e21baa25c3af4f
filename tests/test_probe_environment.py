"""CUDA_VISIBLE_DEVICES as the CUDA runtime reads it, and the environment variables an engine inherits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.probe.environment import filter_environment, visible_gpus
from advisor.probe.live import probe_live
from advisor.probe.profiles import load_profile

GPUS = load_profile("l40s-4").gpus  # four GPUs, indices 0-3


def uuid_of(index: int) -> str:
    return GPUS[index].uuid


@pytest.mark.parametrize(
    "value, expected, noted",
    [
        (None, (0, 1, 2, 3), False),
        ("2,0", (2, 0), False),
        (" 3 , 1 ", (3, 1), False),
        ("1gpu,2ampere", (1, 2), False),  # read like strtoul
        ("0,1,7,2", (0, 1), True),  # 7 does not exist: CUDA stops there
        ("0,abc,1", (0,), True),
        ("-1", (), True),
        ("1,2,1", (), True),  # a repeated GPU makes the list empty
        ("", (), True),
    ],
)
def test_by_index(value, expected, noted):
    indices, note = visible_gpus(value, GPUS)
    assert indices == expected
    assert (note is not None) is noted


def test_notes_say_why():
    _, note = visible_gpus("0,1,7,2", GPUS)
    assert "'7' is past the last GPU (there are 4, numbered from 0)" in note and "visible GPUs are: 0,1" in note
    assert "no GPU is visible" in visible_gpus("", GPUS)[1]
    assert "twice" in visible_gpus("1,2,1", GPUS)[1]


def test_by_uuid_full_and_prefix():
    assert visible_gpus(f"{uuid_of(3)},{uuid_of(1)[:12]}", GPUS) == ((3, 1), None)
    indices, note = visible_gpus("GPU-,1", GPUS)  # a prefix matching every GPU is ambiguous
    assert indices == () and "matches several GPUs" in note
    indices, note = visible_gpus(f"{uuid_of(1)},GPU-00000000-dead,{uuid_of(0)}", GPUS)
    assert indices == (1,) and "matches no GPU" in note
    indices, note = visible_gpus(f"{uuid_of(2)},0", GPUS)  # mixing forms: the index ends the UUID list
    assert indices == (2,) and "does not start with GPU-" in note
    assert visible_gpus(f"0,{uuid_of(2)}", GPUS)[0] == (0,)
    assert visible_gpus(f"{uuid_of(2)},{uuid_of(2)}", GPUS)[0] == ()


MIG_UUID = "MIG-6d4f8b2e-0000-0000-0000-000000000000"


def test_mig_instances_on_gpus_without_mig_mode_leave_no_gpu_visible():
    """No GPU in MIG mode: no MIG instance exists, so CUDA sees nothing (not every GPU)."""
    plain = tuple(replace(g, mig_mode="disabled") for g in GPUS)
    indices, note = visible_gpus(MIG_UUID, plain)
    assert indices == () and "no GPU here is in MIG mode" in note


def test_mig_instances_stand_on_the_mig_enabled_gpus():
    mixed = tuple(replace(g, mig_mode="enabled" if g.index in (1, 3) else "disabled") for g in GPUS)
    assert visible_gpus(MIG_UUID, mixed)[0] == (1,)
    assert visible_gpus(f"{MIG_UUID},{MIG_UUID[:-1]}1", mixed)[0] == (1, 3)


def test_mig_and_unknown_uuids_cannot_be_resolved():
    unknown_mode = tuple(replace(g, mig_mode=None) for g in GPUS)
    indices, note = visible_gpus(MIG_UUID, unknown_mode)
    assert indices is None and "MIG" in note

    blind = (replace(GPUS[0], uuid=None), *GPUS[1:])
    indices, note = visible_gpus("GPU-ffff", blind)
    assert indices is None and "UUID of some GPU is unknown" in note
    assert visible_gpus("1,0", blind) == ((1, 0), None)


def test_probe_live_resolves_against_the_probed_gpus(fake_nvml):
    facts = probe_live(environ={"CUDA_VISIBLE_DEVICES": "3,0,9"}, nvml=fake_nvml("l40s-4"))
    assert facts.visible_gpus == (3, 0)
    assert [g.index for g in facts.engine_gpus] == [3, 0]
    assert "'9' is past the last GPU" in facts.visible_gpus_note
    assert facts.environment == {"CUDA_VISIBLE_DEVICES": "3,0,9"}


def test_environment_filter_keeps_engine_variables_and_drops_secrets():
    environ = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "CUDA_HOME": "/usr/local/cuda",
        "NCCL_DEBUG": "INFO",
        "FLASHINFER_DISABLE_VERSION_CHECK": "1",
        "SGLANG_ENABLE_JIT_DEEPGEMM": "0",
        "VLLM_ALLREDUCE_USE_SYMM_MEM": "1",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "VLLM_API_KEY": "sk-1",
        "SGLANG_HF_TOKEN": "hf_x",
        "NCCL_IB_SECRET_THING": "x",
        "TORCH_Password": "x",
        "HF_TOKEN": "hf_y",
        "PATH": "/usr/bin",
        "OMP_NUM_THREADS": "1",
    }
    assert list(filter_environment(environ)) == [
        "CUDA_HOME",
        "CUDA_VISIBLE_DEVICES",
        "FLASHINFER_DISABLE_VERSION_CHECK",
        "NCCL_DEBUG",
        "SGLANG_ENABLE_JIT_DEEPGEMM",
        "TORCH_CUDA_ARCH_LIST",
        "VLLM_ALLREDUCE_USE_SYMM_MEM",
    ]
