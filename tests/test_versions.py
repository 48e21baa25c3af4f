"""advisor.versions reads versions with packaging.version: the release numbers packaging gives (hand-picked cases, then
generated ones), and a version no int can hold is not a version."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import InvalidVersion, Version

from advisor.versions import at_least, is_version, parse_cuda, parse_release, parse_version, release_numbers

CASES = [
    "0.5.14", "v0.5.14", "V1.0", " 1.0\t", "0.5.14.post2", "0.5.14rc1", "0.11.2+cu128", "2.9.1+cu128", "0.6.18.dev1",
    "1!2.0", "1.0-1", "1.0.0", "1", "0", "00.01", "1.0.0.0.0", "12.8", "007.1",
    # not versions
    "", " ", "1.", ".1", "1..2", "1.0-", "v", "1.0ab", "a1.0", "1.0.x", "\u0661.0", "1.\u00b2", "cu128", "0.5.14.post2.",
]  # fmt: skip


def packaging_release(text: str) -> tuple[int, ...] | None:
    try:
        return Version(text).release
    except InvalidVersion:
        return None


def test_each_case_has_packaging_s_release_numbers():
    for text in CASES:
        assert release_numbers(text) == (packaging_release(text) if text else None), text


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.", max_size=12) | st.text(alphabet="0123456789.+-_abcdeilmnoprstuvx!", max_size=12))
def test_generated_strings_have_packaging_s_release_numbers(text):
    assert release_numbers(text) == (packaging_release(text) if text else None)


def test_the_helpers():
    assert parse_release("v0.5.14.post2") == (0, 5, 14) and parse_release("0.11") == (0, 11, 0)
    assert parse_release("7") is None and parse_release("not") is None and parse_release(None) is None
    assert parse_cuda("12.8") == (12, 8) and parse_cuda("13") is None and parse_cuda("") is None
    assert parse_version("") is None and parse_version("x") is None
    assert parse_version("0.6.18.post1") < parse_version("0.7.0") and parse_version("0.7.0rc1") < parse_version("0.7.0")
    assert isinstance(parse_version("1.0"), Version)


def test_a_version_of_thousands_of_digits_is_not_a_version():
    huge = "1" * 5000 + ".0"
    assert parse_version(huge) is None and parse_release(huge) is None and at_least(huge, "0.5") is None


def packaging_at_least(version: str, floor: str) -> bool | None:
    try:
        return Version(version) >= Version(floor)
    except InvalidVersion:
        return None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(CASES[:18]) | st.text(alphabet="0123456789.", max_size=8), min_size=2, max_size=2))
def test_at_least_and_is_version_read_as_packaging(pair):
    version, floor = pair
    assert at_least(version, floor) == (packaging_at_least(version, floor) if version and floor else None)
    assert is_version(version) == (bool(version) and packaging_release(version) is not None)
