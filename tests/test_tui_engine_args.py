"""The form's engine arguments (Textual's Pilot): one field split as a shell line, evaluated as `advisor check -- ARGS`."""

from __future__ import annotations

import json

import pytest
from cli_json import invoke
from textual.color import Color
from textual.widgets import Input, Static
from tui_helpers import make_app, settle

from advisor.report import plan_to_dict

pytestmark = pytest.mark.anyio

MODEL = "Qwen/Qwen3-8B"
SCENARIO = ("--engine", "vllm", "--engine-version", "0.33.0", "--profile", "h100-sxm-8", "--model", MODEL, "--tp", "8")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _app():
    return make_app(profile="h100-sxm-8", model=MODEL, tp=8, engine="vllm", engine_version="0.33.0")


async def _type_args(pilot, text: str) -> None:
    field = pilot.app.main.query_one("#engine_args", Input)
    field.focus()
    await pilot.pause()
    field.value = ""
    await pilot.press(*text)  # typed key by key, as a person would
    await settle(pilot)


def _cli_decisions(*engine_args: str) -> list[dict]:
    result = invoke("check", "--json", *SCENARIO, "--", *engine_args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["decisions"]


async def test_engine_args_are_evaluated_as_the_cli_evaluates_them():
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.main.evaluation.plan.decision("compilation").state == "auto-enabled"

        await _type_args(pilot, "-O0 --max-num-seqs 64")

        plan = app.main.evaluation.plan
        assert plan.intent.overrides == ("-O0", "--max-num-seqs", "64")
        assert plan.decision("compilation").state == "forced-off"
        assert plan.decision("memory_defaults").value["max_num_seqs"] == 64
        assert plan.argv[-3:] == ("-O0", "--max-num-seqs", "64")
        assert plan_to_dict(plan)["decisions"] == _cli_decisions("-O0", "--max-num-seqs", "64")


async def test_a_quote_left_open_is_a_message_in_the_form_and_the_plan_keeps_the_last_readable_args():
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _type_args(pilot, "--enforce-eager --attention-backend 'FLASH_ATTN")

        error = app.main.query_one("#engine_args_error", Static)
        assert error.display and "no closing quotation" in str(error.content)
        assert error.styles.color == Color.parse(app.get_css_variables()["error"])  # the form's own CSS styles it
        assert "close the quote" in str(error.tooltip)
        assert app.main.query_one("#engine_args", Input).has_class("-invalid")
        assert _label_row(app, "profile") == app.main.query_one("#profile").region.y  # names stay beside their fields
        # While typing, the words before the quote were read; the open quote itself changed nothing.
        assert app.main.evaluation.plan.intent.overrides == ("--enforce-eager", "--attention-backend")

        await pilot.press("'")
        await settle(pilot)
        assert not error.display
        assert _label_row(app, "profile") == app.main.query_one("#profile").region.y
        plan = app.main.evaluation.plan
        assert plan.intent.overrides == ("--enforce-eager", "--attention-backend", "FLASH_ATTN")
        assert plan.decision("compilation").state == "forced-off"
        assert plan.decision("attention_backend").value == "FLASH_ATTN"
        assert plan_to_dict(plan)["decisions"] == _cli_decisions("--enforce-eager", "--attention-backend", "FLASH_ATTN")


async def test_engine_args_given_to_the_app_show_in_the_field():
    app = make_app(profile="h100-sxm-8", model=MODEL, tp=8, engine="vllm", overrides=("-cc.pass_config.x=a b", "-O1"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.main.query_one("#engine_args", Input).value == "'-cc.pass_config.x=a b' -O1"


def _label_row(app, control: str) -> int:
    """The screen row of a control's name in the form's first column."""
    return app.main.query_one(f"#{control}-label").region.y


async def test_a_quote_left_open_stays_marked_when_the_field_loses_focus():
    # Input validates on blur by default, which took the field's -invalid mark away while the error line still showed.
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _type_args(pilot, "--attention-backend 'FLASH_ATTN")
        app.main.set_focus(app.main.query_one("#decisions"))
        await pilot.pause()
        assert app.main.query_one("#engine_args_error", Static).display
        assert app.main.query_one("#engine_args", Input).has_class("-invalid")
