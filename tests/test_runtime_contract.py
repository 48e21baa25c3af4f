"""launcher/runtime/contract.py: one home for the bundled runtime's choices, read by the runtime and the advisor alike."""

from __future__ import annotations

import subprocess
import sys

from launcher.runtime import contract
from launcher.runtime.worker import build_parser


def _choices(flag: str) -> tuple[str, ...]:
    action = next(a for a in build_parser()._actions if flag in a.option_strings)
    return tuple(action.choices)


def test_the_runtime_parser_accepts_exactly_the_contracts_choices():
    assert _choices(contract.ALLREDUCE_FLAG) == contract.ALLREDUCE_CHOICES
    assert _choices("--dtype") == contract.DTYPES
    assert _choices("--device") == contract.DEVICES
    assert _choices("--mode") == contract.MODES


def test_auto_choices_agree_with_each_other():
    assert contract.auto_dtype(contract.device_for(True)) == "bfloat16"
    assert contract.auto_dtype(contract.device_for(False)) == "float32"
    assert contract.process_group_backend(contract.device_for(True)) == "nccl"
    assert contract.process_group_backend(contract.device_for(False)) == "gloo"
    assert set(contract.FUSION_DTYPES) < set(contract.DTYPES)


def test_workspace_bytes_caps_the_lamport_buffers():
    assert contract.fusion_workspace_bytes(2, 2048, 4096) == 2 * 2048 * 4096 * 2 * 4
    big = contract.fusion_workspace_bytes(16, 2048, 16384, 4)
    assert big == 16 * 2048 * 16384 * 4 + contract.FUSION_LAMPORT_CAP_BYTES


def test_importing_the_contract_imports_nothing_heavy():
    code = "import sys, launcher.runtime.contract; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'advisor')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
