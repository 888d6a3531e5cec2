"""A goal's free text, read from the declarations in `loopx.state.entities` (`Fields`).

`goal_texts` walks every record of a goal, nested and tabled ones included, and yields the
values of its declared free-text fields with the visibility they have; the public boundary
builds its forbidden strings from it. `redactable` names the fields a governed redaction may
blank. Both read only the declarations, so a field declared free text is covered by both.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from loopx.state.entities import (
    AGENT,
    ALLOWANCE,
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
        ALLOWANCE,
    )
}

#: The kinds of record a `field.redacted` event may name: those with an id and a visibility
#: of their own in the ledger.
REDACTABLE = ("goal", "todo", "gate", "evidence", "note", "run", "handoff")


def redactable(kind: str) -> tuple[str, ...]:
    """The fields of a `kind` of record a governed redaction may blank: its free text."""
    return RECORDS[kind].named() if kind in REDACTABLE else ()


def _plan(fields: Fields) -> tuple[tuple[str, str, Fields | None], ...]:
    """Each text field as (field, key within its list's items or "", shape of its records)."""
    shapes = dict(fields.shapes)
    return tuple(
        (head, rest, RECORDS[shapes[name]] if name in shapes else None)
        for name in fields.text
        if name not in fields.unmatched
        for head, _, rest in [name.partition(".")]
    )


_PLANS = {kind: _plan(fields) for kind, fields in RECORDS.items()}
# The text fields of each kind at once (an attrgetter: the walk reads thousands of records);
# and the kinds whose text fields hold plain values or lists of them (no ``a.b``, no shapes).
_GETTERS = {kind: attrgetter(*[h for h, _, _ in plan]) for kind, plan in _PLANS.items() if plan}
_FLAT = {kind for kind, plan in _PLANS.items() if all(not k and s is None for _, k, s in plan)}


def values(item: Any, fields: Fields) -> list[Any]:
    """The values of `item`'s free-text fields the boundary matches (all but `unmatched`):
    strings and `PrivateText`, lists flattened, a structured text (a handoff note) read by
    its own declaration."""
    plan = _PLANS[fields.kind]
    if not plan:
        return []
    if isinstance(item, dict):
        raw = [item.get(head) for head, _, _ in plan]
    else:
        got = _GETTERS[fields.kind](item)
        raw = list(got) if len(plan) > 1 else [got]
    if fields.kind in _FLAT:
        return _flat(raw)
    out: list[Any] = []
    for value, (_, key, shape) in zip(raw, plan, strict=True):
        if value is not None and key:
            value = [part.get(key) for part in value]
        for one in _flat([value]):
            if shape is not None and isinstance(one, dict) and private_ref(one) is None:
                out += values(one, shape)
            else:
                out.append(one)
    return out


def _flat(raw: list[Any]) -> list[Any]:
    """The values, lists flattened, without the unset ones."""
    out: list[Any] = []
    for value in raw:
        if type(value) is list:
            out += [v for v in value if v is not None]
        elif value is not None:
            out.append(value)
    return out


Texts = list[tuple[str, str | None, list[Any]]]


def goal_texts(state: GoalState) -> Texts:
    """(visibility, id, free-text values) of every record of the goal that holds free text.

    A record without a visibility of its own (a monitor, a turn, an agent) has its owner's,
    and one whose text is never published (`Fields.published`) never counts as public. The
    id is given (and the record listed even without text) for the goal and for records with
    an id and a visibility of their own."""
    out: Texts = []
    _walk(state, GoalState.FIELDS, state.visibility, state.goal_id, out)
    return out


def _walk(item: Any, fields: Fields, visibility: str, entity_id: str | None, out: Texts) -> None:
    if not fields.published and visibility == "public":
        visibility = "team"
    found = values(item, fields)
    if found or entity_id is not None:
        out.append((visibility, entity_id, found))
    get: Any = item.get if isinstance(item, dict) else item.__getattribute__
    for name, kind in _NESTED[fields.kind]:
        child = get(name)
        if child is not None:
            _walk(child, RECORDS[kind], visibility, None, out)
    for name, kind in fields.tables:
        records = RECORDS[kind]
        for key, child in get(name).items():
            own = child.get("visibility") if isinstance(child, dict) else child.visibility
            _walk(child, records, own or visibility, key if own else None, out)


def _holds_text(kind: str) -> bool:
    fields = RECORDS[kind]
    return bool(fields.text) or any(_holds_text(k) for _, k in fields.nested + fields.tables)


# The nested records worth a visit (a claim holds no text).
_NESTED = {kind: tuple(p for p in f.nested if _holds_text(p[1])) for kind, f in RECORDS.items()}
