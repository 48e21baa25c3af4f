"""Every key the app's own screens bind, in one place: the app-wide keys, the main screen's and the launch screen's.

The help screen's table (advisor/tui/screens/help.py) documents them; tests/test_tui_keys.py checks that every key
bound here is in it and that no screen binds a key twice.
"""

from __future__ import annotations

from textual.binding import Binding

# Anywhere in the app (AdvisorApp).
APP = [
    Binding("q", "quit", "Quit"),
    Binding("question_mark", "help", "Help", key_display="?"),
]

# The main screen: the plan, the layouts and the machine.
MAIN = [
    Binding("r", "reprobe", "Re-probe"),
    Binding("l", "launch", "Launch"),
    Binding("e", "export", "Export"),
    Binding("p", "pick_profile", "Profile"),
    Binding("c", "copy_command", "Copy", show=False),
    Binding("f", "focus_form", "Form", show=False),
    Binding("escape", "leave_form", "Done editing", show=False),
    Binding("m", "switch_tab('machine')", "Machine", show=False),
    Binding("d", "switch_tab('plan')", "Decisions", show=False),
    Binding("t", "switch_tab('layouts')", "Layouts", show=False),
    Binding("v", "diff", "Diff release", show=False),
    Binding("g", "verify_log", "Verify log", show=False),
]

# The launch screen: start, stop, back to the plan (the run goes on); j writes a multi-node plan's scheduler job (shown
# for multi-node plans only: LaunchScreen.check_action).
LAUNCH = [
    Binding("enter", "start", "Start"),
    Binding("s", "stop", "Stop"),
    Binding("escape", "leave", "Back"),
    Binding("j", "write_job", "Job file"),
]
