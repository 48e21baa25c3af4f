"""The Machine tab shows the launch-pitfall facts with the problems they raise (Textual Pilot, simulated machines)."""

from __future__ import annotations

import pytest
from tui_helpers import make_app, settle, static_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def machine_tab(app, pilot) -> str:
    await settle(pilot)
    await pilot.press("m")
    await pilot.pause()
    assert app.main.active_tab == "machine"
    return static_text(app, "#pitfalls")


async def test_the_rtx_4090_pair_shows_no_p2p_and_the_problem():
    app = make_app(profile="rtx-4090-2", model="Qwen/Qwen3-8B", tp=2, engine="sglang")
    async with app.run_test(size=(100, 40)) as pilot:
        text = await machine_tab(app, pilot)
        assert "P2P read/write  GPU 0-1: not supported/not supported  ! p2p_unavailable" in text
        assert "/dev/shm        64000 MiB" in text and "locked memory   8192 KiB" in text
        problems = static_text(app, "#problems")
        assert "peer access is not supported" in problems and "--disable-custom-all-reduce" in problems


async def test_the_container_shows_its_broken_states_and_switching_machines_updates_them():
    app = make_app(profile="a100-pcie-4-container", model="Qwen/Qwen3-8B", tp=4, engine="vllm")
    async with app.run_test(size=(120, 40)) as pilot:
        text = await machine_tab(app, pilot)
        for line in ("IOMMU DMA-FQ; ACS redirects P2P on 0000:17:00.0", "! pcie_acs_or_iommu", "CUDA order 0,2,1,3",
                     "i gpu_order", "/dev/shm        64 MiB  ! shm_too_small", "NCCL_P2P_DISABLE=1"):  # fmt: skip
            assert line in text, (line, text)
        assert "fabric_not_ready" not in text
        app.main.query_one("#profile").value = "h200-8-fabric-pending"
        await settle(pilot)
        text = static_text(app, "#pitfalls")
        assert "NVLink fabric   in progress  ✗ fabric_not_ready" in text
        assert "shm_too_small" not in text and "/dev/shm        515000 MiB" in text


async def test_the_workstation_names_who_holds_the_busy_gpu():
    app = make_app(profile="workstation-mixed-2", model="Qwen/Qwen3-8B", tp=2, engine="sglang")
    async with app.run_test(size=(100, 40)) as pilot:
        text = await machine_tab(app, pilot)
        assert "GPU 1 18.4 GiB (Xorg 2143, python 48210)  ✗ gpu_memory_in_use" in text
        assert "mixed: NVIDIA GeForce RTX 4090 24.0 GiB, NVIDIA RTX 6000 Ada Generation 48.0 GiB  ! heterogeneous_gpus" in text
