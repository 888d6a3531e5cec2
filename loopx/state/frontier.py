"""Derived views over folded state: the frontier (ready queue), why a todo is not ready,
and the goal's attention state. Pure functions; `now` is passed in, never read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopx.state.entities import GoalState, Todo


@dataclass
class Readiness:
    todo_id: str
    ready: bool
    reasons: list[dict[str, Any]] = field(default_factory=list)


def lease_live(todo: Todo, now: str) -> bool:
    return todo.claim is not None and todo.claim["lease_expires_at"] > now


def blocking_gates(state: GoalState) -> tuple[dict[str, list[str]], list[str]]:
    """Map todo id → ids of gates that hold it back, and the gates that hold the whole goal."""
    per_todo: dict[str, list[str]] = {}
    goal_wide: list[str] = []
    for gate in state.gates.values():
        if not gate.is_blocking:
            continue
        if gate.blocks_goal:
            goal_wide.append(gate.gate_id)
        for todo_id in gate.blocks:
            per_todo.setdefault(todo_id, []).append(gate.gate_id)
    return per_todo, goal_wide


def readiness_of(
    state: GoalState,
    todo: Todo,
    now: str,
    agent_id: str | None = None,
    gates: tuple[dict[str, list[str]], list[str]] | None = None,
) -> Readiness:
    """Whether one todo is ready for `agent_id` and, if not, every reason why, in a fixed
    order (goal_terminal, todo_blocked, dependency_open, dependency_missing, gate_pending,
    claimed, monitor_not_due). `gates`: `blocking_gates(state)`, when the caller has it already."""
    per_todo, goal_wide = gates if gates is not None else blocking_gates(state)
    todos = state.todos
    reasons: list[dict[str, Any]] = []
    if state.is_terminal:
        reasons.append({"code": "goal_terminal", "status": state.status})
    if todo.status == "blocked":
        reasons.append({"code": "todo_blocked"})
    open_deps = [d for d in todo.depends_on if d in todos and todos[d].status != "done"]
    missing = [d for d in todo.depends_on if d not in todos]
    if open_deps:
        reasons.append({"code": "dependency_open", "todo_ids": sorted(open_deps)})
    if missing:
        reasons.append({"code": "dependency_missing", "todo_ids": sorted(missing)})
    held_by = sorted(per_todo.get(todo.todo_id, []) + goal_wide)
    if held_by:
        reasons.append({"code": "gate_pending", "gate_ids": held_by})
    if lease_live(todo, now) and todo.claim and todo.claim["agent_id"] != agent_id:
        reasons.append(
            {
                "code": "claimed",
                "agent_id": todo.claim["agent_id"],
                "lease_expires_at": todo.claim["lease_expires_at"],
            }
        )
    if todo.monitor is not None and todo.monitor["next_at"] > now:
        reasons.append({"code": "monitor_not_due", "next_at": todo.monitor["next_at"]})
    return Readiness(todo.todo_id, not reasons, reasons)


def readiness(state: GoalState, now: str, agent_id: str | None = None) -> list[Readiness]:
    """Every open todo with whether it is ready for `agent_id` and, if not, why."""
    gates = blocking_gates(state)
    return [
        readiness_of(state, todo, now, agent_id, gates)
        for todo in state.todos.values()
        if todo.is_open
    ]


def _order(todo: Todo) -> tuple[int, int]:
    return (todo.priority, todo.created_seq)


def frontier(
    state: GoalState,
    now: str,
    agent_id: str | None = None,
    role: str | None = None,
    checked: list[Readiness] | None = None,
) -> list[Todo]:
    """Ready todos, highest priority first, then oldest first (`checked`: the goal's
    `readiness(state, now, agent_id)`, when the caller has it already)."""
    todos = state.todos
    if checked is None:
        checked = readiness(state, now, agent_id)
    ready = [todos[r.todo_id] for r in checked if r.ready]
    if role is not None:
        ready = [t for t in ready if t.role == role]
    return sorted(ready, key=_order)


ATTENTION_STATES = ("needs_user", "ready_for_agent", "waiting", "blocked", "done")


def attention(state: GoalState, now: str, ready: list[Todo] | None = None) -> dict[str, Any]:
    """What the goal needs next, as one state with the facts behind it (`ready`: the
    frontier for no particular agent, when the caller has it already)."""
    if state.is_terminal:
        return {"state": "done", "reason": f"goal {state.status}"}
    if ready is None:
        ready = frontier(state, now)
    pending = sorted(
        g.gate_id for g in state.gates.values() if g.status == "pending" or _ask_due(g, now)
    )
    user_ready = [t.todo_id for t in ready if t.role == "user"]
    if pending or user_ready:
        return {
            "state": "needs_user",
            "reason": "a decision or user action is pending",
            "gate_ids": pending,
            "todo_ids": user_ready,
        }
    agent_ready = [t.todo_id for t in ready if t.role == "agent"]
    if agent_ready:
        return {"state": "ready_for_agent", "reason": "work is ready", "todo_ids": agent_ready[:1]}
    wakes = waking(state, now)
    if wakes:
        # Every open todo waits for the world to come back by itself: a monitor's next wake,
        # a deferred decision's ask-again time, or dependencies that wait so.
        at, kind, ident = min(wakes.values())
        return {
            "state": "waiting",
            "reason": "waiting until the next wake of a monitor or a deferred decision",
            "todo_ids": sorted(wakes),
            "next_wake": {"at": at, ("todo_id" if kind == "monitor" else "gate_id"): ident},
        }
    active = sorted(t.todo_id for t in state.todos.values() if t.status == "active")
    waiting_runs = sorted(r.run_id for r in state.runs.values() if r.outcome == "waiting")
    if active or (waiting_runs and any(t.is_open for t in state.todos.values())):
        return {
            "state": "waiting",
            "reason": "work is claimed or waiting on external evidence",
            "todo_ids": active,
        }
    if any(t.is_open for t in state.todos.values()):
        return {"state": "blocked", "reason": "open todos but none is ready"}
    # An active goal with nothing open is not done until someone closes it (or adds work).
    return {
        "state": "needs_user",
        "reason": "no open todos: add work or close the goal",
        "gate_ids": [],
        "todo_ids": [],
    }


def _ask_due(gate: Any, now: str) -> bool:
    """A deferred gate whose ask-again time has come: its authority is to be asked again."""
    return gate.status == "deferred" and bool(gate.ask_again_at) and gate.ask_again_at <= now


Wake = tuple[str, str, str]  # (at, "monitor" | "gate", todo or gate id)


def waking(state: GoalState, now: str) -> dict[str, Wake]:
    """When every open todo that is not ready waits for something that comes back by itself
    — its monitor's next wake, the ask-again time of every deferred gate holding it, or open
    dependencies that wait so — each one's earliest wake, by todo id; else {} (some open
    todo waits for nothing that will come by itself: it is blocked, or claimed work)."""
    if not _may_wake(state):
        return {}
    waiting = [r for r in readiness(state, now) if not r.ready]
    wakes = wakes_of(state, now, waiting)
    return wakes if waiting and len(wakes) == len(waiting) else {}


def _may_wake(state: GoalState) -> bool:
    """Whether anything of the goal has a wake at all (most goals: no, at once)."""
    return any(g.ask_again_at for g in state.gates.values()) or any(
        t.monitor is not None for t in state.todos.values()
    )


def wakes_of(state: GoalState, now: str, waiting: list[Readiness]) -> dict[str, Wake]:
    """Of the todos that are not ready (`waiting`), those that wait for something that comes
    back by itself, with their earliest wake (see `waking`)."""
    wakes: dict[str, Wake] = {}
    changed = True
    while changed:  # dependencies that wait are found in as many rounds as the chain is long
        changed = False
        for r in waiting:
            if r.todo_id not in wakes:
                found = _wake(state, r, now, wakes)
                if found is not None:
                    wakes[r.todo_id] = found
                    changed = True
    return wakes


def _wake(state: GoalState, r: Readiness, now: str, wakes: dict[str, Wake]) -> Wake | None:
    """The earliest wake of one todo that is not ready, or None when one of its reasons will
    not pass by itself."""
    todo = state.todos[r.todo_id]
    times: list[Wake] = []
    for reason in r.reasons:
        code = reason["code"]
        if code == "monitor_not_due":
            times.append((reason["next_at"], "monitor", r.todo_id))
        elif code == "claimed" and todo.monitor is not None:
            continue  # a monitor someone holds still wakes at its time
        elif code == "gate_pending":
            for gate_id in reason["gate_ids"]:
                gate = state.gates[gate_id]
                if gate.status != "deferred" or not gate.ask_again_at or gate.ask_again_at <= now:
                    return None
                times.append((gate.ask_again_at, "gate", gate_id))
        elif code == "dependency_open" and all(d in wakes for d in reason["todo_ids"]):
            times += [wakes[d] for d in reason["todo_ids"]]
        else:
            return None
    return min(times) if times else None


REASON_RANK = ("ready_for_agent", "needs_user", "waiting", "blocked")


def attention_reasons(
    state: GoalState, now: str, ready: list[Todo] | None = None
) -> list[dict[str, Any]]:
    """Every reason a goal needs attention, ranked: work that can proceed first (a gate that
    holds one todo must not hide agent work that is ready), then what needs a person (a
    pending decision or one to ask again, a ready user todo), then claimed work and work
    waiting for a wake (`wakes_of`), then open work nothing can start. Each reason counts
    the todos (or gates) behind it."""
    if state.is_terminal:
        return [{"state": "done", "count": 0}]
    if ready is None:
        ready = frontier(state, now)
    ready_ids = {t.todo_id for t in ready}
    # Open work that waits for a monitor's wake or a decision's ask-again time is not stuck.
    todos = state.todos
    sleeping = 0
    if _may_wake(state):
        not_ready = [r for r in readiness(state, now) if not r.ready]
        sleeping = sum(1 for t in wakes_of(state, now, not_ready) if todos[t].status == "open")
    counts = {
        "ready_for_agent": sum(1 for t in ready if t.role == "agent"),
        "needs_user": sum(
            1 for g in state.gates.values() if g.status == "pending" or _ask_due(g, now)
        )
        + sum(1 for t in ready if t.role == "user"),
        "waiting": sum(1 for t in state.todos.values() if t.status == "active") + sleeping,
        "blocked": sum(
            1
            for t in state.todos.values()
            if t.status in ("open", "blocked") and t.todo_id not in ready_ids
        )
        - sleeping,
    }
    out = [{"state": name, "count": counts[name]} for name in REASON_RANK if counts[name]]
    if not any(t.is_open for t in state.todos.values()) and not counts["needs_user"]:
        out.append({"state": "needs_user", "count": 0})  # nothing open: close it or add work
    return out
