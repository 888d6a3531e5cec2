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
# The order of a goal's attention reasons: work that can proceed first (a gate that holds one
# todo must not hide agent work that is ready), then what needs a person (a pending decision,
# a ready user todo), then work under way or waiting on the world, then open work nothing can
# start.
REASON_RANK = ("ready_for_agent", "needs_user", "waiting", "blocked")


def attention(state: GoalState, now: str, ready: list[Todo] | None = None) -> dict[str, Any]:
    """What the goal needs next: every reason, ranked (`reasons`: each state with the count
    of todos, gates or runs behind it), and the first of them as the one `state`, with its
    `reason` and the facts behind it. `ready`: the frontier for no particular agent, when the
    caller has it already. The CLI, status.json and every page read this one computation."""
    if state.is_terminal:
        return {"state": "done", "reason": f"goal {state.status}", "reasons": [_count("done", 0)]}
    if ready is None:
        ready = frontier(state, now)
    work = _Work(state, ready, now)
    counts = {
        "ready_for_agent": len(work.agent_ready),
        "needs_user": len(work.pending) + len(work.user_ready),
        "waiting": len(work.active) + len(work.sleeping) + len(work.held) + work.runs_alone,
        "blocked": len(work.stuck),
    }
    reasons = [_count(name, counts[name]) for name in REASON_RANK if counts[name]]
    if not reasons:  # nothing open and no decision pending: close the goal or add work
        reasons = [_count("needs_user", 0)]
    return {**work.details(reasons[0]["state"]), "reasons": reasons}


def _count(name: str, n: int) -> dict[str, Any]:
    return {"state": name, "count": n}


class _Work:
    """A goal's open work, each open todo in one place: ready (for an agent or a person),
    claimed (`active`), a monitor not yet due (`sleeping`), waiting on something external
    a run of it reported (`held`), or nothing can start it (`stuck`); the pending decisions,
    and the waiting runs of no todo (`runs_alone`)."""

    def __init__(self, state: GoalState, ready: list[Todo], now: str):
        ready_ids = {t.todo_id for t in ready}
        self.agent_ready = [t.todo_id for t in ready if t.role == "agent"]
        self.user_ready = [t.todo_id for t in ready if t.role == "user"]
        self.pending = sorted(g.gate_id for g in state.gates.values() if g.status == "pending")
        waiting = [t for t in state.todos.values() if t.is_open and t.todo_id not in ready_ids]
        self.active = sorted(t.todo_id for t in waiting if t.status == "active")
        monitors = [  # a monitor that is due but not ready is held by something else
            t
            for t in waiting
            if t.monitor is not None and t.status == "open" and t.monitor["next_at"] > now
        ]
        self.sleeping = sorted(monitors, key=lambda t: (t.monitor["next_at"], t.created_seq))  # type: ignore[index]
        # A run that waits on something external: its todo, open and not ready, waits too (a
        # run of no todo counts itself, while some todo is open and not ready).
        runs = [r for r in state.runs.values() if r.outcome == "waiting"] if waiting else []
        placed = set(self.active) | {t.todo_id for t in monitors}
        self.held = sorted(
            {r.todo_id for r in runs if r.todo_id} & ({t.todo_id for t in waiting} - placed)
        )
        self.runs_alone = sum(1 for r in runs if r.todo_id is None)
        placed.update(self.held)
        self.stuck = [t.todo_id for t in waiting if t.todo_id not in placed]

    def details(self, first: str) -> dict[str, Any]:
        """The one state and the facts behind it."""
        if first == "ready_for_agent":
            return {"state": first, "reason": "work is ready", "todo_ids": self.agent_ready[:1]}
        if first == "needs_user":
            if not (self.pending or self.user_ready):
                reason = "no open todos: add work or close the goal"
            else:
                reason = "a decision or user action is pending"
            return {
                "state": first,
                "reason": reason,
                "gate_ids": self.pending,
                "todo_ids": self.user_ready,
            }
        if first == "blocked":
            return {"state": first, "reason": "open todos but none is ready"}
        out: dict[str, Any] = {"state": first}
        if self.active or self.held or self.runs_alone:
            out.update(
                reason="work is claimed or waiting on external evidence",
                todo_ids=sorted(self.active + self.held),
            )
        else:
            out.update(
                reason="waiting on monitors until their next wake",
                todo_ids=sorted(t.todo_id for t in self.sleeping),
            )
        if self.sleeping:
            first_wake = self.sleeping[0]
            out["next_wake"] = {"at": first_wake.monitor["next_at"], "todo_id": first_wake.todo_id}  # type: ignore[index]
        return out
