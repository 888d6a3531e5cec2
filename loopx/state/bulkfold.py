"""The fold of a whole ledger in one pass: `apply` over a stream of checked events, for the
bulk read (`loopx.store.bulk`), with less work per event (issue 19).

The state it returns equals `replay` of the same events (`tests/test_bulk_read.py` holds it
to that), with two differences of form, not of content: a lease renewal (two thirds of a
long goal's events) is folded inline, and the operations index is not built at all: the
state's index stands on the whole ledger read (`OpIndex.base`), whose records `index_of`
gives when a write first needs them (`loopx.engine.opindex`). Events are read by attribute
(`loopx.model.envelope.TypedEnvelope`); the handlers of the other types are `apply`'s own,
called the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from loopx.model.errors import LedgerDamage
from loopx.state.entities import GoalState, OpIndex
from loopx.state.fold import _JOURNAL, _OWN_KEYS, _QUIET, _SHAPE_ERRORS, HANDLERS, subject_of

RENEWED = "todo.renewed"


class Read(Protocol):
    """A checked read of a whole ledger (`loopx.store.bulk.BulkRead`, a layer below): its
    events, then the cursor after the last."""

    cursor: Any

    def __iter__(self) -> Iterator[Any]: ...


def fold_stream(read: Read) -> GoalState | None:
    """The state of a goal from all of its events, in order, from the first; a `LedgerDamage`
    where `apply` raises one (the events come checked: seq, chain and envelope hold).

    No handler reads the goal's heads, so they are set once, from the last event of each
    kind: the last (revision, head, updated_at), the last but heartbeats and the journal
    (changed_at), the last but the journal (truth_*). The operations index is left unread:
    its base is `read.cursor`, its records `index_of` the same bytes."""
    state: GoalState | None = None
    handlers, quiet, journal = HANDLERS, _QUIET, _JOURNAL
    event: Any = None
    changed = truth = None
    todos: dict[str, Any] = {}
    try:
        for event in read:
            event_type, data = event.type, event.data
            if event_type == RENEWED and state is not None:  # `_todo_renewed`, inline
                todo = todos.get(data["todo_id"])
                if todo is not None and todo.claim is not None:
                    claim, at = todo.claim, event.recorded_at
                    claim["heartbeat_at"] = at
                    claim["lease_expires_at"] = data["lease_expires_at"]
                    todo.revision = event.seq
                    todo.updated_at = at
                truth = event
                continue
            if state is None:
                state = _started(event)
                todos = state.todos
            handler = handlers.get(event_type)
            if handler is not None:  # unknown types from a newer loopx are carried
                handler(state, data, event)
            if event_type not in quiet:  # neither a heartbeat nor the turn journal
                changed = truth = event
            elif event_type not in journal:
                truth = event
    except _SHAPE_ERRORS as err:  # chained: --debug still shows where it broke
        seq = getattr(event, "seq", None)
        raise LedgerDamage("ledger event does not have the shape of its type", seq=seq) from err
    if state is not None:
        _set_heads(state, event, changed, truth)
        state.operations = OpIndex(base=read.cursor, last=event.operation_id)
    return state


def _started(event: Any) -> GoalState:
    if event.type != "goal.created":
        raise LedgerDamage("ledger does not start with goal.created", offset=0)
    return GoalState(goal_id=event.goal_id)


def _set_heads(state: GoalState, last: Any, changed: Any, truth: Any) -> None:
    state.revision, state.head, state.updated_at = last.seq, last.sum, last.recorded_at
    if changed is not None:
        state.changed_at = changed.recorded_at
    if truth is not None:
        state.truth_revision, state.truth_head = truth.seq, truth.sum
        state.truth_at = truth.recorded_at


def index_of(events: Iterable[Any]) -> bytes:
    """The operations index of `events` (all of a ledger's, in order, from the first) as
    `OpIndex.dump` writes it: what `apply` builds, for events the bulk read vouches for."""
    own_keys = _OWN_KEYS
    records: list[str] = []  # a record per operation: `|<op id> <hash> <first> <last> <subject>`
    op_ids: list[str] = []  # the id of each record
    last_op = ""
    for event in events:
        seq, op_id = event.seq, event.operation_id
        if op_id == last_op:  # a later event of the same operation (they are adjacent)
            start, _, shown = records[-1].rsplit(" ", 2)  # the record ends "<last> <subject>"
            records[-1] = f"{start} {seq} {shown}"
            continue
        subject = event.data.get(own_keys.get(event.type))  # subject_of's common case
        if subject is None:
            subject = subject_of(event)
        if not (type(subject) is str and subject and " " not in subject and "|" not in subject):
            subject = "-"  # as `OpIndex.dump` writes a subject that is not `_plain`
        records.append(f"|{op_id} {event.op_hash} {seq} {seq} {subject}")
        op_ids.append(op_id)
        last_op = op_id
    if len(set(op_ids)) != len(op_ids):
        # Operation ids are unique in a ledger loopx wrote; when one repeats, its later
        # record replaces the earlier one in place (as in the dict `apply` keeps).
        latest = dict(zip(op_ids, records, strict=True))  # first position, latest record
        records = list(latest.values())
    return "".join(records).encode()
