"""The launch screen's job dialog (j, multi-node plans only) writes the same job file as `advisor launch --on`."""

from __future__ import annotations

import pytest
import yaml
from textual.widgets import Input, Select
from tui_helpers import make_app, settle

from advisor.schedulers import JobSettings, job_text
from advisor.tui.screens.job import JobScreen
from advisor.tui.screens.launch import LaunchScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def multi_node_app():
    return make_app(profile="h100-sxm-8", model="deepseek-ai/DeepSeek-V3", engine="vllm", tp=16, nnodes=2)


async def open_launch(pilot) -> LaunchScreen:
    await settle(pilot)
    await pilot.press("l")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    return screen


async def test_j_writes_the_chosen_schedulers_job(tmp_path):
    app = multi_node_app()
    async with app.run_test(size=(120, 40)) as pilot:
        launch = await open_launch(pilot)
        assert launch.check_action("write_job", ()) is True
        await pilot.press("j")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, JobScreen)
        dialog.query_one("#job-target", Select).value = "kubernetes"
        await pilot.pause()
        assert dialog.query_one(Input).value == "vllm-job.yaml"  # the default name follows the target
        target = tmp_path / "job.yaml"
        dialog.query_one(Input).value = str(target)
        await pilot.click("#write")
        for _ in range(50):
            if target.exists():
                break
            await pilot.pause(0.1)
        assert target.read_text() == job_text(launch.plan, "kubernetes", JobSettings())
        lws, _ = yaml.safe_load_all(target.read_text())
        assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
        assert list(tmp_path.iterdir()) == [target]


async def test_a_single_node_plan_has_no_job_key():
    app = make_app(profile="h100-sxm-8", model="deepseek-ai/DeepSeek-V3", engine="vllm", tp=8)
    async with app.run_test(size=(120, 40)) as pilot:
        launch = await open_launch(pilot)
        assert launch.check_action("write_job", ()) is False
        await pilot.press("j")
        await pilot.pause()
        assert app.screen is launch


async def test_the_shared_save_form_keeps_the_dialog_open_on_a_bad_path_and_cancel_closes_it(tmp_path):
    app = multi_node_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        launch = await open_launch(pilot)
        await pilot.press("j")
        await pilot.pause()
        dialog = app.screen
        dialog.query_one("#job-path", Input).value = str(tmp_path / "no-such-dir" / "job.sbatch")
        await pilot.click("#write")
        await pilot.pause(0.5)
        assert any("Cannot write" in n.message for n in app._notifications)
        assert app.screen is dialog  # open for another name
        await pilot.click("#cancel")
        await pilot.pause()
        assert app.screen is launch
    assert list(tmp_path.iterdir()) == []
