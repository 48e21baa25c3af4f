"""advisor.records.record against dataclass(frozen=True): the same repr, equality, hash, fields, construction and frozen
guards, and the records' own fields/asdict/replace against the dataclasses functions."""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from advisor import records
from advisor.records import record


def point_class(name: str, decorate):
    """The same class body under record and under dataclass(frozen=True), so the two can only differ by the decorator."""

    class Point:
        x: int
        y: int = 0
        label: str = field(default="", compare=False)
        secret: str = field(default="s", repr=False)
        tags: tuple[str, ...] = field(default=(), hash=False)
        children: list = field(default_factory=list, compare=False, hash=False)

    Point.__name__ = Point.__qualname__ = name  # pickle finds the class under this module-level name
    return decorate(Point)


RecordPoint = point_class("RecordPoint", record)
DataclassPoint = point_class("DataclassPoint", dataclass(frozen=True))


RECORD, DATACLASS = RecordPoint, DataclassPoint


def same_repr(mine: RecordPoint, theirs: DataclassPoint) -> bool:
    return repr(mine).replace("RecordPoint", "Point") == repr(theirs).replace("DataclassPoint", "Point")


ARGS = [
    ((1,), {}),
    ((1, 2), {"label": "a"}),
    ((1, 2), {"label": "b"}),  # label is not compared
    ((1, 2), {"secret": "t"}),
    ((1,), {"y": 2, "tags": ("a", "b")}),
    ((1,), {"y": 2, "tags": ("a",), "children": [1]}),
    (("1",), {}),
]


@pytest.mark.parametrize("args, kwargs", ARGS)
def test_repr_hash_and_fields_are_dataclasses(args, kwargs):
    mine, theirs = RECORD(*args, **kwargs), DATACLASS(*args, **kwargs)
    assert same_repr(mine, theirs)
    assert hash(mine) == hash(theirs)
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(theirs)]
    assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)
    assert dataclasses.replace(mine, x=5) == RECORD(5, *args[1:], **kwargs)
    assert pickle.loads(pickle.dumps(mine)) == mine and copy.deepcopy(mine) == mine


@pytest.mark.parametrize("a", ARGS)
@pytest.mark.parametrize("b", ARGS)
def test_equality_is_dataclasses(a, b):
    assert (RECORD(*a[0], **a[1]) == RECORD(*b[0], **b[1])) == (DATACLASS(*a[0], **a[1]) == DATACLASS(*b[0], **b[1]))
    assert (RECORD(*a[0], **a[1]) != RECORD(*b[0], **b[1])) == (DATACLASS(*a[0], **a[1]) != DATACLASS(*b[0], **b[1]))


