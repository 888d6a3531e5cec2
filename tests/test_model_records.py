"""`Value` and `Mutable` (model.records): the equality, hash and repr a dataclass would
compile for a class, written once, for the dataclasses a fresh `loopx build` imports (issue
19). A class that derives from them behaves as the same dataclass declared with `eq` and
`repr`; every such class in loopx is declared so that nothing is compiled over them."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

import loopx
from loopx.model.records import Mutable, Record, Value


@dataclass(frozen=True, repr=False, eq=False)
class Point(Value):
    x: int
    label: str = "p"
    seen: int = field(default=0, compare=False, repr=False)


@dataclass(repr=False, eq=False)
class Box(Mutable):
    items: list[Any]
    name: str = "box"


@dataclass(frozen=True, repr=False, eq=False)
class Empty(Value):
    pass


def _twin(cls: type, frozen: bool) -> type:
    """The class as `dataclass` makes it with its own compiled methods."""
    made = dataclasses.make_dataclass(
        cls.__name__,
        [(f.name, f.type, f) for f in dataclasses.fields(cls)],
        frozen=frozen,
    )
    made.__qualname__ = cls.__qualname__
    return made


@pytest.mark.parametrize(
    "args",
    [(1,), (1, "q"), (2, "p", 5), (1, "p", 9)],
)
def test_a_value_is_equal_hashed_and_shown_as_the_frozen_dataclass(args: tuple[Any, ...]) -> None:
    twin = _twin(Point, frozen=True)
    ours, theirs = Point(*args), twin(*args)
    assert repr(ours) == repr(theirs)
    for other in [(1,), (1, "q"), (2, "p", 5), (1, "p", 9)]:
        assert (ours == Point(*other)) == (theirs == twin(*other))
        if ours == Point(*other):
            assert hash(ours) == hash(Point(*other))
    assert ours != twin(*args) and ours != args  # another class is never equal
    with pytest.raises(FrozenInstanceError):
        ours.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del ours.label  # type: ignore[misc]
    assert dataclasses.replace(ours, x=7) == Point(7, *args[1:])
    assert {ours: 1}[Point(*args)] == 1


def test_a_mutable_is_equal_and_shown_as_the_dataclass_and_not_hashable() -> None:
    twin = _twin(Box, frozen=False)
    ours = Box([1, {"a": 2}])
    assert repr(ours) == repr(twin([1, {"a": 2}])) == "Box(items=[1, {'a': 2}], name='box')"
    assert ours == Box([1, {"a": 2}]) and ours != Box([1]) and ours != Box([1, {"a": 2}], "b")
    ours.items.append(3)
    ours.name = "changed"  # not frozen
    assert ours == Box([1, {"a": 2}, 3], "changed")
    with pytest.raises(TypeError, match="unhashable"):
        hash(ours)
    ours.items.append(ours)  # a cycle is shown as a dataclass shows one
    assert repr(ours).endswith("...], name='changed')")


@dataclass(frozen=True, repr=False, eq=False)
class One(Value):
    x: float


def test_a_value_of_one_field_compares_as_the_dataclass_does() -> None:
    """A one-field value compares a 1-tuple, as `dataclass` does: a field that is not equal
    to itself (`nan`) is still equal when it is the same object."""
    nan = float("nan")
    twin = _twin(One, frozen=True)
    assert (One(nan) == One(nan)) is (twin(nan) == twin(nan)) is True
    assert (One(float("nan")) == One(nan)) is (twin(float("nan")) == twin(nan)) is False
    assert One(1.0) == One(1) and hash(One(1.0)) == hash(One(1))


def test_a_value_without_fields() -> None:
    assert Empty() == Empty() and hash(Empty()) == hash(Empty()) and repr(Empty()) == "Empty()"
    assert Empty() != Point(1)


def _loopx_classes() -> list[type]:
    for info in pkgutil.walk_packages(loopx.__path__, "loopx."):
        if info.name.startswith(("loopx.mcp", "loopx.__main__")):
            continue  # the MCP server needs its optional package; __main__ runs the CLI
        importlib.import_module(info.name)
    found: list[type] = []
    stack: list[type] = [Value]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("loopx.") and sub not in (Mutable, Record):
                found.append(sub)
    return found


def test_every_class_on_these_bases_is_declared_so_that_nothing_is_compiled_over_them() -> None:
    """A frozen dataclass (or a `Record`) derives from `Value`, any other from `Mutable`
    (so it is not hashable, as `dataclass` makes it); none has a compiled `__eq__`, `__hash__` or
    `__repr__` of its own, which `eq=True` or `repr=True` would give it."""
    classes = _loopx_classes()
    assert len(classes) >= 30  # the build's: registry, artifacts, boundary, scanner, ...
    for cls in classes:
        assert dataclasses.is_dataclass(cls), cls
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert not params.eq and not params.repr, cls
        assert not {"__eq__", "__hash__", "__repr__"} & cls.__dict__.keys(), cls
        frozen = params.frozen or issubclass(cls, Record)  # a record refuses assignment
        assert issubclass(cls, Mutable) != frozen, cls
