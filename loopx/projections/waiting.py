"""What a goal waits for, as one audience may see it: its open monitors (what each watches,
its next wake, backoff and last observation), the undecided gates that ask again on a date,
and the next wake of either. Pure functions of folded state at the ledger's "now"."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.state.entities import Gate, GoalState, Todo
from loopx.state.monitors import waiting_monitor


def open_monitors(state: GoalState) -> list[Todo]:
    """Open (or blocked) monitors, soonest wake first."""
    found = [t for t in state.todos.values() if t.monitor is not None and t.is_open]
    return sorted(found, key=lambda t: (t.monitor["next_at"], t.created_seq))  # type: ignore[index]


def asking_gates(state: GoalState) -> list[Gate]:
    """Undecided gates with a time to ask their authority again, soonest first."""
    found = [g for g in state.gates.values() if g.is_blocking and g.ask_again_at]
    return sorted(found, key=lambda g: (g.ask_again_at, g.created_seq))


def monitor_item(todo: Todo, lens: Lens, now: str) -> dict[str, Any]:
    """One monitor: the watch's kind (its text only where the audience may read it), its
    next wake and whether that has come at `now`, its backoff and last observation."""
    m = todo.monitor or {}
    item: dict[str, Any] = {
        "todo_id": todo.todo_id,
        "title": lens.text(todo.title),
        "status": todo.status,
        "watch_kind": m["watch_kind"],
        "next_at": m["next_at"],
        "due": waiting_monitor(todo) and m["next_at"] <= now,
        "backoff": dict(m["backoff"]),
        "observations": m["observations"],
        "last_result": m["last_result"],
        "last_observed_at": m["last_observed_at"],
    }
    watch = lens.watch(m)
    if watch is not None:
        item["watch"] = watch
    return item


def monitors(state: GoalState, lens: Lens, now: str) -> dict[str, Any]:
    """The open monitors this audience may see (the others are counted with the todos), and
    how many of them are due."""
    items = [monitor_item(t, lens, now) for t in open_monitors(state) if lens.sees(t.visibility)]
    return {"due": sum(1 for i in items if i["due"]), "items": items}


def next_wake(state: GoalState, lens: Lens, now: str) -> dict[str, Any] | None:
    """When the next thing falls due after `now`: a monitor's wake or a gate's ask-again
    time, `{"at", "kind", "id"}`; the id is None when this audience may not see the thing."""
    wakes = [
        (t.monitor["next_at"], "monitor", t.todo_id, t.visibility)  # type: ignore[index]
        for t in open_monitors(state)
        if waiting_monitor(t) and t.monitor["next_at"] > now  # type: ignore[index]
    ]
    wakes += [
        (g.ask_again_at, "gate", g.gate_id, g.visibility)
        for g in asking_gates(state)
        if g.ask_again_at > now  # type: ignore[operator]
    ]
    if not wakes:
        return None
    at, kind, ident, visibility = min(wakes)
    return {"at": at, "kind": kind, "id": ident if lens.sees(visibility) else None}


def waiting_for(
    items: list[dict[str, Any]], state: GoalState, lens: Lens, now: str
) -> list[dict[str, Any]]:
    """The pages' "Waiting for" list, soonest first: the monitors of `items` (`monitors`'
    items) that wait for a wake, and the undecided gates this audience may see that ask again
    on a date, each with the time someone should look again."""
    out: list[dict[str, Any]] = []
    for m in items:
        if m["status"] == "blocked":
            continue
        last = f", last {m['last_result']}" if m["last_result"] else ""
        out.append(
            {
                "at": m["next_at"],
                "kind": "monitor",
                "id": m["todo_id"],
                "due": m["due"],
                "what": f"watching {m.get('watch', m['watch_kind'])}",
                "detail": f"{m['observations']} observation(s){last}",
            }
        )
    for g in asking_gates(state):
        if lens.sees(g.visibility):
            out.append(
                {
                    "at": g.ask_again_at,
                    "kind": "gate",
                    "id": g.gate_id,
                    "due": g.ask_again_at <= now,  # type: ignore[operator]
                    "what": "a decision",
                    "detail": "ask again",
                }
            )
    return sorted(out, key=lambda w: (w["at"], w["id"]))
