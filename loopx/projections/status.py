"""The status projection (`loopx.status/v1`): one goal at a glance for one audience."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import (
    GENERATOR,
    gate_item,
    goal_identity,
    ledger_now,
    ordered_todos,
    recent_evidence,
    source,
    todo_card,
)
from loopx.state.entities import GoalState
from loopx.state.frontier import attention, attention_reasons, frontier
from loopx.state.views import counts, quota_view

SCHEMA = "loopx.status/v1"
FRONTIER_LIMIT = 25
TODO_LIMIT = 500


def progress(state: GoalState) -> dict[str, Any]:
    """Counts over the full state, never a truncated list."""
    c = counts(state)
    live = c["total"] - c["cancelled"]
    c["percent_done"] = round(100 * c["done"] / live) if live else 0
    return c


def status(
    state: GoalState,
    lens: Lens,
    *,
    head: str | None,
    visible_goals: set[str],
    handoffs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    now = ledger_now(state)
    todos = lens.keep(ordered_todos(state), "todos")
    visible_ids = {t.todo_id for t in todos}
    full = frontier(state, now)  # once: attention needs the whole frontier, pages the visible
    ready = [t for t in full if t.todo_id in visible_ids]
    gates = lens.keep(sorted(state.gates.values(), key=lambda g: g.created_seq), "gates")
    evidence, evidence_cut = recent_evidence(state, lens, head)
    att = attention(state, now, full)
    shown_todos = todos[:TODO_LIMIT]
    quota = quota_view(state)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "audience": lens.audience,
        "source": source(state),
        "checkout": {"head": head},
        "goal": goal_identity(state, lens, visible_goals),
        "attention": {
            "state": att["state"],
            "reason": att["reason"],
            "reasons": attention_reasons(state, now, full),
        },
        "progress": progress(state),
        "frontier": [todo_card(t, lens, state) for t in ready[:FRONTIER_LIMIT]],
        "todos": [todo_card(t, lens, state) for t in shown_todos],
        "gates": {
            "pending": sum(1 for g in state.gates.values() if g.status == "pending"),
            "deferred": sum(1 for g in state.gates.values() if g.status == "deferred"),
            "resolved": sum(1 for g in state.gates.values() if not g.is_blocking),
            "items": [gate_item(g, lens, state) for g in gates],
        },
        "evidence": evidence,
        "quota": {**quota, "unit": lens.text(quota["unit"])},
        "handoffs": {
            "pending": len(handoffs or []),
            "items": [] if lens.is_public else list(handoffs or []),
        },
        "truncated": {
            "frontier": max(len(ready) - FRONTIER_LIMIT, 0),
            "todos": max(len(todos) - TODO_LIMIT, 0),
            "evidence": evidence_cut,
        },
    }
    if not lens.is_public:
        data["leases"] = [
            {
                "todo_id": t.todo_id,
                "agent_id": t.claim["agent_id"],
                "lease_expires_at": t.claim["lease_expires_at"],
                "live": t.claim["lease_expires_at"] > now,
            }
            for t in todos
            if t.claim is not None
        ]
        data["agents"] = sorted(state.agents)
    data["omissions"] = lens.omissions()
    return data
