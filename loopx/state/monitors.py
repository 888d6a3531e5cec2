"""Monitors in the fold: a todo that watches an external fact, its next wake and the record
of its observations; and the pure views over them (what is due at `now`, the next wake).

The fold never reads the clock: every next wake is computed by the engine (from the injected
clock and the backoff) and carried in the event.
"""

from __future__ import annotations

from typing import Any

from loopx.state.entities import GoalState, Todo


def new_record(spec: dict[str, Any]) -> dict[str, Any]:
    """The folded monitor of a `todo.added` event's `monitor` spec."""
    return {
        "watch": spec["watch"],
        "watch_kind": spec["watch_kind"],
        "backoff": dict(spec["backoff"]),
        "next_at": spec["next_at"],
        "observations": 0,
        "streak": 0,  # observations since the last change that found nothing new
        "last_result": None,
        "last_observed_at": None,
        "last_evidence_id": None,
    }


def monitor_observed(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    todo = state.todos.get(data["todo_id"])
    if todo is None or todo.monitor is None:
        return
    record = todo.monitor
    record["observations"] += 1
    record["streak"] = 0 if data["result"] == "changed" else record["streak"] + 1
    record["last_result"] = data["result"]
    record["last_observed_at"] = event["recorded_at"]
    record["last_evidence_id"] = data["evidence_id"]
    if data.get("next_at"):
        record["next_at"] = data["next_at"]
    if data.get("transition"):
        record["transition"] = data["transition"]
    todo.revision = event["seq"]
    todo.updated_at = event["recorded_at"]


def waiting_monitor(todo: Todo) -> bool:
    """An open (not blocked) monitor: the kind of open work that waits for its next wake."""
    return todo.monitor is not None and todo.status in ("open", "active")


def is_due(todo: Todo, now: str) -> bool:
    return waiting_monitor(todo) and todo.monitor["next_at"] <= now  # type: ignore[index]


def due(state: GoalState, now: str) -> list[Todo]:
    """Open monitors whose next wake has come, earliest first."""
    found = [t for t in state.todos.values() if is_due(t, now)]
    return sorted(found, key=lambda t: (t.monitor["next_at"], t.created_seq))  # type: ignore[index]


def next_wake(state: GoalState, now: str) -> Todo | None:
    """The open monitor that falls due next after `now` (None: nothing is waiting)."""
    later = [t for t in state.todos.values() if waiting_monitor(t) and not is_due(t, now)]
    return min(later, key=lambda t: (t.monitor["next_at"], t.created_seq), default=None)  # type: ignore[index]
