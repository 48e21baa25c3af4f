"""One spelling for a boolean and for an amount of memory, wherever a person reads them (advisor/formats.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from advisor.formats import GIB, MIB, gib, gib_of_mib, yes_no


def test_yes_no():
    assert (yes_no(True), yes_no(False), yes_no(None), yes_no(None, unknown="unknown")) == ("yes", "no", "?", "unknown")


def test_gib_rounds_half_up_from_the_bytes():
    assert gib(164.8504 * GIB) == "164.9 GiB" and gib(164.8496 * GIB) == "164.8 GiB"
    assert gib(0.05 * GIB) == "0.1 GiB" and gib(0) == "0.0 GiB" and gib(None) == "?"
    assert gib_of_mib(81559) == "79.6 GiB" and gib_of_mib(24564) == "24.0 GiB" and gib_of_mib(None) == "?"


@given(st.integers(min_value=0, max_value=2**50))
def test_gib_is_the_nearest_tenth(n_bytes):
    shown = float(gib(n_bytes).removesuffix(" GiB"))
    assert abs(shown - n_bytes / GIB) <= 0.05 + 1e-9
    assert gib_of_mib(n_bytes // MIB) == gib(n_bytes // MIB * MIB)


def test_no_face_writes_a_bool_or_a_gib_its_own_way():
    """The report, the layouts table and the app spell them through advisor.formats (JSON keeps true / false)."""
    from advisor.report.render import _value_text
    from advisor.tui.render import short_value, show

    assert _value_text(True) == show(True) == short_value(True) == "yes"
    assert _value_text({"a": True}) == '{"a": true}'  # a JSON value stays JSON
