"""Plain-dict views of folded state for the CLI and the Python API (the operator's view).

`text` turns a stored text value (a string or a private blob reference) into display text;
the caller decides how (the CLI: the private audience's `Lens`, reading this host's blob
store). `todo_card` is the one todo shape: the projections' cards and the CLI's views alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopx.state.entities import Evidence, Gate, GoalState, Run, Todo, private_ref
from loopx.state.frontier import attention, frontier, lease_live, readiness
from loopx.state.monitors import due, next_wake, waiting_monitor
from loopx.state.turns import RESUME_ADVICE, open_turns

TextFn = Callable[[Any], Any]


def freshness(revision: str | None, head: str | None) -> str:
    """`current` when bound to the checkout's HEAD, `historical` when to another commit,
    `bound` when bound to a commit but no checkout was given to compare with (committed
    artifacts: they name the commit, and currency is for live views), `unbound` without one."""
    if not revision:
        return "unbound"
    if not head:
        return "bound"
    if head and (head.startswith(revision) or revision.startswith(head)):
        return "current"
    return "historical"


def todo_card(
    todo: Todo,
    text: TextFn,
    todos: dict[str, Todo],
    now: str | None,
    *,
    sees: Callable[[str], bool] | None = None,
    team: bool = True,
) -> dict[str, Any]:
    """A todo as one reader sees it: the one todo shape of every view. `sees` says which
    visibilities the reader may see (None: all, and dependencies are named as written); the
    others' dependencies are counted, never named. `team` adds the claim (live at `now`,
    when given), the acceptance and the reason."""
    deps = _named(todo.depends_on, todos, sees)
    card: dict[str, Any] = {
        "todo_id": todo.todo_id,
        "title": text(todo.title),
        "status": todo.status,
        "role": todo.role,
        "kind": todo.kind,
        "priority": todo.priority,
        "depends_on": deps,
        "hidden_dependencies": len(todo.depends_on) - len(deps),
        "visibility": todo.visibility,
    }
    if team:
        if todo.claim is not None:
            card["claim"] = claim_view(todo, now, keys=("agent_id", "session_id"))
        for name in ("acceptance", "reason"):
            value = getattr(todo, name)
            if value is not None:
                card[name] = text(value)
    return card


def _named(ids: list[str], todos: dict[str, Todo], sees: Callable[[str], bool] | None) -> list[str]:
    """The todo ids a reader may see named (`sees` None: all, as written)."""
    if sees is None:
        return list(ids)
    return [i for i in ids if i in todos and sees(todos[i].visibility)]


def claim_view(
    todo: Todo, now: str | None, keys: tuple[str, ...] = ("todo_id", "agent_id")
) -> dict[str, Any]:
    """A claimed todo's lease: `keys` (of the todo's id and its claim), when it expires, and
    whether it is live at `now` (when given)."""
    claim = todo.claim or {}
    out = {k: todo.todo_id if k == "todo_id" else claim[k] for k in keys}
    out["lease_expires_at"] = claim["lease_expires_at"]
    if now is not None:
        out["live"] = lease_live(todo, now)
    return out


def todo_view(todo: Todo, text: TextFn, now: str | None = None) -> dict[str, Any]:
    """The operator's view of a todo: its card, with everything the ledger knows of it."""
    out = todo_card(todo, text, {}, now)
    out.update(revision=todo.revision, created_at=todo.created_at, updated_at=todo.updated_at)
    if todo.claim:
        out["claim"] = {**todo.claim, **out["claim"]}
    if todo.summary is not None:
        out["summary"] = text(todo.summary)
    for name in ("predecessor", "successor", "closed_at"):
        value = getattr(todo, name)
        if value:
            out[name] = value
    if todo.evidence_ids:
        out["evidence_ids"] = todo.evidence_ids
    if todo.monitor is not None:
        out["monitor"] = monitor_view(todo, text, now)
    return out


def monitor_view(todo: Todo, text: TextFn, now: str | None = None) -> dict[str, Any]:
    """A monitor's watch, backoff, next wake and last observation (`due` when `now` is given)."""
    record = todo.monitor or {}
    out = {
        "watch": text(record["watch"]),
        "watch_kind": record["watch_kind"],
        "backoff": record["backoff"],
        "next_at": record["next_at"],
        "observations": record["observations"],
        "last_result": record["last_result"],
        "last_observed_at": record["last_observed_at"],
        "last_evidence_id": record["last_evidence_id"],
    }
    if now is not None:
        out["due"] = waiting_monitor(todo) and record["next_at"] <= now
    return out


