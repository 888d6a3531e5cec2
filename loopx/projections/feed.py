"""The feed projection: public status changes of goals (goal closed, todo done, decision
made) as Atom entries, newest first. Each entry is a fact of the folded ledger with the time
the ledger recorded it; its id names the goal, the thing and that time, so the same change
keeps the same id in every build, and a todo reopened and done again is a new entry."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.state.entities import GoalState

FEED_LIMIT = 50


def _stamp(ts: str) -> str:
    return "".join(c for c in ts if c.isdigit())


def goal_entries(state: GoalState, lens: Lens, href: str) -> list[dict[str, Any]]:
    """The changes of one goal this audience may see; `href` is the goal page (relative to
    where the feed lives)."""
    title = lens.text(state.title)
    g = state.goal_id
    out: list[dict[str, Any]] = []
    if state.closed_at is not None:
        out.append(
            {
                "id": f"urn:loopx:{g}:goal:{state.status}:{_stamp(state.closed_at)}",
                "title": f"{title}: goal {state.status}",
                "updated": state.closed_at,
                "href": f"{href}index.html",
                "summary": f"The goal was closed as {state.status}.",
            }
        )
    for t in state.todos.values():
        if t.status == "done" and t.closed_at and lens.sees(t.visibility):
            out.append(
                {
                    "id": f"urn:loopx:{g}:todo:{t.todo_id}:done:{_stamp(t.closed_at)}",
                    "title": f"{title}: done: {lens.text(t.title)}",
                    "updated": t.closed_at,
                    "href": f"{href}todos/{t.todo_id}.html",
                    "summary": lens.text(t.summary) if t.summary is not None else "Done.",
                }
            )
    for gate in state.gates.values():
        if gate.resolved_at and not gate.is_blocking and lens.sees(gate.visibility):
            out.append(
                {
                    "id": f"urn:loopx:{g}:gate:{gate.gate_id}:{gate.status}:"
                    f"{_stamp(gate.resolved_at)}",
                    "title": f"{title}: decision {gate.status}: {lens.text(gate.question)}",
                    "updated": gate.resolved_at,
                    "href": f"{href}index.html",
                    "summary": f"The decision was {gate.status}.",
                }
            )
    return out


def feed(entries: list[dict[str, Any]], *, feed_id: str, title: str) -> dict[str, Any]:
    """The newest `FEED_LIMIT` entries; the feed is as new as its newest entry."""
    ordered = sorted(entries, key=lambda e: (e["updated"], e["id"]), reverse=True)[:FEED_LIMIT]
    return {
        "id": feed_id,
        "title": title,
        "updated": ordered[0]["updated"] if ordered else "1970-01-01T00:00:00Z",
        "entries": ordered,
    }
