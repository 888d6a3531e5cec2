"""Pieces every projection shares: the source block, todo cards, evidence items, and the
schema ids. All pure functions of folded state and a `Lens`."""

from __future__ import annotations

from typing import Any

from loopx import __version__
from loopx.privacy.audience import Lens
from loopx.state import views
from loopx.state.entities import Evidence, Gate, GoalState, Todo

GENERATOR = f"loopx {__version__}"
RECENT_EVIDENCE = 10


def source(state: GoalState) -> dict[str, Any]:
    """Where an artifact comes from: the goal, its ledger revision and head hash."""
    return {"goal_id": state.goal_id, "revision": state.revision, "head": state.head}


def header(
    schema: str, state: GoalState, lens: Lens, head: str | None, visible_goals: set[str]
) -> dict[str, Any]:
    """What every per-goal artifact starts with: its schema, generator, audience and source,
    the checkout it was built in, and the goal's identity."""
    return {
        "schema": schema,
        "generator": GENERATOR,
        "audience": lens.audience,
        "source": source(state),
        "checkout": {"head": head},
        "goal": goal_identity(state, lens, visible_goals),
    }


def ledger_now(state: GoalState) -> str:
    """Projections never read the clock: "now" is the time of the goal's last event."""
    return state.updated_at


def progress(state: GoalState) -> dict[str, Any]:
    """Counts over the full state, never a truncated list."""
    c = views.counts(state)
    live = c["total"] - c["cancelled"]
    c["percent_done"] = round(100 * c["done"] / live) if live else 0
    return c


def ordered_todos(state: GoalState) -> list[Todo]:
    return sorted(state.todos.values(), key=lambda t: t.created_seq)


def todo_card(todo: Todo, lens: Lens, state: GoalState, now: str | None = None) -> dict[str, Any]:
    """A todo as this audience may see it (`loopx.state.views.todo_card`). `now` decides
    whether a lease is live (default: the time of the goal's last event)."""
    return views.todo_card(
        todo,
        lens.text,
        state.todos,
        now or ledger_now(state),
        sees=lens.sees,
        team=not lens.is_public,
    )


def evidence_item(ev: Evidence, lens: Lens, head: str | None) -> dict[str, Any]:
    """An evidence item as this audience may see it (`loopx.state.views.evidence_card`)."""
    return views.evidence_card(ev, lens.text, head, team=not lens.is_public)


def recent_evidence(
    state: GoalState,
    lens: Lens,
    head: str | None,
    limit: int = RECENT_EVIDENCE,
    todo_id: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The newest evidence this audience may see (newest first; of one todo when given), and
    how many were cut. Evidence on a todo the audience may not see is left out and counted."""
    visible = lens.keep(
        sorted(state.evidence.values(), key=lambda e: -e.created_seq), "evidence items"
    )
    shown = [e for e in visible if e.todo_id is None or _todo_visible(state, lens, e.todo_id)]
    if len(shown) < len(visible):
        lens.omitted["evidence items on hidden todos"] += len(visible) - len(shown)
    if todo_id is not None:
        shown = [e for e in shown if e.todo_id == todo_id]
    return [evidence_item(e, lens, head) for e in shown[:limit]], max(len(shown) - limit, 0)


def _todo_visible(state: GoalState, lens: Lens, todo_id: str) -> bool:
    todo = state.todos.get(todo_id)
    return todo is not None and lens.sees(todo.visibility)


def gate_item(gate: Gate, lens: Lens, state: GoalState) -> dict[str, Any]:
    """A gate as this audience may see it (`loopx.state.views.gate_card`)."""
    return views.gate_card(gate, lens.text, state.todos, sees=lens.sees, team=not lens.is_public)


def goal_identity(state: GoalState, lens: Lens, visible_goals: set[str]) -> dict[str, Any]:
    """The goal's identity; a predecessor is named only when this audience can see it."""
    return {
        "goal_id": state.goal_id,
        "title": lens.text(state.title),
        "objective": lens.text(state.objective),
        "acceptance": [lens.text(a) for a in state.acceptance],
        "status": state.status,
        "repository": lens.field(state, "repository") or None,
        "predecessor": state.predecessor if state.predecessor in visible_goals else None,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "closed_at": state.closed_at,
    }
