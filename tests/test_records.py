"""advisor.records.record against dataclass(frozen=True): the same repr, equality, hash, fields and frozen guards."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

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
