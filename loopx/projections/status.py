"""The status projection (`loopx.status/v2`): one goal at a glance for one audience.

v2 adds what the goal waits for: `attention.next_wake`, `monitors`, `waiting_for` and each
gate's `ask_again_at`. `loopx.projections.status_upgrade` reads a v1 document as v2."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections import waiting
from loopx.projections.base import (
    gate_item,
    header,
    ledger_now,
    ordered_todos,
    progress,
    recent_evidence,
    todo_card,
)
from loopx.state.entities import Gate, GoalState
from loopx.state.frontier import attention, frontier
from loopx.state.views import claim_view, quota_view

SCHEMA = "loopx.status/v2"
FRONTIER_LIMIT = 25
TODO_LIMIT = 500


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
    evidence, evidence_cut = recent_evidence(state, lens, head)
    att = attention(state, now, full)
    quota = quota_view(state)
    monitors = waiting.monitors(state, lens, now)
    data: dict[str, Any] = {
        **header(SCHEMA, state, lens, head, visible_goals),
        "attention": {
            "state": att["state"],
            "reason": att["reason"],
            "reasons": att["reasons"],
            "next_wake": waiting.next_wake(state, lens, now),
        },
        "progress": progress(state),
        "frontier": [todo_card(t, lens, state) for t in ready[:FRONTIER_LIMIT]],
        "todos": [todo_card(t, lens, state) for t in todos[:TODO_LIMIT]],
        "gates": _gates(state, lens),
        "monitors": monitors,
        "waiting_for": waiting.waiting_for(monitors["items"], state, lens, now),
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
        data["leases"] = [claim_view(t, now) for t in todos if t.claim is not None]
        data["agents"] = sorted(state.agents)
    data["omissions"] = lens.omissions()
    return data


def _gates(state: GoalState, lens: Lens) -> dict[str, Any]:
    """Gate counts over the full state; the gates this audience may see."""
    every: list[Gate] = sorted(state.gates.values(), key=lambda g: g.created_seq)
    return {
        "pending": sum(1 for g in every if g.status == "pending"),
        "deferred": sum(1 for g in every if g.status == "deferred"),
        "resolved": sum(1 for g in every if not g.is_blocking),
        "items": [
            {**gate_item(g, lens, state), "ask_again_at": g.ask_again_at if g.is_blocking else None}
            for g in lens.keep(every, "gates")
        ],
    }
