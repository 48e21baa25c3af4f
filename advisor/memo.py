"""Caches for `advisor check`'s path without importing functools: functools imports collections (and keyword, operator,
types), about an eighth of `advisor check` (tests/benchmarks/bench_check.py), for three decorators.

- ``memo``: functools.cache for a function of hashable positional arguments (results kept for the process, as the
  rule tables and files it caches are);
- ``once``: functools.cached_property (computed on first access, then kept in the instance's ``__dict__``).
tests/test_memo.py holds both to functools' behaviour.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which costs `advisor check` (bench_check.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def memo(function: Callable[..., Any]) -> Callable[..., Any]:
    """Each distinct call of ``function`` computed once; ``cache_clear()`` forgets them (tests)."""
    results: dict[tuple, Any] = {}

    def cached(*args: Any) -> Any:
        try:
            return results[args]
        except KeyError:
            value = results[args] = function(*args)
            return value

    cached.__name__ = function.__name__
    cached.__qualname__ = function.__qualname__
    cached.__doc__ = function.__doc__
    cached.__wrapped__ = function  # type: ignore[attr-defined]
    cached.cache_clear = results.clear  # type: ignore[attr-defined]
    return cached


class once:  # noqa: N801  (a decorator, named as functools.cached_property is)
    """A property computed on first access and then kept in the instance's ``__dict__`` (which then answers)."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value
