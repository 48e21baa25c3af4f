"""``@record``: a frozen, dataclass-like class that costs almost nothing to define.

``@dataclass(frozen=True)`` writes and compiles six methods per class (__init__, __repr__, __eq__, __hash__,
__setattr__, __delattr__), and importing ``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ...):
together most of what importing the advisor's data model cost, and `advisor check` defines some 30 such classes
(tests/benchmarks/bench_check.py). A record is built here without ``dataclasses``: its fields are read from the class
annotations, and __init__, __repr__, __eq__, __hash__, __setattr__ and __delattr__ are functions shared by every record
that read the class's field tuples. They behave as the generated ones do: positional and keyword construction, defaults
and ``field(default_factory=...)``, the fields in order in the repr, equal only to an instance of the very same class,
``field(compare=False / hash=... / repr=False)`` honoured, assignment and deletion raising
``dataclasses.FrozenInstanceError``, a method the class defines itself kept.

``fields()``, ``asdict()``, ``replace()`` and ``MISSING`` here are the records' own equivalents of the ``dataclasses``
functions (the advisor's code uses these). The ``dataclasses`` functions work on records too: ``__dataclass_fields__`` is
computed on first use, the only moment ``dataclasses`` gets imported (tests and the app use ``dataclasses.replace``).
"""

from __future__ import annotations

import sys
from reprlib import recursive_repr

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which costs `advisor check` (bench_check.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # "no default", as dataclasses.MISSING


class Field:
    """One field of a record: what ``dataclasses.Field`` says of it (name, type, default, default_factory, repr, hash,
    compare)."""

    __slots__ = ("name", "type", "default", "default_factory", "repr", "hash", "compare")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,  # noqa: A002
                 hash: bool | None = None, compare: bool = True) -> None:  # noqa: A002  # fmt: skip
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.hash = hash
        self.compare = compare

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r}, "
                f"default_factory={self.default_factory!r}, repr={self.repr}, hash={self.hash}, "
                f"compare={self.compare})")  # fmt: skip


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, repr: bool = True,  # noqa: A002
          hash: bool | None = None, compare: bool = True) -> Any:  # noqa: A002  # fmt: skip
    """A record field with options, as ``dataclasses.field`` (no ``init=False``, no ``kw_only``)."""
    return Field(default, default_factory, repr, hash, compare)


def record(cls: type[T]) -> type[T]:
    """Make ``cls`` a record: ``@dataclass(frozen=True)`` without the dataclasses module."""
    body = cls.__dict__
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        if "__record_fields__" in base.__dict__:
            found.update((f.name, f) for f in base.__record_fields__)
        elif "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"record {cls.__qualname__} cannot inherit from the dataclass {base.__qualname__}")
    for name, annotation in body.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        spec = _as_field(body.get(name, MISSING))
        spec.name, spec.type = name, annotation
        if spec.default.__class__.__hash__ is None:  # as dataclasses: a list/dict/set default would be shared
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory")
        if spec.default is MISSING:
            if name in body:
                delattr(cls, name)  # a bare field() or a default_factory leaves no class attribute
        else:
            setattr(cls, name, spec.default)
        found[name] = spec
    own = tuple(found.values())
    seen_default = False
    for f in own:
        if f.default is MISSING and f.default_factory is MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True

    cls.__record_fields__ = own
    cls.__record_names__ = tuple(f.name for f in own)
    cls.__record_compare__ = tuple(f.name for f in own if f.compare)
    cls.__record_hash__ = tuple(f.name for f in own if (f.compare if f.hash is None else f.hash))
    cls.__record_repr__ = tuple(f.name for f in own if f.repr)
    cls.__record_post_init__ = hasattr(cls, "__post_init__")  # called after __init__, as dataclasses does
    cls.__dataclass_fields__ = _DataclassFields()  # built on first use, for the dataclasses functions
    # A __hash__ of the class's own, as dataclasses judges it (a body that defines __eq__ alone gets __hash__ = None).
    own_hash = body.get("__hash__") is not None or ("__hash__" in body and "__eq__" not in body)
    for name, method in (("__init__", _init), ("__eq__", _eq), ("__repr__", _repr)):
        if name not in body:  # as dataclasses does: a method the class defines itself stays
            setattr(cls, name, method)
    for name, method in (("__setattr__", _setattr), ("__delattr__", _delattr)):
        if name in body:  # as dataclasses does for frozen classes
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        setattr(cls, name, method)
    if not own_hash:
        cls.__hash__ = _hash
    if "__match_args__" not in body:
        cls.__match_args__ = cls.__record_names__
    return cls


def is_record(value: Any) -> bool:
    """True for a record instance (not a record class)."""
    return hasattr(type(value), "__record_fields__")