def _seconds_between(earlier: str, later: str) -> int:
    from loopx.model.times import parse_utc

    try:
        gap = parse_utc(later) - parse_utc(earlier)
    except ValueError:
        return 0
    return max(int(gap.total_seconds()), 0)


def turn_view(turn: dict[str, Any], now: str, text: TextFn) -> dict[str, Any]:
    """A turn journal entry: its phases, the last one's age at `now`, and, while it is open,
    what the next executor must re-inspect before continuing."""
    out = {
        key: turn[key]
        for key in ("turn_id", "todo_id", "agent_id", "session_id", "status", "phase", "run_id")
    }
    out["begun_at"], out["updated_at"] = turn["begun_at"], turn["updated_at"]
    out["phases"] = [
        {**p, "ref": text(p["ref"])} if p.get("ref") is not None else dict(p)
        for p in turn["phases"]
    ]
    out["age_seconds"] = _seconds_between(turn["updated_at"], now)
    if turn["status"] == "open":
        out["resume"] = RESUME_ADVICE.get(turn["phase"], "")
    return out


def wake_view(state: GoalState, now: str, text: TextFn) -> dict[str, Any]:
    """What of one goal is due at `now` (monitors to observe) and when the next thing is."""
    upcoming = next_wake(state, now)
    wakes = (
        []
        if upcoming is None
        else [
            {"at": upcoming.monitor["next_at"], "todo_id": upcoming.todo_id}  # type: ignore[index]
        ]
    )
    asking = sorted(
        (g for g in state.gates.values() if g.is_blocking and g.ask_again_at),
        key=lambda g: (g.ask_again_at, g.created_seq),
    )
    wakes += [
        {"at": g.ask_again_at, "gate_id": g.gate_id}
        for g in asking
        if g.ask_again_at > now  # type: ignore[operator]
    ][:1]
    return {
        "goal_id": state.goal_id,
        "due": [
            {"todo_id": t.todo_id, "title": text(t.title), **monitor_view(t, text, now)}
            for t in due(state, now)
        ],
        # Decisions to ask for again: undecided gates whose ask-again time has come.
        "gates_due": [
            {
                "gate_id": g.gate_id,
                "question": text(g.question),
                "authority": g.authority,
                "ask_again_at": g.ask_again_at,
            }
            for g in asking
            if g.ask_again_at <= now  # type: ignore[operator]
        ],
        "next_wake": min(wakes, key=lambda w: w["at"], default=None),
    }


def gate_card(
    gate: Gate,
    text: TextFn,
    todos: dict[str, Todo],
    *,
    sees: Callable[[str], bool] | None = None,
    team: bool = True,
) -> dict[str, Any]:
    """A gate as one reader sees it: the one gate shape of every view (`sees` and `team` as
    for `todo_card`: the todos it blocks that the reader may not see are counted)."""
    blocks = _named(gate.blocks, todos, sees)
    card: dict[str, Any] = {
        "gate_id": gate.gate_id,
        "question": text(gate.question),
        "status": gate.status,
        "blocks_goal": gate.blocks_goal,
        "blocks": blocks,
        "hidden_blocks": len(gate.blocks) - len(blocks),
        "opened_at": gate.opened_at,
    }
    if team:
        card["authority"] = gate.authority
        card["resolved_by"] = gate.resolved_by
        card["rationale"] = None if gate.rationale is None else text(gate.rationale)
    return card


def gate_view(gate: Gate, text: TextFn) -> dict[str, Any]:
    """The operator's view of a gate: its card, with its revision and times."""
    out = gate_card(gate, text, {})
    out.update(visibility=gate.visibility, revision=gate.revision)
    if gate.resolved_by:
        out["resolved_at"] = gate.resolved_at
    if gate.ask_again_at and gate.is_blocking:
        out["ask_again_at"] = gate.ask_again_at
    return out


def evidence_card(
    ev: Evidence, text: TextFn, head: str | None, *, team: bool = True
) -> dict[str, Any]:
    """An evidence item as one reader sees it, its freshness against the checkout's `head`:
    the one evidence shape of every view; `team` adds who recorded it and whether it has a
    body."""
    card: dict[str, Any] = {
        "evidence_id": ev.evidence_id,
        "kind": ev.kind,
        "summary": text(ev.summary),
        "refs": [text(r) for r in ev.refs],
        "revision": ev.revision,
        "freshness": freshness(ev.revision, head),
        "recorded_at": ev.recorded_at,
        "todo_id": ev.todo_id,
    }
    if team:
        card["agent_id"] = ev.agent_id
        card["has_body"] = ev.body is not None
    return card


