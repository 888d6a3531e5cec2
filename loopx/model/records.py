"""Frozen, keyword-only records whose methods are written once instead of compiled per class.

`dataclass(frozen=True)` compiles six methods for every class it makes (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`): about half a millisecond a
class in a short process (issue 19: ~20 ms of a write for the ~30 commands, ~3 ms of every
call that reads the project configuration for its two records). `record` makes a class a
dataclass of its fields only (so `fields()`, `replace()` and `asdict()` work) with the
methods of `Record`, which behave as a frozen keyword-only dataclass's do: keyword
arguments with their defaults and factories (read from `__record__`), equality and hash over
the fields in order and the same repr (`Value`'s), no assignment or deletion.

A class derives from `Record` and is passed to `record` (the write commands, from
`__init_subclass__`), or is declared with `@frozen`, which gives it `Record`'s methods.

`Value` and `Mutable` give the same equality, hash and repr to a dataclass that keeps its own
compiled `__init__`
(positional arguments, and as fast as `dataclass` makes it: a build makes some of them by
the thousand): declared `@dataclass(repr=False, eq=False)` (frozen or not) and derived from
one of them, it has their equality, hash and repr, written once here, instead of the two or
three methods `dataclass` would compile for it (~0.2-0.5 ms a class; a fresh `loopx build`
imports some forty of them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, ClassVar, TypeVar

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover (Python 3.10)
    from typing_extensions import dataclass_transform

T = TypeVar("T")


_COMPARED: dict[type, Callable[[Any], Any]] = {}


def _compared(cls: type) -> Callable[[Any], Any]:
    """What equality and hash of an instance of the dataclass `cls` are over: its fields
    that `compare` (all but those declared `field(compare=False)`), in order, read in C."""
    got = _COMPARED.get(cls)
    if got is None:
        names = [f.name for f in fields(cls) if f.compare]
        if len(names) == 1:  # a tuple still, as `dataclass` compares (`nan` is itself)
            one = attrgetter(names[0])
            got = _COMPARED[cls] = lambda obj: (one(obj),)
        else:
            got = _COMPARED[cls] = attrgetter(*names) if names else _nothing
    return got


def _nothing(_: Any) -> tuple[()]:
    return ()


class Value:
    """Equality, hash and repr over a dataclass's fields, as `dataclass` would compile them
    for a frozen class (`@dataclass(frozen=True, repr=False, eq=False)` deriving from this):
    equal when of the same class with equal fields, hashed over them, shown as
    `Name(field=value, ...)`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = _compared(self.__class__)
        return bool(compared(self) == compared(other))

    def __hash__(self) -> int:
        return hash(_compared(self.__class__)(self))

    @recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)  # type: ignore[arg-type]
            if f.repr
        )
        return f"{type(self).__qualname__}({shown})"


class Mutable(Value):
    """`Value`'s equality and repr for a dataclass that is not frozen, and so, as
    `dataclass` makes it, not hashable."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]


class Record(Value):
    """The methods of a frozen, keyword-only dataclass: its `__init__` over the fields in
    `__record__`, no assignment or deletion, and `Value`'s equality, hash and repr."""

    __record__: ClassVar[tuple[tuple[str, Any, Any], ...]] = ()

    def __init__(self, **values: Any) -> None:
        kind = type(self).__qualname__
        for name, default, factory in self.__record__:
            if name in values:
                value = values.pop(name)
            elif default is not MISSING:
                value = default
            elif factory is not MISSING:
                value = factory()
            else:
                raise TypeError(f"{kind}() missing required keyword argument: {name!r}")
            object.__setattr__(self, name, value)
        for name in values:
            raise TypeError(f"{kind}() got an unexpected keyword argument {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


def record(cls: type[T]) -> type[T]:
    """Make `cls` a keyword-only dataclass of its fields whose methods are `Record`'s."""
    if cls.__doc__ is None:  # dataclass would otherwise compute a signature for it
        cls.__doc__ = cls.__name__
    dataclass(init=False, repr=False, eq=False, kw_only=True)(cls)
    made: Any = cls
    made.__record__ = tuple((f.name, f.default, f.default_factory) for f in fields(made))
    return cls


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
def frozen(cls: type[T]) -> type[T]:
    """`@frozen class C: …`: a frozen, keyword-only record (to mypy, the dataclass it is)."""
    for name in _METHODS:
        setattr(cls, name, getattr(Record, name))  # its own or `Value`'s
    return record(cls)
