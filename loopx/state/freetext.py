"""A goal's free text, read from the declarations in `loopx.state.entities` (`Fields`).

`goal_texts` walks every record of a goal, nested and tabled ones included, and yields the
values of its declared free-text fields with the visibility they have; the public boundary
builds its forbidden strings from it. `redactable` names the fields a governed redaction may
blank. Both read only the declarations, so a field declared free text is covered by both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopx.state.entities import (
    AGENT,
    CLAIM,
    HANDOFF,
    HANDOFF_NOTE,
    MONITOR,
    QUOTA,
    REDACTION,
    TURN,
    Evidence,
    Fields,
    Gate,
    GoalState,
    Note,
    Run,
    Todo,
    private_ref,
)

RECORDS: dict[str, Fields] = {
    f.kind: f
    for f in (
        GoalState.FIELDS,
        Todo.FIELDS,
        Gate.FIELDS,
        Evidence.FIELDS,
        Run.FIELDS,
        Note.FIELDS,
        HANDOFF,
        HANDOFF_NOTE,
        MONITOR,
        TURN,
        CLAIM,
        QUOTA,
        AGENT,
        REDACTION,
    )
}

#: The kinds of record a `field.redacted` event may name: those with an id and a visibility
#: of their own in the ledger.
REDACTABLE = ("goal", "todo", "gate", "evidence", "note", "run", "handoff")


def redactable(kind: str) -> tuple[str, ...]:
    """The fields of a `kind` of record a governed redaction may blank: its free text."""
    return RECORDS[kind].named() if kind in REDACTABLE else ()


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _read(item: Any, path: str) -> list[Any]:
    """The values at `path` (``a.b``: `b` of each item of the list `a`), lists flattened."""
    head, _, rest = path.partition(".")
    value = _get(item, head)
    if value is None:
        return []
    if rest:
        return [v for part in value or () for v in _read(part, rest)]
    return list(value) if isinstance(value, list) else [value]


def values(item: Any, fields: Fields) -> list[Any]:
    """The values of `item`'s free-text fields: strings and `PrivateText`, lists flattened, a
    structured text (a handoff note) read by its own declaration."""
    shapes = dict(fields.shapes)
    out: list[Any] = []
    for name in fields.text:
        for value in _read(item, name):
            if name in shapes and isinstance(value, dict) and private_ref(value) is None:
                out += values(value, RECORDS[shapes[name]])
            else:
                out.append(value)
    return out


def goal_texts(state: GoalState) -> Iterator[tuple[str, str | None, list[Any]]]:
    """(visibility, id, free-text values) of every record of the goal that holds free text.

    A record without a visibility of its own (a monitor, a turn, an agent) has its owner's,
    and one whose text is never published (`Fields.published`) never counts as public. The
    id is given (and the record yielded even without text) for the goal and for records with
    an id and a visibility of their own."""
    yield from _walk(state, GoalState.FIELDS, state.visibility, state.goal_id)


def _walk(
    item: Any, fields: Fields, visibility: str, entity_id: str | None
) -> Iterator[tuple[str, str | None, list[Any]]]:
    if not fields.published and visibility == "public":
        visibility = "team"
    found = values(item, fields)
    if found or entity_id is not None:
        yield visibility, entity_id, found
    for name, kind in fields.nested:
        child = _get(item, name)
        if child is not None:
            yield from _walk(child, RECORDS[kind], visibility, None)
    for name, kind in fields.tables:
        for key, child in (_get(item, name) or {}).items():
            own = _get(child, "visibility")
            yield from _walk(child, RECORDS[kind], own or visibility, key if own else None)
