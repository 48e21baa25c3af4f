"""``@record``: a frozen dataclass that costs less to define.

For every frozen dataclass, dataclasses writes and compiles six methods (__init__, __repr__, __eq__, __hash__,
__setattr__, __delattr__); compiling them is most of what importing the advisor's data model costs, and `advisor check`
imports some 25 such classes (tests/benchmarks/bench_check.py). A record is that same frozen dataclass (fields(),
asdict(), replace(), the generated __init__ and frozen guards) whose __repr__, __eq__ and __hash__ are three functions
shared by every record instead of three compiled per class. They do what dataclasses' own do: the fields in order,
equal only to an instance of the very same class, ``field(compare=False / hash=... / repr=False)`` honoured.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from reprlib import recursive_repr
from typing import Any, TypeVar

T = TypeVar("T")


def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)``, with the shared __repr__, __eq__ and __hash__."""
    body = dict(cls.__dict__)
    # A __hash__ of the class's own, as dataclasses judges it (a body that defines __eq__ alone gets __hash__ = None).
    own_hash = body.get("__hash__") is not None or ("__hash__" in body and "__eq__" not in body)
    cls = dataclass(frozen=True, eq=False, repr=False)(cls)
    own = fields(cls)
    cls.__record_compare__ = tuple(f.name for f in own if f.compare)
    cls.__record_hash__ = tuple(f.name for f in own if (f.compare if f.hash is None else f.hash))
    cls.__record_repr__ = tuple(f.name for f in own if f.repr)
    for name, method in (("__eq__", _eq), ("__repr__", _repr)):
        if name not in body:  # as dataclasses does: a method the class defines itself stays
            setattr(cls, name, method)
    if not own_hash:
        cls.__hash__ = _hash
    return cls


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self.__record_compare__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self.__record_hash__))


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_repr__)
    return f"{self.__class__.__qualname__}({shown})"
