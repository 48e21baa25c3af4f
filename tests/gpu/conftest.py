"""Tests marked `gpu` need CUDA: skipped (with the reason) wherever torch sees no CUDA device, as in CI."""

from __future__ import annotations

import pytest


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (tests/gpu/run.sh runs these on a GPU machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
