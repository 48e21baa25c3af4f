"""The main screen: the plan (form, decisions, detail, command), the candidate layouts and the machine, in three tabs.

Every form change re-runs the rules in a thread worker after a short debounce; results come back as a
`PlanEvaluated` message and stale ones (an older generation) are dropped.
"""

from __future__ import annotations

import shlex
from concurrent.futures import wait
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from advisor.context import default_engine
from advisor.plan import Plan
from advisor.rules.registry import modelled_releases
from advisor.sanitize import clean
from advisor.tui import keys
from advisor.tui.messages import PlanEvaluated
from advisor.tui.render import source_label
from advisor.tui.screens.decision import DecisionScreen
from advisor.tui.screens.diff import DiffScreen
from advisor.tui.screens.export import ExportScreen
from advisor.tui.screens.launch import LaunchScreen
from advisor.tui.screens.profile import ProfileScreen
from advisor.tui.session import Evaluation, apply_profile_choice
from advisor.tui.widgets.command_bar import CommandBar
from advisor.tui.widgets.decision_table import DecisionTable
from advisor.tui.widgets.detail import DetailPane
from advisor.tui.widgets.layouts import LayoutsPanel
from advisor.tui.widgets.machine import MachinePanel
from advisor.tui.widgets.plan_form import PlanForm

DEBOUNCE_S = 0.2
FIRST_PLAN_WAIT_S = 0.5  # the longest the first paint waits for the first plan (on_mount)