def fields(value: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order (``dataclasses.fields``)."""
    try:
        return value.__record_fields__
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with some fields changed (``dataclasses.replace``)."""
    for name in obj.__record_names__:
        if name not in changes:
            changes[name] = obj.__dict__[name]
    return obj.__class__(**changes)


def asdict(obj: Any) -> dict[str, Any]:
    """The record ``obj`` as a dict, recursing into records, lists, tuples and dicts, other values deep-copied
    (``dataclasses.asdict``)."""
    if not is_record(obj):
        raise TypeError("asdict() should be called on record instances")
    return _asdict(obj)


_ATOMS = (str, int, float, bool, type(None))


def _asdict(obj: Any) -> Any:
    cls = type(obj)
    if cls in _ATOMS:
        return obj
    if hasattr(cls, "__record_fields__"):
        values = obj.__dict__
        return {name: _asdict(values[name]) for name in cls.__record_names__}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple, rebuilt field by field
        return cls(*[_asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return cls(_asdict(v) for v in obj)
    if isinstance(obj, dict):
        return cls((_asdict(k), _asdict(v)) for k, v in obj.items())
    if "dataclasses" in sys.modules and sys.modules["dataclasses"].is_dataclass(obj) and not isinstance(obj, type):
        return sys.modules["dataclasses"].asdict(obj)
    import copy

    return copy.deepcopy(obj)


def _is_class_var(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _as_field(value: Any) -> Field:
    """A class attribute as a Field: a default, a record field(), or a dataclasses.field() (read, not imported)."""
    if isinstance(value, Field):
        return value
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and isinstance(value, dataclasses.Field):
        if not value.init or value.kw_only is True:
            raise TypeError("records do not support init=False or kw_only fields")
        default = MISSING if value.default is dataclasses.MISSING else value.default
        factory = MISSING if value.default_factory is dataclasses.MISSING else value.default_factory
        return Field(default, factory, value.repr, value.hash, value.compare)
    return Field(default=value)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    names = cls.__record_names__
    # the common case first: every field given by position
    values = dict(zip(names, args, strict=True)) if not kwargs and len(args) == len(names) else _bind(cls, args, kwargs)
    self.__dict__.update(values)
    if cls.__record_post_init__:
        self.__post_init__()


def _bind(cls: type, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The field values for ``cls(*args, **kwargs)``, in field order, with the TypeErrors a generated __init__ raises."""
    where = f"{cls.__qualname__}.__init__()"
    names = cls.__record_names__
    if len(args) > len(names):
        raise TypeError(f"{where} takes {len(names) + 1} positional arguments but {len(args) + 1} were given")
    values = dict(zip(names, args, strict=False))  # the first len(args) fields
    for name in kwargs:
        if name in values:
            raise TypeError(f"{where} got multiple values for argument {name!r}")
        if name not in names:
            raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
    missing = []
    for f in cls.__record_fields__[len(args) :]:
        if f.name in kwargs:
            values[f.name] = kwargs[f.name]
        elif f.default is not MISSING:
            values[f.name] = f.default
        elif f.default_factory is not MISSING:
            values[f.name] = f.default_factory()
        else:
            missing.append(repr(f.name))
    if missing:
        listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
        plural = "argument" if len(missing) == 1 else "arguments"
        raise TypeError(f"{where} missing {len(missing)} required positional {plural}: {listed}")
    return values


def _frozen(self: Any, name: str) -> None:
    """As a frozen dataclass: on a record any attribute, on a plain subclass of one its fields, cannot change."""
    if "__record_fields__" in type(self).__dict__ or name in type(self).__record_names__:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _setattr(self: Any, name: str, value: Any) -> None:
    _frozen(self, name)
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    _frozen(self, name)
    object.__delattr__(self, name)


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


class _DataclassFields:
    """``__dataclass_fields__`` of a record, made on first access from a dataclass with the same fields, so
    ``dataclasses.fields/asdict/replace/is_dataclass`` work on records (their only use of the dataclasses module)."""

    def __get__(self, instance: Any, owner: type) -> dict[str, Any]:
        import dataclasses

        namespace: dict[str, Any] = {"__annotations__": {}, "__module__": owner.__module__}
        for f in owner.__record_fields__:
            namespace["__annotations__"][f.name] = f.type
            namespace[f.name] = dataclasses.field(
                default=dataclasses.MISSING if f.default is MISSING else f.default,
                default_factory=dataclasses.MISSING if f.default_factory is MISSING else f.default_factory,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
            )
        twin = dataclasses.dataclass(frozen=True)(type(owner.__name__, (), namespace))
        type.__setattr__(owner, "__dataclass_fields__", twin.__dataclass_fields__)  # computed once per class
        return twin.__dataclass_fields__