def test_only_the_same_class_is_equal_and_instances_are_frozen():
    assert RECORD(1) != DATACLASS(1) and RECORD(1) != (1, 0)

    @record
    class Other(RecordPoint):
        pass

    assert RECORD(1) != Other(1) and Other(1) == Other(1)
    point = RECORD(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.y
    with pytest.raises(TypeError):
        RECORD()  # x is required, as in the generated __init__


def test_a_recursive_repr_and_methods_the_class_defines_itself():
    point = RECORD(1, children=[])
    point.children.append(point)
    theirs = DATACLASS(1, children=[])
    theirs.children.append(theirs)
    assert same_repr(point, theirs) and "children=[...]" in repr(point)

    @record
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __hash__(self) -> int:
            return 7

    assert repr(Named("a")) == "<a>" and hash(Named("a")) == 7 and Named("a") == Named("a")


# -- records are built without the dataclasses module ----------------------------------------------------------------


def test_defining_and_using_records_does_not_import_dataclasses():
    code = (
        "import sys\n"
        "from advisor.records import asdict, field, fields, record, replace\n"
        "@record\n"
        "class P:\n    x: int\n    y: tuple = field(default_factory=tuple)\n"
        "p = replace(P(1), x=2)\n"
        "assert (p.x, p.y, [f.name for f in fields(P)], asdict(p)) == (2, (), ['x', 'y'], {'x': 2, 'y': ()})\n"
        "assert p == P(2) and hash(p) == hash(P(2)) and repr(p) == 'P(x=2, y=())'\n"
        "print('dataclasses' in sys.modules, 'inspect' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["False", "False"], proc.stderr


def test_the_records_helpers_agree_with_dataclasses():
    for args, kwargs in ARGS:
        mine, theirs = RECORD(*args, **kwargs), DATACLASS(*args, **kwargs)
        assert [f.name for f in records.fields(mine)] == [f.name for f in dataclasses.fields(theirs)]
        assert [(f.default, f.default_factory is records.MISSING) for f in records.fields(RECORD)] == [
            (records.MISSING if f.default is dataclasses.MISSING else f.default, f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(DATACLASS)
        ]
        assert records.asdict(mine) == dataclasses.asdict(theirs)
        assert records.replace(mine, y=9, label="z") == dataclasses.replace(mine, y=9, label="z")
        assert same_repr(records.replace(mine, y=9), dataclasses.replace(theirs, y=9))
    nested = RECORD(1, children=[RECORD(2, tags=("a",)), {"k": (RECORD(3),)}])
    copied = records.asdict(nested)
    assert copied == dataclasses.asdict(nested)
    assert copied["children"][1]["k"][0] == {"x": 3, "y": 0, "label": "", "secret": "s", "tags": (), "children": []}
    assert copied["children"] is not nested.children  # copied, as dataclasses.asdict does
    assert records.is_record(nested) and not records.is_record(RECORD) and not records.is_record(DATACLASS(1))
    with pytest.raises(TypeError):
        records.asdict(DATACLASS(1))
    with pytest.raises(TypeError):
        records.fields(DATACLASS(1))


def test_construction_matches_the_generated_init():
    """Positional, keyword, defaults, fresh default_factory values; the TypeErrors a generated __init__ raises."""
    assert same_repr(RECORD(1, 2, "l", "s", ("t",), [1]), DATACLASS(1, 2, "l", "s", ("t",), [1]))
    assert same_repr(RECORD(y=3, x=1), DATACLASS(y=3, x=1))
    first, second = RECORD(1), RECORD(1)
    assert first.children == [] and first.children is not second.children
    assert list(vars(RECORD(1, label="a"))) == ["x", "y", "label", "secret", "tags", "children"]  # field order
    for args, kwargs, words in [
        ((), {}, "missing 1 required positional argument: 'x'"),
        ((1, 2, 3, 4, 5, 6, 7), {}, "takes 7 positional arguments but 8 were given"),
        ((1,), {"x": 2}, "got multiple values for argument 'x'"),
        ((1,), {"z": 2}, "got an unexpected keyword argument 'z'"),
    ]:
        with pytest.raises(TypeError, match=words):
            RECORD(*args, **kwargs)
        with pytest.raises(TypeError):
            DATACLASS(*args, **kwargs)

    @record
    class Two:
        a: int
        b: int

    with pytest.raises(TypeError, match="missing 2 required positional arguments: 'a' and 'b'"):
        Two()


def test_class_definition_rules_are_dataclasses():
    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Mutable:
            items: list = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @record
        class Order:
            a: int = 0
            b: int

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):

        @record
        class Writable:
            a: int

            def __setattr__(self, name, value):
                object.__setattr__(self, name, value)

    @record
    class WithClassVar:
        shared: ClassVar[int] = 3
        a: int = 1
        b: tuple = field(default=(2,))  # a dataclasses.field is read as well as advisor.records.field

    assert [f.name for f in records.fields(WithClassVar)] == ["a", "b"] and WithClassVar().b == (2,)
    assert WithClassVar.shared == 3 and WithClassVar.a == 1 and WithClassVar.__match_args__ == ("a", "b")
    with pytest.raises(TypeError, match="do not support"):

        @record
        class NotInit:
            a: int = field(default=0, init=False)


def test_inheritance_and_post_init():
    @record
    class Base:
        a: int
        b: int = 1
        items: list = records.field(default_factory=list, compare=False)

    @record
    class Child(Base):
        b: int = 5  # overrides the default, keeps the position
        c: str = "c"

    child = Child(0)
    assert [f.name for f in records.fields(Child)] == ["a", "b", "items", "c"]
    assert (child.a, child.b, child.items, child.c) == (0, 5, [], "c") and child != Base(0, 5)
    assert Child(0, items=[1]) == Child(0) and hash(Child(0, items=[1])) == hash(Child(0))
    assert dataclasses.replace(child, c="d") == Child(0, c="d")  # dataclasses' own functions see a record's fields

    class Plain(Base):  # a plain subclass: its fields stay frozen, other attributes do not
        pass

    plain = Plain(1)
    plain.note = "free"
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        plain.a = 2

    calls = []

    @record
    class Checked:
        a: int

        def __post_init__(self) -> None:
            calls.append(self.a)

    Checked(4)
    records.replace(Checked(5), a=6)
    assert calls == [4, 5, 6]


def test_a_cached_property_on_a_record():
    @record
    class Cached:
        a: int

        @functools.cached_property
        def double(self) -> int:
            return self.a * 2

    cached = Cached(2)
    assert cached.double == 4 and cached.double == 4 and cached == Cached(2)