class MainScreen(Screen):
    BINDINGS = keys.MAIN
    AUTO_FOCUS = "#decisions"  # focused as the screen starts (Textual's default, the first focus stop, is the tabs)

    def __init__(self, options: Any, models: list[str], profiles: list[tuple[str, str]]) -> None:
        super().__init__()
        self.original = options
        self.options = options
        self._models = models
        self._profiles = profiles
        self.evaluation: Evaluation | None = None
        self._generation = 0
        self._timer: Timer | None = None
        self.evaluating = False
        self._layouts_for: Any = None  # the options the Layouts tab shows (or is computing)
        self.layouts_busy = False
        self._hidden_tabs_mounted = False

    @property
    def current_plan(self) -> Plan | None:
        """The plan of the latest evaluation; None before the first one or when the options gave an error."""
        return self.evaluation.plan if self.evaluation else None

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="plan", id="tabs"):
            with TabPane("Plan", id="plan"):
                with Vertical(id="plan-left"):
                    yield PlanForm(self.options, self._models, self._profiles, id="form")
                    yield CommandBar(id="command")
                with Vertical(id="plan-side"):
                    yield Static("evaluating…", id="status")
                    yield DecisionTable(id="decisions")
                    yield DetailPane(id="detail")
            # The hidden tabs' panels are mounted once the first plan is on screen (mount_hidden_tabs): the first
            # screen does not wait for widgets nobody sees yet.
            yield TabPane("Layouts", id="layouts")
            yield TabPane("Machine", id="machine")
        yield Footer()

    def mount_hidden_tabs(self) -> None:
        """Mount the Layouts and Machine panels (once): after the first plan is painted, or when a tab is opened."""
        if self._hidden_tabs_mounted or not self.is_attached:
            return
        layouts, machine = self.query_one("#layouts", TabPane), self.query_one("#machine", TabPane)
        if not (layouts.is_attached and machine.is_attached):
            return  # the app is closing (quit right after the first screen)
        self._hidden_tabs_mounted = True
        layouts.mount(LayoutsPanel(id="layouts-panel"))
        machine.mount(MachinePanel(self.app.profiles, id="machine-panel"))

    def on_mount(self) -> None:
        first = self.app.first_evaluation
        self._generation = 1
        # The first plan is ready (read from a simulated machine or a facts file) or computing in a thread since the
        # app was built (a probe). Waiting for it here (it then has the interpreter to itself) lets the first paint
        # show it, instead of painting "evaluating…" and laying out and drawing the screen a second time when it comes. A slow probe (NVML on a driver without persistence mode can take
        # seconds) does not keep the screen blank past FIRST_PLAN_WAIT_S: the plan then follows as a message.
        if wait([first], timeout=FIRST_PLAN_WAIT_S).done:
            self.on_plan_evaluated(PlanEvaluated(first.result()))
        else:
            self.evaluating = True
            self._await_first(first)

    @work(thread=True, exclusive=True, group="plan")
    def _await_first(self, first) -> None:
        self.post_message(PlanEvaluated(first.result()))

    # -- evaluation ----------------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a change waits for its debounce or its worker (tests and the benchmark wait on this)."""
        return self._timer is not None or self.evaluating

    def schedule_evaluation(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self.start_evaluation)

    def start_evaluation(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._generation += 1
        self.evaluating = True
        self.query_one("#plan-side").add_class("-stale")  # dim, not replaced: no layout jump per keystroke
        self._evaluate(self.options, self._generation)

    @work(thread=True, exclusive=True, group="plan")
    def _evaluate(self, options: Any, generation: int) -> None:
        evaluation = self.app.session.evaluate(options, generation)
        self.post_message(PlanEvaluated(evaluation))

    def on_plan_evaluated(self, message: PlanEvaluated) -> None:
        evaluation = message.evaluation
        if evaluation.generation != self._generation:
            return  # an older request finished after a newer one started
        self.evaluating = False
        self.query_one("#plan-side").remove_class("-stale")
        self.evaluation = evaluation
        facts, plan = evaluation.facts, evaluation.plan
        if facts is not None:
            host = clean(facts.host.hostname or "unknown host", newlines=False)
            self.app.sub_title = f"{host} · {source_label(facts)}"
        self.query_one(PlanForm).show_engine(_engine_of(evaluation))
        status = self.query_one("#status", Static)
        table = self.query_one(DecisionTable)
        detail = self.query_one(DetailPane)
        if plan is None:
            status.update(_error_line(evaluation))
            table.clear()
            detail.show_error(evaluation.error or "no plan")
            self.query_one(CommandBar).show(None)
        else:
            status.update(_status_line(plan, facts))
            table.show_plan(plan)
            detail.show(table.current_item, plan)  # now, so the first paint has it (its Highlighted message follows)
            self.query_one(CommandBar).show(plan.argv)
        for panel in self.query("MachinePanel"):  # none before the hidden tabs are mounted
            if panel.is_mounted:  # one still mounting (m pressed before the first plan) shows it in its on_mount
                panel.show(facts, plan, evaluation.error)
        if self.active_tab == "layouts":
            self.refresh_layouts()
        self.app.plan_shown(evaluation)

    # -- the Layouts tab: computed when it is shown, again after each change while it is ------------------------------
    @property
    def active_tab(self) -> str:
        """The id of the tab shown: plan, layouts or machine."""
        return self.query_one(TabbedContent).active

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id
        if tab != "plan":
            self.mount_hidden_tabs()
        if tab == "layouts":
            self.refresh_layouts()

    def refresh_layouts(self) -> None:
        if self._layouts_for == self.options:
            return
        self._layouts_for = self.options
        self.layouts_busy = True
        self._compute_layouts(self.options)

    @work(thread=True, exclusive=True, group="layouts")
    def _compute_layouts(self, options: Any) -> None:
        report, error = self.app.session.layouts(options)
        self.app.call_from_thread(self._show_layouts, options, report, error)

    def _show_layouts(self, options: Any, report: Any, error: str | None) -> None:
        if options != self._layouts_for:
            return  # the form changed meanwhile; a newer computation follows
        self.layouts_busy = False
        self.query_one("#layouts-panel").show(report, error)

    def on_layouts_panel_chosen(self, message: LayoutsPanel.Chosen) -> None:
        """Enter on a layout: it goes into the form and the plan is evaluated for it."""
        lay = message.layout
        self.options = replace(self.options, tp=lay.tp, nnodes=lay.nnodes, dp_attention=lay.dp_attention,
                               dp_size=lay.dp_size)  # fmt: skip
        self.query_one(PlanForm).set_layout(lay.tp, lay.nnodes, lay.dp_attention, lay.dp_size)
        self.start_evaluation()
        self.action_switch_tab("plan")
        self.notify(f"Layout {lay.label} put into the form.", timeout=2)

    # -- form and profile changes --------------------------------------------------------------------------------------
    def on_plan_form_changed(self, message: PlanForm.Changed) -> None:
        self.options = replace(self.options, **message.changes)
        self.schedule_evaluation()

    def on_plan_form_profile_changed(self, message: PlanForm.ProfileChanged) -> None:
        self.set_profile(message.choice, from_form=True)

    def on_machine_panel_profile_chosen(self, message: MachinePanel.ProfileChosen) -> None:
        self.set_profile(message.name)

    def set_profile(self, choice: str, from_form: bool = False) -> None:
        self.options = apply_profile_choice(self.options, choice, self.original)
        if not from_form:
            self.query_one(PlanForm).set_profile(choice)
        self.schedule_evaluation()

    def set_engine(self, engine: str, release: str | None = None) -> None:
        self.options = replace(self.options, engine=engine, engine_version=release)
        self.query_one(PlanForm).set_engine(engine, release)
        self.schedule_evaluation()

    @on(DecisionTable.Highlighted)
    def _show_detail(self, message: DecisionTable.Highlighted) -> None:
        self.query_one(DetailPane).show(message.item, self.current_plan)

    @on(DecisionTable.Opened)
    def _open_decision(self, message: DecisionTable.Opened) -> None:
        plan = self.current_plan
        if plan is not None:
            self.app.push_screen(DecisionScreen(message.item, plan))

    # -- actions -------------------------------------------------------------------------------------------------------
    def action_switch_tab(self, tab: str, target: Widget | None = None) -> None:
        # Focus follows the tab: a widget focused in another pane brings that pane back (TabbedContent does). Focus is
        # set at once (Widget.focus() is deferred), so keys typed right after ("f" then tab) reach the new widget.
        self.mount_hidden_tabs()
        self.query_one(TabbedContent).active = tab
        if target is None:
            targets = {"machine": self.query("MachinePanel"), "layouts": self.query("#layouts-table")}.get(
                tab, self.query(DecisionTable)
            )
            target = targets.first() if targets else None
        if target is not None:
            self.set_focus(target)

    def action_focus_form(self) -> None:
        self.action_switch_tab("plan", self.query_one(PlanForm).model_input)

    def action_leave_form(self) -> None:
        """Escape (or enter) in a form field hands the keys back to the screen: q, l, e... act again."""
        self.set_focus(self.query_one(DecisionTable))

    def on_input_submitted(self, event) -> None:
        event.stop()
        if self._timer is not None:
            self.start_evaluation()  # enter: no need to wait for the debounce
        self.action_leave_form()

    def action_reprobe(self) -> None:
        self.app.session.forget_facts()
        self.notify("Probing again…", timeout=2)
        self.start_evaluation()

    def action_copy_command(self) -> None:
        plan = self.current_plan
        if plan is None or not plan.argv:
            self.notify("No command to copy: the plan has errors.", severity="warning")
            return
        self.app.copy_to_clipboard(shlex.join(plan.argv))
        self.notify("Command copied to the clipboard.", timeout=2)

    def action_launch(self) -> None:
        plan = self.current_plan
        if plan is None:
            self.notify("Nothing to launch: fix the plan first.", severity="error")
            return
        self.app.push_screen(LaunchScreen(plan))

    def action_export(self) -> None:
        plan = self.current_plan
        if plan is None:
            self.notify("Nothing to export: the plan could not be built.", severity="error")
            return
        self.app.push_screen(ExportScreen(plan))

    def action_verify_log(self) -> None:
        """An engine start-up log against the plan for the same launch, on this screen's machine."""
        from advisor.tui.screens.verify import VerifyScreen

        self.app.push_screen(VerifyScreen(self.options))

    def action_diff(self) -> None:
        """The plan against another modelled release of its engine."""
        plan = self.current_plan
        if plan is None:
            self.notify("Nothing to compare: the plan could not be built.", severity="error")
            return
        releases = list(modelled_releases(plan.intent.engine))
        if not releases:
            self.notify(f"The {plan.intent.engine} engine has no releases to compare.", severity="warning")
            return
        current = plan.engine.get("rules") or releases[-1]
        others = [r for r in releases if r != current]
        other = releases[-1] if current != releases[-1] or not others else others[-1]
        options = replace(self.options, engine=plan.intent.engine)
        self.app.push_screen(DiffScreen(options, current, releases, other))

    def action_pick_profile(self) -> None:
        def chosen(name: str | None) -> None:
            if name:
                self.set_profile(name)

        self.app.push_screen(ProfileScreen(self.app.profiles, self.options.profile), chosen)


def _engine_of(evaluation: Evaluation) -> str | None:
    """The engine the evaluation ran (or would have run): the plan's, the one asked for, else the machine's default."""
    if evaluation.plan is not None:
        return evaluation.plan.intent.engine
    if evaluation.options.engine:
        return evaluation.options.engine
    return default_engine(evaluation.facts) if evaluation.facts is not None else None


def _error_line(evaluation: Evaluation) -> Text:
    text = Text(f"✗ {clean(evaluation.error or '')}", style="bold red")
    if evaluation.options.model is None and "needs a model" in (evaluation.error or ""):
        text.append("\nf: type a model in the form, or set Engine to bundled for the demo model", style="dim")
    return text


def _status_line(plan, facts) -> Text:
    engine = plan.engine or {}
    version = engine.get("version") or "?"
    rules = engine.get("rules")
    text = Text()
    text.append(engine.get("name", "?"), style="bold")
    text.append(f" {version}" + (f" (rules {rules})" if rules and rules != version else ""))
    model = plan.model.id if plan.model else "demo model"
    text.append(f" · tp {plan.intent.tp} · {clean(model, newlines=False)}")
    errors = sum(p.severity == "error" for p in plan.problems)
    warnings = sum(p.severity == "warning" for p in plan.problems)
    if errors:
        text.append(f" · {errors} error{'s' if errors > 1 else ''}", style="red")
    if warnings:
        text.append(f" · {warnings} warning{'s' if warnings > 1 else ''}", style="yellow")
    if facts is not None and not facts.driver.available and not facts.is_simulated:
        text.append("\nno NVIDIA driver · p: try a simulated machine", style="yellow")
    return text
