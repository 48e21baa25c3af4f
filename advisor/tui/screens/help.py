"""Help: the keys and what each panel means."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from advisor.tui.screens.dialog import Dialog

HELP = """\
# tp-advisor

Explains which optimizations a tensor-parallel engine release will switch on for this machine, model and settings,
condition by condition, and launches it.

| key | action |
|---|---|
| `q` | quit (stops a running engine first) |
| `r` | probe the machine again |
| `l` | launch the resolved command |
| `e` | export the plan as JSON |
| `p` | pick a machine: this one or a simulated profile (what-if) |
| `enter` | open the highlighted decision on its own screen (escape closes it) |
| `c` | copy the command line |
| `f` | jump to the form (model field); `tab` moves on, `→` accepts a model suggestion, `enter`/`escape` leave it |
| `m` / `d` / `t` | machine tab / decisions tab / layouts tab (`enter` on a layout puts it into the form) |
| `v` | compare the plan with another release of its engine (what changes, and the upstream source) |
| `g` | verify an engine's start-up log against the plan for the same launch (`advisor verify`) |
| `ctrl+p` | command palette |
| `tab` | move between the tabs, the form, the command's buttons, the decisions and the detail (`←`/`→` move between Copy and Launch, `enter` or `space` presses) |
| `?` | this help |

**Plan tab.** Change the form on the left; the decisions re-evaluate as you type. Each row is one decision the engine
makes at start-up (● on, ○ off, ? unknown). Move to a row to see every condition: what was observed, what the rule
expects, why the condition exists, and how to change the outcome, with the release and source file it models. The
FlashInfer fusion decision also shows the outcome under every modelled release.

**Layouts tab.** Every way to split the model over this machine's GPUs (tp, DP attention), as `advisor layouts` prints
it: whether it fits, the KV-cache tokens the engine will allocate, the sequences it holds, what auto-enables; ★ marks the
recommended layout.

**Machine tab.** GPUs, the topology matrix (like `nvidia-smi topo -m`), installed packages (✓ fine, ✗ part of an
error, ! part of a warning, · not installed) and the problems with their fixes.

Press `escape` to close.
"""


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    #help-box {
        width: 90;
        max-width: 100%;
        height: 90%;
        border: round $accent;
        background: $surface;
    }
    """

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
