"""launcher.shellquote is shlex.quote / shlex.join, without importing shlex (and re)."""

from __future__ import annotations

import shlex
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.shellquote import join, quote

WORDS = st.text() | st.text(alphabet="ab_@%+=:,./-'\" $\\\n\té€", max_size=12)


@settings(max_examples=500)
@given(WORDS)
def test_quote_is_shlex_quote(word):
    assert quote(word) == shlex.quote(word)


@given(st.lists(WORDS, max_size=6))
def test_join_is_shlex_join_and_splits_back(words):
    assert join(words) == shlex.join(words)
    assert shlex.split(join(words)) == words


def test_the_quoting_rule_on_the_edges():
    for word in ["", "'", "a b", "--tp-size", "x=1,y=2", "ü", "a\nb", "\x00", "~", "*", "$HOME", "a'b"]:
        assert quote(word) == shlex.quote(word), word


def test_importing_it_imports_neither_shlex_nor_re():
    code = ("import sys; before = set(sys.modules); import launcher.shellquote as q; q.join(['a b', 'c']);"
            "print(sorted({'shlex', 're'} & (set(sys.modules) - before)))")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
