"""The `advisor` TUI driven through Textual's Pilot: real profiles, real rules, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import jsonschema
import pytest
from textual.pilot import Pilot
from textual.widgets import Footer, Input, OptionList, Select
from textual.widgets._footer import FooterKey
from textual.widgets._select import SelectOverlay
from tui_helpers import command_button, detail_text, fusion, make_app, settle, shown_text, static_text

from advisor.tui.session import releases_for
from advisor.tui.widgets.decision_table import DecisionTable

QWEN3_VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"


@asynccontextmanager
async def qwen3_vl_on_b300(size: tuple[int, int] = (80, 24)) -> AsyncIterator[Pilot]:
    """The app on a simulated B300 x 8 with Qwen3-VL at tp 8 on SGLang (most tests' scenario), once its plan is shown."""
    app = make_app(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield pilot
SCHEMA = Path(__file__).resolve().parents[1] / "advisor" / "schema" / "plan.schema.json"

pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the async tests (no pytest-asyncio needed)


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_tp_1_turns_fusion_off_with_the_tp_condition_failed():
    async with qwen3_vl_on_b300((100, 30)) as pilot:
        app = pilot.app
        assert fusion(app).state == "auto-enabled"
        assert "--flashinfer-allreduce-fusion-backend" in app.main.evaluation.plan.argv

        await pilot.click("#tp")
        await pilot.press("end", "backspace", "1")
        await settle(pilot)

        decision = fusion(app)
        assert app.main.evaluation.plan.intent.tp == 1
        assert decision.state == "not-enabled" and not decision.enabled
        assert [c.id for c in decision.failed] == ["tp_gt_1"]
        table = app.main.query_one(DecisionTable)
        table.select_id("flashinfer_allreduce_fusion")
        await pilot.pause()
        shown = detail_text(app)
        assert "✗ " + decision.failed[0].text in shown
        assert "Release matrix" in shown
        assert "--flashinfer-allreduce-fusion-backend" not in app.main.evaluation.plan.argv

        await pilot.press("escape", "enter")  # leave the TP field, then open the decision on its own screen
        await pilot.pause()
        assert app.screen is not app.main
        body = app.screen.query_one("#decision-body").content
        assert body is not None
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_h20_with_sglang_0_5_12_fails_the_h20_condition():
    app = make_app(profile="b300-8", model="Qwen/Qwen3-30B-A3B", tp=8, engine="sglang")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert fusion(app).enabled
        app.main.query_one("#profile", Select).value = "h20-8"  # as the machine selector does
        app.main.query_one("#engine_version", Select).value = "0.5.12"
        await settle(pilot)

        plan = app.main.evaluation.plan
        assert plan.facts.source == "simulated:h20-8"
        assert plan.engine["rules"] == "0.5.12"
        assert [c.id for c in fusion(app).failed] == ["not_h20"]
        assert "h20-8" in app.sub_title
        # newer rules drop the H20 exclusion (v0.5.13)
        app.main.query_one("#engine_version", Select).value = "0.5.13"
        await settle(pilot)
        assert fusion(app).enabled
        # another engine forgets the SGLang release
        app.main.query_one("#engine", Select).value = "vllm"
        await settle(pilot)
        assert app.main.options.engine == "vllm" and app.main.options.engine_version is None
        assert app.main.evaluation.plan.engine["name"] == "vllm"
        assert app.main.query_one("#engine_version", Select).is_blank()  # installed/newest



async def test_a_form_choice_opens_and_picks_with_the_keyboard_and_the_mouse():
    """The form's choices (engine, release, machine...): enter opens the list below the field, down + enter picks, escape
    closes it unchanged; a click opens it too. Each pick re-evaluates the plan."""
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        release = app.main.query_one("#engine_version", Select)
        assert release.is_blank() and shown_text(app, release)[0].startswith("installed/newest")
        release.focus()
        await pilot.pause()
        highlighted = [label.id for label in app.main.query("#form > Label.-focused")]
        assert highlighted == ["engine_version-label"]  # the focused field's name
        await pilot.press("enter")
        await pilot.pause()
        menu = release.query_one(SelectOverlay)
        assert release.expanded and menu.highlighted == 0  # the blank entry, the current value
        assert menu.region.y == release.region.bottom  # the list starts on the line below the field
        await pilot.press("escape")
        await pilot.pause()
        assert not release.expanded and release.is_blank() and app.focused is release

        await pilot.press("enter", "down", "enter")
        await settle(pilot)
        newest = releases_for("sglang")[-1]
        assert release.value == newest and app.main.options.engine_version == newest
        assert app.main.evaluation.plan.engine["rules"] == newest
        assert app.focused is release

        engine = app.main.query_one("#engine", Select)
        engine.focus()
        await pilot.press("enter", "q")  # q does not quit while the list is open: letters search it
        await pilot.pause()
        assert app.is_running and engine.expanded
        await pilot.press("escape", "enter", "v", "enter")  # a letter jumps to the option that has it
        await settle(pilot)
        assert engine.value == "vllm" and app.main.evaluation.plan.engine["name"] == "vllm"

        dp_attention = app.main.query_one("#dp_attention", Select)
        await pilot.click("#dp_attention")
        await pilot.pause()
        assert dp_attention.expanded
        await pilot.press("down", "enter")
        await settle(pilot)
        assert dp_attention.value is True and app.main.evaluation.plan.intent.dp_attention


async def test_the_header_names_the_app_and_the_machine():
    async with qwen3_vl_on_b300() as pilot:
        assert "tp-advisor — sim-b300-8 · simulated b300-8" in shown_text(pilot.app, pilot.app.main.query_one("Header"))[0]


async def test_the_footer_shows_the_screen_keys_and_a_click_presses_one():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        footer = app.main.query_one(Footer)
        keys = [(key.key_display, key.description) for key in footer.query(FooterKey)]
        assert keys[:6] == [("r", "Re-probe"), ("l", "Launch"), ("e", "Export"), ("p", "Profile"), ("q", "Quit"),
                            ("?", "Help")]  # fmt: skip
        assert keys[-1][1] == "palette"
        help_key = next(key for key in footer.query(FooterKey) if key.description == "Help")
        await pilot.click(help_key)
        await pilot.pause()
        assert app.screen is not app.main  # the help screen
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_export_writes_json_that_validates(tmp_path):
    app = make_app(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang")
    target = tmp_path / "plan.json"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        path_input = app.screen.query_one("#export-path", Input)
        path_input.value = str(target)
        await pilot.press("enter")
        for _ in range(100):
            if target.exists() and app.screen is app.main:
                break
            await pilot.pause(0.05)
    data = json.loads(target.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    fusion_json = next(d for d in data["decisions"] if d["id"] == "flashinfer_allreduce_fusion")
    assert fusion_json["state"] == "auto-enabled"
    assert data["intent"]["tp"] == 8
    assert not list(tmp_path.glob(".*.tmp"))


async def test_export_to_a_missing_directory_says_so_and_writes_nothing(tmp_path):
    app = make_app(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang")
    target = tmp_path / "no-such-dir" / "plan.json"
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause(0.5)
        messages = [n.message for n in app._notifications]
        assert any("Cannot write" in m for m in messages), messages
        assert app.screen is not app.main  # the dialog stays open for another name
    assert not target.parent.exists()


async def test_no_driver_says_so_and_offers_simulated_machines():
    app = make_app(profile="cpu-only")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        plan = app.main.evaluation.plan
        assert plan.intent.engine == "bundled" and plan.intent.tp == 2  # the demo model on two gloo ranks
        await pilot.press("m")
        await pilot.pause()
        assert app.main.active_tab == "machine"
        callout = static_text(app, "#no-driver")
        assert "No NVIDIA driver on this machine" in callout
        offers = app.main.query_one("#profile-offers", OptionList)
        assert offers.display and offers.option_count >= 10
        offers.focus()
        offers.highlighted = [offers.get_option_at_index(i).id for i in range(offers.option_count)].index("h100-sxm-8")
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.evaluation.facts.source == "simulated:h100-sxm-8"
        assert app.main.query_one("#profile", Select).value == "h100-sxm-8"
        assert not app.main.query_one("#no-driver").display


async def test_bad_input_shows_a_one_line_error_and_recovers():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        await pilot.click("#model")
        await pilot.press("ctrl+a", "ctrl+k", *"nobody/no-such-model")
        await settle(pilot)
        evaluation = app.main.evaluation
        assert evaluation.plan is None and "nobody/no-such-model" in evaluation.error
        assert "\n" not in evaluation.error
        assert "nobody/no-such-model" in static_text(app, "#status")

        app.main.query_one("#model", Input).value = QWEN3_VL
        await settle(pilot)
        assert fusion(app).enabled


async def pick_profile(pilot, profile: str) -> None:
    """Open the profile picker (`p`), choose a profile with enter and wait for the new plan."""
    await pilot.press("p")
    await pilot.pause()
    options = pilot.app.screen.query_one("#profile-list", OptionList)
    ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
    options.highlighted = ids.index(profile)
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"profile": "nosuch"}, "unknown profile 'nosuch'"),
        ({"facts_file": "/nonexistent/facts.json"}, "no such facts file"),
        ({"profile": "b300-8", "engine": "sglang", "engine_version": "abc", "model": QWEN3_VL}, "not a release number"),
        ({"profile": "b300-8", "engine": "sglang", "model": QWEN3_VL, "moe_a2a_backend": "bogus"}, None),
    ],
)
async def test_bad_command_line_options_open_the_app_with_the_error(options, message):
    """What the command line passes in is shown, never a crash: the user fixes it in the form."""
    app = make_app(**options)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        evaluation = app.main.evaluation
        if message is None:
            assert evaluation.plan is not None or evaluation.error
        else:
            assert evaluation.plan is None and message in evaluation.error, evaluation.error
            assert message in static_text(app, "#status")
        await pilot.press("m")
        await pilot.pause()
        if message is not None and evaluation.facts is None:
            assert message in static_text(app, "#machine-summary")
        await pick_profile(pilot, "h200-8")
        assert app.main.evaluation.facts.source == "simulated:h200-8"


async def test_profile_picker_and_palette_switch_the_machine():
    app = make_app(profile="b300-8", model="Qwen/Qwen3-30B-A3B", tp=8, engine="sglang")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pick_profile(pilot, "a100-sxm-8")
        assert app.main.evaluation.facts.source == "simulated:a100-sxm-8"
        assert "sm90_or_sm100" in [c.id for c in fusion(app).failed]

        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Machine: h200-8")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.evaluation.facts.source == "simulated:h200-8"
        assert fusion(app).enabled


async def test_copy_puts_the_command_on_the_clipboard():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        await pilot.click(*command_button(app, "Copy"))
        await pilot.pause()
        assert app.clipboard.split()[-5:-3] == ["--tp-size", "8"] or "--tp-size 8" in app.clipboard
        assert "sglang.launch_server" in app.clipboard


async def test_mouse_click_on_a_decision_shows_its_conditions():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        table = app.main.query_one(DecisionTable)
        row = [d.id for d in app.main.evaluation.plan.decisions].index("attention_backend")
        await pilot.click("#decisions", offset=(6, 1 + row))  # the header takes the first line
        await pilot.pause()
        assert table.current_item.id == "attention_backend"
        assert app.main.evaluation.plan.decision("attention_backend").title in detail_text(app)


async def test_the_decision_list_keys_move_scroll_and_open():
    """vLLM on an H100 machine: ten rows, more than the list shows at 80x24, so it scrolls with the cursor."""
    app = make_app(profile="h100-sxm-8", engine="vllm", model="Qwen/Qwen3-30B-A3B")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.query_one(DecisionTable)
        plan = app.main.evaluation.plan
        ids = [d.id for d in plan.decisions] + list(dict.fromkeys(p.id for p in plan.problems))
        assert table.row_count == len(ids) > table.size.height - 1  # the header takes a line
        await pilot.press("down", "down")
        assert table.current_item.id == ids[2] and plan.decision(ids[2]).title in detail_text(app)
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert table.current_item.id == ids[-1] and table.scroll_offset.y > 0
        await pilot.press("ctrl+home")
        await pilot.pause()
        assert table.current_item.id == ids[0] and table.scroll_offset.y == 0
        await pilot.press("pagedown")
        assert table.current_item.id == ids[table.size.height - 1]
        await pilot.press("pageup", "up", "end", "home")
        assert table.current_item.id == ids[0]
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is not app.main


def test_importing_the_cli_does_not_import_textual():
    code = "import sys, advisor.cli; sys.exit('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


async def test_reprobe_loads_the_facts_again():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        before = app.main.evaluation
        await pilot.press("r")
        await settle(pilot)
        after = app.main.evaluation
        assert after.generation > before.generation
        assert after.facts is not before.facts and after.facts == before.facts  # loaded anew, same machine
        assert after.plan.decisions == before.plan.decisions


async def test_help_opens_and_closes():
    async with qwen3_vl_on_b300() as pilot:
        app = pilot.app
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen is not app.main
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_usable_at_80x24_and_larger(size):
    """Every form control, the decision table and the command bar's buttons are on screen, none squeezed to nothing."""
    async with qwen3_vl_on_b300(size) as pilot:
        app = pilot.app
        screen = app.main
        regions = {widget_id: screen.query_one(widget_id).region
                   for widget_id in ("#model", "#tp", "#nnodes", "#dp_attention", "#dp_size", "#moe_a2a_backend",
                                     "#engine", "#engine_version", "#profile", "#decisions", "#detail", "#copy",
                                     "#launch")}  # fmt: skip
        for name, region in regions.items():
            assert region.width >= 4 and region.height >= 1, (name, region)
            assert region.right <= size[0] and region.bottom <= size[1] - 1, (name, region)


def test_fusion_detail_says_plainly_when_flashinfer_will_not_import():
    # The seed case: auto-enabled (as SGLang decides), and the detail pane's notes say the fused path cannot run.
    from rich.console import Console

    from advisor.context import Options, make_plan
    from advisor.tui.render import decision_detail

    plan = make_plan(Options(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang",
                             with_package=("flashinfer-python==0.6.12", "flashinfer-jit-cache==0.6.11+cu128")))  # fmt: skip
    console = Console(width=100, record=True, color_system=None)
    console.print(decision_detail(plan.decision("flashinfer_allreduce_fusion"), plan))
    text = " ".join(console.export_text().split())
    assert "auto-enabled" in text
    assert "• the fused path cannot run here: `import flashinfer` will fail" in text
    assert "see problem flashinfer_version_mismatch" in text


@pytest.mark.parametrize("width", [40, 44, 80, 120])
def test_the_release_matrix_is_laid_out_as_a_rich_table(width):
    """The detail pane's release matrix is drawn without rich's Table (slow to measure), in the same layout at the
    pane's widths (40 columns and more; the 80-column screen gives it 44). Colours are the same on every character
    but the spaces that pad a cell, which rich's Table styles and this draws plain."""
    from rich.console import Console
    from rich.table import Table

    from advisor.context import Options, make_plan
    from advisor.tui.render import release_matrix_table

    plan = make_plan(Options(profile="h20-8", model="Qwen/Qwen3-30B-A3B", tp=8, engine="sglang", engine_version="0.5.12"))
    matrix = release_matrix_table(plan)
    table = Table(box=None, pad_edge=False, show_edge=False, expand=False)
    for header in matrix.HEADERS:
        table.add_column(header, overflow="fold" if header == "failed conditions" else "ellipsis")
    for row in matrix.rows:
        table.add_row(*row)
    outputs = []
    for renderable in (matrix, table):
        console = Console(width=width, file=open(os.devnull, "w"), color_system="truecolor")  # noqa: SIM115
        lines = console.render_lines(renderable, pad=False)
        outputs.append([[(ch, (seg.style or None) if ch != " " else None) for seg in line for ch in seg.text] for line in lines])
    assert outputs[0] == outputs[1]
    assert any(row[2] for row in matrix.rows) and "◀" in "".join(ch for line in outputs[0] for ch, _ in line)


@pytest.mark.parametrize("sizes", [[(80, 24), (160, 40)], [(160, 40), (100, 30)]], ids=["wider", "narrower"])
async def test_the_title_column_is_fitted_to_the_width_and_after_a_resize(sizes):
    """The decision titles get what the value column leaves, and again when the terminal changes size; the value
    column stays whole at the right edge."""
    from advisor.tui.widgets.decision_table import VALUE_WIDTH

    first, then = sizes
    async with qwen3_vl_on_b300(first) as pilot:
        table = pilot.app.main.query_one(DecisionTable)
        for size in (first, then):
            if size != first:
                await pilot.resize_terminal(*size)
                await settle(pilot)
            width = table.size.width
            assert table.columns["decision"].width == width - 1 - VALUE_WIDTH - 6 * table.cell_padding, size
            assert table.virtual_size.width == width and table.max_scroll_x == 0, size
            row = shown_text(pilot.app, table)[1]
            assert len(row) == width and row.rstrip().endswith(table.get_row_at(0)[2].plain.strip()), size
