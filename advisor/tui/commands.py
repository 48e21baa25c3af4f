"""Command palette entries (ctrl+p): the screen's actions, every simulated machine, every modelled engine release."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from advisor.rules.registry import names as engine_names
from advisor.tui.screens.main import MainScreen
from advisor.tui.session import LIVE, releases_for


class AdvisorCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        screen = self.screen if isinstance(self.screen, MainScreen) else None
        if screen is None:
            return []
        commands: list[tuple[str, Callable[[], object], str]] = [
            ("Launch the engine", screen.action_launch, "Confirm and start the resolved command (l)"),
            ("Export plan as JSON", screen.action_export, "The `advisor check --json` object (e)"),
            ("Re-probe this machine", screen.action_reprobe, "Probe GPUs and packages again (r)"),
            ("Copy command line", screen.action_copy_command, "Copy the resolved argv (c)"),
            ("Machine: this machine (live)", partial(screen.set_profile, LIVE), "Probe this machine"),
            ("Layouts", partial(screen.action_switch_tab, "layouts"), "Every tp / DP-attention split, KV cache, fit (t)"),
            ("Compare with another release", screen.action_diff, "What changes under another engine release (v)"),
            ("Verify a start-up log", screen.action_verify_log, "An engine log against the plan for it (g)"),
        ]
        for name, summary in self.app.profiles:
            commands.append((f"Machine: {name}", partial(screen.set_profile, name), f"Simulated: {summary}"))
        for engine in engine_names():
            commands.append((f"Engine: {engine}", partial(screen.set_engine, engine, None), "Installed or newest rules"))
            for release in reversed(releases_for(engine)):
                commands.append(
                    (f"Engine: {engine} {release}", partial(screen.set_engine, engine, release), f"Rules of {release}")
                )
        return commands

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands()[:5]:
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
