"""The main screen's footer: the active key bindings on one line, drawn as Textual's Footer draws them.

Textual's Footer is a container with one widget per key, and it removes and mounts them all again whenever the
bindings change (at start-up and on every focus change); on the main screen those seven widgets were a good part of
the styling work before the first screen (tests/benchmarks/bench_tui.py). A KeyBar is one widget that renders the
same line from the screen's active bindings and repaints when they change. A click on a key presses it.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget

DISABLED = Style(dim=True)
SEPARATOR = "▏"  # before the command palette key, as Footer's `border-left: vkey`


class KeyBar(Widget):
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description", "key-bar--separator"}

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-bar--separator {
            color: $foreground 20%;
        }
    }
    """

    ALLOW_SELECT = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) of each key drawn, for clicks

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _screen: self.refresh())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _keys(self) -> tuple[list[tuple[str, str, str, bool]], tuple[str, str, str, bool] | None]:
        """(key, shown key, description, enabled) of the bindings shown, and the command palette's (or None)."""
        app = self.app
        active = self.screen.active_bindings
        shown, actions = [], set()
        for _, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in actions:  # one key per action, as Footer shows them
                actions.add(binding.action)
                shown.append((binding.key, app.get_key_display(binding), binding.description, enabled))
        palette = None
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = (binding.key, app.get_key_display(binding), binding.description, enabled)
        return shown, palette

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")
        shown, palette = self._keys()
        spans = []
        left = Text(no_wrap=True, overflow="crop")
        for key, display, description, enabled in shown:
            start = len(left)
            dim = Style() if enabled else DISABLED
            left.append(f" {display} ", key_style + dim)
            left.append(f"{description} ", description_style + dim)
            spans.append((start, len(left), key))
        right = Text(no_wrap=True)
        if palette is not None:
            key, display, description, enabled = palette
            dim = Style() if enabled else DISABLED
            right.append(SEPARATOR, self.get_component_rich_style("key-bar--separator"))
            right.append(display, key_style + dim)
            right.append(f" {description}", description_style + dim)
            right.append(" ")
        width = self.size.width
        room = max(width - len(right), 0)
        left.truncate(room, pad=True)
        self._spans = [(start, min(end, room), key) for start, end, key in spans if start < room]
        if palette is not None:
            self._spans.append((room, width, palette[0]))
        line = left + right
        line.stylize_before(self.rich_style)
        return line

    def on_mouse_down(self, event: events.MouseDown) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
