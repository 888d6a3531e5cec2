"""Derived views over folded state: the frontier (ready queue), why a todo is not ready,
and the goal's attention state. Pure functions; `now` is passed in, never read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopx.model.records import Mutable
from loopx.state.entities import GoalState, Todo


@dataclass(repr=False, eq=False)
class Readiness(Mutable):
    """Whether a todo is ready for an agent, and each reason it waits when not."""

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
        "waiting": len(work.active)
        + len(work.sleeping)
        + len(work.deferred)
        + len(work.held)
        + work.runs_alone,
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
    claimed (`active`), a monitor not yet due (`sleeping`), held only by decisions deferred
    to an ask-again time or by work that waits so (`deferred`), waiting on something
    external a run of it reported (`held`), or nothing can start it (`stuck`); the pending
    decisions (and deferred ones whose ask-again time has come), and the waiting runs of no
    todo (`runs_alone`)."""

    def __init__(self, state: GoalState, ready: list[Todo], now: str):
        ready_ids = {t.todo_id for t in ready}
        self.agent_ready = [t.todo_id for t in ready if t.role == "agent"]
        self.user_ready = [t.todo_id for t in ready if t.role == "user"]
        self.pending = sorted(
            g.gate_id for g in state.gates.values() if g.status == "pending" or _ask_due(g, now)
        )
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
        self.wakes = wakes_of(state, now, waiting) if _may_wake(state) else {}
        self.deferred = sorted(self.wakes.keys() - placed)
        placed.update(self.deferred)
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
        elif self.deferred:
            out.update(
                reason="waiting until the next wake of a monitor or a deferred decision",
                todo_ids=sorted([t.todo_id for t in self.sleeping] + self.deferred),
            )
        else:
            out.update(
                reason="waiting on monitors until their next wake",
                todo_ids=sorted(t.todo_id for t in self.sleeping),
            )
        wakes = [
            self.wakes.get(t.todo_id, (t.monitor["next_at"], "monitor", t.todo_id))  # type: ignore[index]
            for t in self.sleeping
        ] + [self.wakes[t] for t in self.deferred]
        if wakes:
            at, kind, ident = min(wakes)
            out["next_wake"] = {"at": at, ("todo_id" if kind == "monitor" else "gate_id"): ident}
        return out


def _ask_due(gate: Any, now: str) -> bool:
    """A deferred gate whose ask-again time has come: its authority is to be asked again."""
    return gate.status == "deferred" and bool(gate.ask_again_at) and gate.ask_again_at <= now


def _may_wake(state: GoalState) -> bool:
    """Whether anything of the goal has a wake at all (most goals: no, at once)."""
    return any(g.ask_again_at for g in state.gates.values()) or any(
        t.monitor is not None for t in state.todos.values()
    )


Wake = tuple[str, str, str]  # (at, "monitor" | "gate", todo or gate id)


def wakes_of(state: GoalState, now: str, todos: list[Todo]) -> dict[str, Wake]:
    """Of open `todos` that are not ready, those that wait only for things that come back by
    themselves — a monitor's next wake, the ask-again time of each deferred gate holding it,
    open dependencies that wait so — with each one's earliest wake, by todo id. Each todo is
    judged once, after the dependencies it waits for (a cycle never wakes by itself)."""
    gates = blocking_gates(state)
    checked = {t.todo_id: readiness_of(state, t, now, None, gates) for t in todos}
    waits_for: dict[str, set[str]] = {}
    dependents: dict[str, list[str]] = {}
    for todo_id, r in checked.items():
        deps = {d for x in r.reasons if x["code"] == "dependency_open" for d in x["todo_ids"]}
        waits_for[todo_id] = deps & checked.keys()
        for d in waits_for[todo_id]:
            dependents.setdefault(d, []).append(todo_id)
    queue = [t for t, deps in waits_for.items() if not deps]
    wakes: dict[str, Wake] = {}
    while queue:
        todo_id = queue.pop()
        found = _wake(state, checked[todo_id], now, wakes)
        if found is not None:
            wakes[todo_id] = found
        for later in dependents.get(todo_id, ()):
            waits_for[later].discard(todo_id)
            if not waits_for[later]:
                queue.append(later)
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
