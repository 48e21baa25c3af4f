"""advisor.versions.Version against packaging.version.Version: the same strings are versions, with the same release
numbers and the same order (hand-picked cases, then generated ones)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import InvalidVersion as TheirInvalidVersion
from packaging.version import Version as TheirVersion

from advisor.versions import InvalidVersion, Version, parse_cuda, parse_release, parse_version

CASES = [
    "0.5.14", "v0.5.14", "V1.0", " 1.0\t", "\u20031.0\u2003", "0.5.14.post2", "0.5.14rc1", "0.11.2+cu128", "2.9.1+cu128",
    "0.6.18.dev1", "0.6.18rc1", "0.6.18", "0.6.18.post1", "0.7.0", "0.7.10+cu130", "0.0.0+unknown", "1!2.0", "1!0",
    "1.0a", "1.0alpha1", "1.0-a.1", "1.0_b-2", "1.0beta", "1.0c1", "1.0pre", "1.0preview.3", "1.0rc", "1.0RC1",
    "1.0-1", "1.0-r", "1.0rev2", "1.0.post", "1.0-post-3", "1.0.dev", "1.0dev3", "1.0-dev_4", "1.0a1.post2.dev3",
    "1.0a-dev", "1.0a.post1", "1.0+abc.1.twelve", "1.0+ABC-1_x", "1.0.0", "1", "0", "00.01", "1.0.0.0.0", "12.8",
    # not versions
    "", " ", "1.", ".1", "1..2", "1.0-", "1.0+", "1.0+a..b", "1.0+a+", "v", "1.0ab", "1.0 a", "a1.0", "1.0.x", "1!",
    "!1", "1.0dev-", "1.0-post-", "\u0661.0", "1.0+\u212a", "1.\u00b2", "cu128", "0.5.14.post2.", "1.0a1b2",
]  # fmt: skip


def theirs(text: str) -> TheirVersion | None:
    try:
        return TheirVersion(text)
    except TheirInvalidVersion:
        return None


def mine(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def assert_same_reading(texts: list[str]) -> None:
    pairs = [(text, mine(text), theirs(text)) for text in texts]
    for text, m, t in pairs:
        assert (m is None) == (t is None), text
        if m is not None:
            assert m.release == t.release, text
    versions = [(text, m, t) for text, m, t in pairs if m is not None]
    for (a, ma, ta), (b, mb, tb) in itertools.product(versions, repeat=2):
        assert (ma < mb, ma == mb, ma >= mb) == (ta < tb, ta == tb, ta >= tb), (a, b)
        assert (hash(ma) == hash(mb)) or ma != mb


@pytest.mark.parametrize("text", CASES)
def test_each_case_reads_as_packaging_reads_it(text):
    assert_same_reading([text])


def test_the_cases_sort_as_packaging_sorts_them():
    assert_same_reading(CASES)
    assert sorted(CASES, key=lambda t: (mine(t) is None, mine(t) or Version("0"))) == sorted(
        CASES, key=lambda t: (theirs(t) is None, theirs(t) or TheirVersion("0"))
    )


TOKENS = ["0", "1", "2", "10", "007", ".", "-", "_", "+", "!", "v", "V", "a", "alpha", "b", "beta", "c", "rc", "pre",
          "preview", "post", "rev", "r", "dev", "cu128", "ubuntu", "x", "A", " ", "\t", "\u0663", "\u212a", "\u00b2"]  # fmt: skip
version_like = st.lists(st.sampled_from(TOKENS), max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(version_like | st.text(max_size=8), min_size=1, max_size=6))
def test_generated_strings_read_and_sort_as_packaging(texts):
    assert_same_reading(texts)


def test_the_helpers():
    assert parse_release("v0.5.14.post2") == (0, 5, 14) and parse_release("0.11") == (0, 11, 0)
    assert parse_release("7") is None and parse_release("not") is None and parse_release(None) is None
    assert parse_cuda("12.8") == (12, 8) and parse_cuda("13") is None and parse_cuda("") is None
    assert parse_version("") is None and parse_version("x") is None
    assert parse_version("0.6.18.post1") < parse_version("0.7.0") and repr(Version("1.0")) == "<Version('1.0')>"
    with pytest.raises(InvalidVersion):
        Version("nope")
