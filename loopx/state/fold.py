"""The fold: `apply(state, event)` and `replay(events)`, pure and total over valid events.

Each handler changes only what its event says, stamps revisions with the event's seq, and
never looks at the clock: all time comes from the event's `recorded_at`. `HANDLERS`, at the
end, names the handler of every event type; those of handoffs, monitors, turns and
redactions live beside their views in `loopx.state.<entity>`, which never import the fold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from loopx.model.errors import LedgerDamage
from loopx.model.upgrade import EVENT_VERSION, upgrade
from loopx.state import allowances, handoff, monitors, redactions, turns
from loopx.state.entities import Evidence, Gate, GoalState, Note, Run, Todo, from_event

Event = dict[str, Any]
Handler = Callable[[GoalState, dict[str, Any], Event], None]
# Events that leave `GoalState.changed_at` (the workbench's "now") where it was: a lease
# extension, and the turn journal's progress (`turns.JOURNAL`), which is no goal truth at all.
HEARTBEATS = frozenset({"todo.renewed"}) | turns.JOURNAL
_JOURNAL, _QUIET = turns.JOURNAL, HEARTBEATS  # read on every event of a replay
# What an operation created or changed, reported in its receipt: the id named after the
# event type's noun (`evidence.added` → evidence_id, even when it also names a todo_id), else
# the first of these keys present.
SUBJECT_KEYS = (
    "todo_id",
    "gate_id",
    "evidence_id",
    "run_id",
    "note_id",
    "handoff_id",
    "agent_id",
)


_OWN_KEYS: dict[str, str] = {}  # event type → the id key named after its noun (a cache)


def subject_of(event: Event) -> Any:
    data, event_type = event["data"], event["type"]
    key = _OWN_KEYS.get(event_type)
    if key is None:
        key = _OWN_KEYS[event_type] = event_type.split(".", 1)[0] + "_id"
    own = data.get(key)
    return own if own is not None else next((data[k] for k in SUBJECT_KEYS if k in data), None)


_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def apply(state: GoalState | None, event: Event) -> GoalState:
    """Fold one event into `state` (mutated in place and returned).

    The store already refused lines that are not event envelopes; an event whose data does
    not have the shape of its type (a forged or hand-made line) is refused as `LedgerDamage`
    here, never folded into a half-valid state. Every event of a replay runs through here:
    names are read once into locals, and the body is inline (no second call per event).
    """
    given = event
    try:
        if event.get("v") != EVENT_VERSION:
            event = upgrade(event)
        seq, event_type, data = event["seq"], event["type"], event["data"]
        if state is None:
            if event_type != "goal.created":
                raise LedgerDamage("ledger does not start with goal.created", offset=0)
            state = GoalState(goal_id=event["goal_id"])
        elif seq != state.revision + 1:
            raise LedgerDamage("event is not the next one in sequence", seq=seq)
        handler = HANDLERS.get(event_type)
        if handler is not None:  # unknown types from a newer loopx are carried, not fatal
            handler(state, data, event)
        at, line_sum = event["recorded_at"], event["sum"]
        state.revision = seq
        state.head = line_sum
        state.updated_at = at
        if event_type not in _QUIET:  # neither a heartbeat nor the turn journal
            state.changed_at = at
            state.truth_revision, state.truth_head, state.truth_at = seq, line_sum, at
        elif event_type not in _JOURNAL:
            state.truth_revision, state.truth_head, state.truth_at = seq, line_sum, at
        # The idempotency index.
        ops, op_id = state.operations, event["operation_id"]
        if op_id == ops.last:  # a later event of the same operation (events of one are adjacent)
            op = ops.entries.get(op_id) or ops[op_id]
            ops.entries[op_id] = [op[0], op[1], seq, op[3]]
        else:
            # subject_of, its common case inline (a type not seen yet looks up None: no key)
            own = data.get(_OWN_KEYS.get(event_type))
            ops.entries[op_id] = [
                event["op_hash"],
                seq,
                seq,
                subject_of(event) if own is None else own,
            ]
            ops.last = op_id
        return state
    except _SHAPE_ERRORS as err:  # chained: --debug still shows where it broke
        raise LedgerDamage(
            "ledger event does not have the shape of its type", seq=given.get("seq")
        ) from err


def replay(events: Iterable[Event], state: GoalState | None = None) -> GoalState | None:
    for event in events:
        state = apply(state, event)
    return state


# -- goal ---------------------------------------------------------------------------------


def _goal_created(state: GoalState, data: dict[str, Any], event: Event) -> None:
    state.title = data["title"]
    state.objective = data["objective"]
    state.acceptance = list(data.get("acceptance", []))
    state.repository = data.get("repository")
    state.predecessor = data.get("predecessor")
    state.policy = dict(data.get("policy", {}))
    state.visibility = event["visibility"]
    state.created_at = event["recorded_at"]


def _goal_closed(state: GoalState, data: dict[str, Any], event: Event) -> None:
    state.status = data["outcome"]
    state.outcome_reason = data.get("reason")
    state.closed_at = event["recorded_at"]
    _changed(state, event, "goal", state.goal_id, state.status)


def _changed(state: GoalState, event: Event, kind: str, entity_id: str, what: str) -> None:
    """Record a status change a visitor follows (`GoalState.history`)."""
    at, line_sum = event["recorded_at"], event["sum"][:16]
    state.history.append([event["seq"], at, kind, entity_id, what, line_sum])


def _agent_registered(state: GoalState, data: dict[str, Any], event: Event) -> None:
    state.agents[data["agent_id"]] = {
        "agent_id": data["agent_id"],
        "name": data.get("name"),
        "kind": data.get("kind"),
        "registered_at": event["recorded_at"],
    }


def _quota_set(state: GoalState, data: dict[str, Any], event: Event) -> None:
    state.policy["quota"] = data.get("quota")
    state.policy["quota_unit"] = data.get("quota_unit", "runs")


# -- todos --------------------------------------------------------------------------------


def _touch(todo: Todo, event: Event) -> None:
    todo.revision = event["seq"]
    todo.updated_at = event["recorded_at"]


def _todo_added(state: GoalState, data: dict[str, Any], event: Event) -> None:
    monitor = monitors.new_record(data["monitor"]) if "monitor" in data else None
    # A new entity takes its visibility, seq and time from the envelope (each here and below
    # passed as it is: no dict of them built per event, issue 19).
    seq, at = event["seq"], event["recorded_at"]
    todo = from_event(
        Todo, data, visibility=event["visibility"], created_seq=seq, created_at=at, monitor=monitor
    )
    todo.revision, todo.updated_at = seq, at  # `_touch`
    state.todos[todo.todo_id] = todo
    pred = state.todos.get(todo.predecessor or "")
    if pred is not None:
        pred.successor = todo.todo_id


def _todo_updated(state: GoalState, data: dict[str, Any], event: Event) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is None:
        return
    for name in ("title", "priority", "acceptance", "kind", "role"):
        if name in data:
            setattr(todo, name, data[name])
    if "depends_on" in data:
        todo.depends_on = list(data["depends_on"])
    _touch(todo, event)


def _todo_claimed(state: GoalState, data: dict[str, Any], event: Event) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is None:
        return
    todo.claim = {
        "agent_id": data["agent_id"],
        "session_id": data["session_id"],
        "claimed_at": event["recorded_at"],
        "heartbeat_at": event["recorded_at"],
        "lease_expires_at": data["lease_expires_at"],
    }
    if data.get("via_handoff"):
        todo.claim["via_handoff"] = data["via_handoff"]
    todo.status = "active"
    _touch(todo, event)


def _todo_renewed(state: GoalState, data: dict[str, Any], event: Event) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is None or todo.claim is None:
        return
    claim, at = todo.claim, event["recorded_at"]  # most events of a long goal: `_touch` inlined
    claim["heartbeat_at"] = at
    claim["lease_expires_at"] = data["lease_expires_at"]
    todo.revision = event["seq"]
    todo.updated_at = at


def _transition(status: str | None, *, clear_claim: bool) -> Handler:
    def handler(state: GoalState, data: dict[str, Any], event: Event) -> None:
        todo = state.todos.get(data["todo_id"])
        if todo is None:
            return
        if status is not None:
            todo.status = status
        elif todo.status == "blocked":  # unblock: back to active when still claimed
            todo.status = "active" if todo.claim else "open"
        if clear_claim:
            todo.claim = None
        todo.reason = data.get("reason")
        if status in ("cancelled",):
            todo.closed_at = event["recorded_at"]
        if status == "open":
            todo.closed_at = None
        _touch(todo, event)

    return handler


_reopen = _transition("open", clear_claim=True)


def _todo_reopened(state: GoalState, data: dict[str, Any], event: Event) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is not None and todo.status == "done":
        _changed(state, event, "todo", todo.todo_id, "reopened")
    _reopen(state, data, event)


def _todo_completed(state: GoalState, data: dict[str, Any], event: Event) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is None:
        return
    _changed(state, event, "todo", todo.todo_id, "done")
    todo.status = "done"
    todo.claim = None
    todo.summary = data.get("summary")
    todo.evidence_ids = list(data.get("evidence_ids", []))
    if data.get("successor"):
        todo.successor = data["successor"]
    todo.closed_at = event["recorded_at"]
    _touch(todo, event)


# -- gates, evidence, runs, notes ---------------------------------------------------------


def _gate_opened(state: GoalState, data: dict[str, Any], event: Event) -> None:
    seq, at = event["seq"], event["recorded_at"]
    gate = from_event(
        Gate, data, visibility=event["visibility"], created_seq=seq, opened_at=at, revision=seq
    )
    state.gates[gate.gate_id] = gate


def _gate_resolved(state: GoalState, data: dict[str, Any], event: Event) -> None:
    gate = state.gates.get(data["gate_id"])
    if gate is None:
        return
    gate.status = data["resolution"]
    gate.resolved_by = data["by"]
    gate.rationale = data.get("rationale")
    gate.resolved_at = event["recorded_at"]
    gate.revision = event["seq"]
    gate.ask_again_at = data.get("ask_again_at") if gate.status == "deferred" else None
    if not gate.is_blocking:
        _changed(state, event, "gate", gate.gate_id, gate.status)


def _evidence_added(state: GoalState, data: dict[str, Any], event: Event) -> None:
    item = from_event(
        Evidence,
        data,
        visibility=event["visibility"],
        created_seq=event["seq"],
        recorded_at=event["recorded_at"],
        agent_id=event["actor"]["agent_id"],
    )
    state.evidence[item.evidence_id] = item


def _run_recorded(state: GoalState, data: dict[str, Any], event: Event) -> None:
    run = from_event(
        Run,
        data,
        visibility=event["visibility"],
        created_seq=event["seq"],
        recorded_at=event["recorded_at"],
    )
    state.runs[run.run_id] = run
    state.quota_spent += run.quota_spent


def _note_added(state: GoalState, data: dict[str, Any], event: Event) -> None:
    note = from_event(
        Note,
        data,
        visibility=event["visibility"],
        created_seq=event["seq"],
        recorded_at=event["recorded_at"],
        agent_id=event["actor"]["agent_id"],
    )
    state.notes[note.note_id] = note


# -- the handlers, one per event type (the same types as `loopx.model.events.EVENT_MODELS`) --

HANDLERS: dict[str, Handler] = {
    "goal.created": _goal_created,
    "goal.closed": _goal_closed,
    "agent.registered": _agent_registered,
    "quota.set": _quota_set,
    "todo.added": _todo_added,
    "todo.updated": _todo_updated,
    "todo.claimed": _todo_claimed,
    "todo.renewed": _todo_renewed,
    "todo.released": _transition("open", clear_claim=True),
    "todo.blocked": _transition("blocked", clear_claim=False),
    "todo.unblocked": _transition(None, clear_claim=False),
    "todo.reopened": _todo_reopened,
    "todo.cancelled": _transition("cancelled", clear_claim=True),
    "todo.completed": _todo_completed,
    "gate.opened": _gate_opened,
    "gate.resolved": _gate_resolved,
    "evidence.added": _evidence_added,
    "run.recorded": _run_recorded,
    "note.added": _note_added,
    "monitor.observed": monitors.monitor_observed,
    "field.redacted": redactions.field_redacted,
    "finding.allowed": allowances.finding_allowed,
    "turn.begun": turns.turn_begun,
    "turn.phased": turns.turn_phased,
    "turn.settled": turns.turn_settled,
    "handoff.prepared": handoff.handoff_prepared,
    "handoff.adopted": handoff.handoff_adopted,
}