def evidence_view(ev: Evidence, text: TextFn, head: str | None = None) -> dict[str, Any]:
    """The operator's view of an evidence item: its card, its visibility and body reference."""
    out = evidence_card(ev, text, head)
    out["visibility"] = ev.visibility
    if ev.body:
        out["body"] = private_ref(ev.body)
        out["body_bytes"] = ev.body_bytes
    return out


def run_view(run: Run, text: TextFn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "session_id": run.session_id,
        "todo_id": run.todo_id,
        "outcome": run.outcome,
        "evidence_ids": run.evidence_ids,
        "quota_spent": run.quota_spent,
        "recorded_at": run.recorded_at,
        "visibility": run.visibility,
    }
    for name in ("summary", "wait"):
        value = getattr(run, name)
        if value is not None:
            out[name] = text(value)
    if run.successor:
        out["successor"] = run.successor
    return out


def counts(state: GoalState) -> dict[str, int]:
    """Todo counts by status, over the full state (never a truncated list)."""
    out = {"open": 0, "active": 0, "blocked": 0, "done": 0, "cancelled": 0}
    for todo in state.todos.values():
        out[todo.status] += 1
    out["total"] = len(state.todos)
    return out


def quota_view(state: GoalState) -> dict[str, Any]:
    budget = state.policy.get("quota")
    return {
        "budget": budget,
        "spent": state.quota_spent,
        "unit": state.policy.get("quota_unit", "runs"),
        "remaining": None if budget is None else max(budget - state.quota_spent, 0),
        "exhausted": budget is not None and state.quota_spent >= budget,
    }


def goal_view(state: GoalState, text: TextFn) -> dict[str, Any]:
    return {
        "goal_id": state.goal_id,
        "title": text(state.title),
        "objective": text(state.objective),
        "acceptance": [text(a) for a in state.acceptance],
        "repository": state.repository,
        "predecessor": state.predecessor,
        "visibility": state.visibility,
        "status": state.status,
        "revision": state.revision,
        "head": state.head,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "closed_at": state.closed_at,
        "policy": state.policy,
        "agents": sorted(state.agents),
    }


def status_view(state: GoalState, now: str, text: TextFn, *, limit: int = 20) -> dict[str, Any]:
    """Everything `loopx status` shows for one goal."""
    ready = frontier(state, now)
    pending = sorted(
        (g for g in state.gates.values() if g.is_blocking), key=lambda g: g.created_seq
    )
    leases = sorted(
        (t for t in state.todos.values() if t.claim),
        key=lambda t: t.claim["lease_expires_at"],  # type: ignore[index]
    )
    return {
        "goal_id": state.goal_id,
        "title": text(state.title),
        "status": state.status,
        "revision": state.revision,
        "attention": attention(state, now, ready),
        "counts": counts(state),
        "frontier": [todo_view(t, text, now) for t in ready[:limit]],
        "frontier_total": len(ready),
        "gates": [gate_view(g, text) for g in pending],
        "leases": [claim_view(t, now, ("todo_id", "agent_id", "session_id")) for t in leases],
        "quota": quota_view(state),
        "monitors": {k: v for k, v in wake_view(state, now, text).items() if k != "goal_id"},
        "open_turns": [turn_view(t, now, text) for t in open_turns(state)],
    }


def next_view(
    state: GoalState,
    now: str,
    text: TextFn,
    agent_id: str | None,
    explain: bool,
    limit: int = 20,
) -> dict[str, Any]:
    role = "agent" if agent_id else None
    checked = readiness(state, now, agent_id)  # once: the frontier and its explanation
    everyone = frontier(state, now, agent_id, checked=checked)
    ready = everyone if role is None else [t for t in everyone if t.role == role]
    out: dict[str, Any] = {
        "goal_id": state.goal_id,
        "agent_id": agent_id,
        "frontier": [todo_view(t, text, now) for t in ready[:limit]],
        "frontier_total": len(ready),
    }
    if explain:
        todos = state.todos
        waiting = [r for r in checked if not r.ready]
        waiting.sort(key=lambda r: (todos[r.todo_id].priority, todos[r.todo_id].created_seq))
        out["not_ready"] = [
            {"todo_id": r.todo_id, "title": text(todos[r.todo_id].title), "reasons": r.reasons}
            for r in waiting
        ]
        if role:
            out["other_roles"] = [t.todo_id for t in everyone if t.role != role]
    return out
