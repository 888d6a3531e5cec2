"""The written-out `__init__` of each entity record (`state/entities.py`, issue 19) is the
one `dataclass` would generate from its fields: same parameters in the same order, the same
defaults, a fresh list or dict for each factory default, every field set."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, field, fields, make_dataclass
from typing import Any

import pytest

from loopx.state import entities

RECORDS = [entities.Todo, entities.Gate, entities.Evidence, entities.Run, entities.Note]
RECORDS.append(entities.Handoff)


def _generated(cls: type) -> type:
    """The record as `dataclass` makes it from the same fields, with its own `__init__`."""
    spec: list[Any] = []
    for f in fields(cls):
        if f.default is not MISSING:
            spec.append((f.name, f.type, field(default=f.default)))
        elif f.default_factory is not MISSING:
            spec.append((f.name, f.type, field(default_factory=f.default_factory)))
        else:
            spec.append((f.name, f.type))
    return make_dataclass(f"Generated{cls.__name__}", spec, slots=True, repr=False, eq=False)


def _shape(cls: type) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [(p.name, p.kind, repr(p.default)) for p in params]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_each_init_is_the_one_dataclass_would_write(cls: type) -> None:
    made = _generated(cls)
    assert _shape(cls) == _shape(made)
    required = [
        f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
    ]
    values = {name: f"v-{name}" for name in required}
    mine, theirs = cls(**values), made(**values)
    assert [getattr(mine, f.name) for f in fields(cls)] == [
        getattr(theirs, f.name) for f in fields(cls)
    ]
    again = cls(**values)
    for f in fields(cls):
        if f.default_factory is not MISSING:  # a fresh container per record, never shared
            assert getattr(again, f.name) is not getattr(mine, f.name)
    every = [f"x-{f.name}" for f in fields(cls)]
    assert [getattr(cls(*every), f.name) for f in fields(cls)] == every
    with pytest.raises(TypeError):
        cls(*every, "one too many")
