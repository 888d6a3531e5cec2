"""Handoffs in the fold: a prepared continuation note, and its adoption; and the pure views
over them (the latest note of a todo, whether it is stale, why it may not be adopted).

`GoalState.handoffs` maps handoff id → a `Handoff` (loopx.state.entities). Preparing a note
touches its todo (the note's own event moves the todo's revision), so a note is stale exactly
when the todo's revision is no longer the note's `prepared_seq`.
"""

from __future__ import annotations

from typing import Any

from loopx.state.entities import GoalState, Handoff, Todo, from_event
from loopx.state.frontier import lease_live

PENDING, ADOPTED, SUPERSEDED = "pending", "adopted", "superseded"


def handoff_prepared(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    handoff_id, todo_id = data["handoff_id"], data["todo_id"]
    for earlier in state.handoffs.values():
        if earlier.todo_id == todo_id and earlier.status == PENDING:
            earlier.status = SUPERSEDED
            earlier.superseded_by = handoff_id
    state.handoffs[handoff_id] = from_event(
        Handoff,
        data,
        visibility=event["visibility"],
        prepared_seq=event["seq"],
        prepared_at=event["recorded_at"],
    )
    todo = state.todos.get(todo_id)
    if todo is not None:
        todo.revision = event["seq"]
        todo.updated_at = event["recorded_at"]


def handoff_adopted(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    handoff = state.handoffs.get(data["handoff_id"])
    if handoff is None:
        return
    handoff.status = ADOPTED
    handoff.adopted_seq = event["seq"]
    handoff.adopted_at = event["recorded_at"]
    handoff.grant = dict(data["grant"])
    handoff.adopted_git_revision = data.get("git_revision")


# -- derived views (pure) -----------------------------------------------------------------


def latest_handoff(state: GoalState, todo_id: str) -> Handoff | None:
    """The most recently prepared note for `todo_id`, whatever its status."""
    best: Handoff | None = None
    for handoff in state.handoffs.values():
        if handoff.todo_id == todo_id and (
            best is None or handoff.prepared_seq > best.prepared_seq
        ):
            best = handoff
    return best


def is_stale(state: GoalState, handoff: Handoff) -> bool:
    """True when the todo changed after a pending note was written (its own event aside)."""
    if handoff.status == ADOPTED:
        return False
    if handoff.status == SUPERSEDED:
        return True
    todo = state.todos.get(handoff.todo_id)
    return todo is None or todo.revision != handoff.prepared_seq


def adopt_refusal(
    state: GoalState, todo: Todo, handoff: Handoff | None, target: str | None, now: str
) -> tuple[str, str] | None:
    """Why `target` may not adopt `handoff` of `todo` now (code, message), or None if it may.

    Checked most specific first: a closed todo, no pending note, a third agent's live claim
    (which also moved the todo), a stale note, a note meant for another agent. The engine
    refuses with exactly this; the digest shows it so the reader knows before trying.
    """
    if not todo.is_open:
        return "todo_closed", f"todo is {todo.status}"
    if handoff is None:
        return "handoff_not_found", "no handoff note was prepared for this todo"
    if handoff.status == ADOPTED:
        return "handoff_not_found", "the latest handoff note was already adopted"
    claim = todo.claim
    if (
        claim is not None
        and lease_live(todo, now)
        and claim["agent_id"] not in (handoff.source_agent_id, target)
    ):
        return "claim_owner_mismatch", "a third agent holds the todo under a live lease"
    if is_stale(state, handoff):
        return "handoff_stale", "the todo changed after the note was written"
    wanted = handoff.target_agent_id
    if target is not None and wanted and wanted != target:
        return "handoff_target_mismatch", "the note names another target agent"
    return None
