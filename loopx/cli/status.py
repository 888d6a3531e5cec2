"""`loopx status` and `loopx next`: the reads agents make on every turn, without click.

Their options are declared in `loopx.cli.status_cmd` (click) and parsed again, in the exact
forms agents use, by `loopx.cli.quick`; both call `show_status` and `show_next`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopx.cli.output import emit
from loopx.cli.stores import open_store, text_resolver

# The colour of each attention state on a terminal.
COLOURS = dict(needs_user="yellow", ready_for_agent="green", waiting="cyan", blocked="red")


def _goal_status(
    goal_id: str, loaded: Any, now: str, resolve: Any, *, named: bool
) -> dict[str, Any] | None:
    """One goal's status, or its health when it did not load (None: no such goal, listed).

    A corrupt ledger is the goal's state and is shown; a goal `named` on the command line
    that cannot be read (io_error) fails the command, a listed one is shown as unreadable."""
    from loopx.engine.goals_all import health_of
    from loopx.model.errors import LedgerDamage, LoopxError, NotFound
    from loopx.state.views import status_view

    if isinstance(loaded, LoopxError):
        if named and not isinstance(loaded, LedgerDamage):
            raise loaded  # the one goal asked for could not be read: the command failed
        return {"goal_id": goal_id, "health": {"state": health_of(loaded), **loaded.to_dict()}}
    if loaded.state is None:
        if named:
            raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
        return None
    data = status_view(loaded.state, now, resolve)
    data["health"] = (
        {
            "state": "tail_damaged",
            "damage": loaded.damage,
            "note": "the damaged tail is quarantined on the next write",
        }
        if loaded.damage
        else {"state": "ok"}
    )
    return data


def _status_text(goals: list[dict[str, Any]], now: str) -> str:
    if not goals:
        return "no goals (create one with: loopx goal create --goal-id ID …)"
    return "\n".join(line for g in goals for line in _goal_lines(g))


def _goal_lines(g: dict[str, Any]) -> list[str]:
    health = g["health"]
    if health["state"] in ("corrupt", "unreadable"):
        what = "LEDGER CORRUPT" if health["state"] == "corrupt" else "UNREADABLE"
        return [f"{g['goal_id']}: {what} ({health['code']}): {health['message']}"]
    c, a = g["counts"], g["attention"]
    lines = [
        f"{g['goal_id']}: {g['title']}  [{g['status']}, revision {g['revision']}]",
        f"  attention: {_attention(a['state'])} ({a['reason']}{_also(a)})",
        f"  todos: {c['done']}/{c['total']} done, {c['open']} open, "
        f"{c['active']} active, {c['blocked']} blocked",
    ]
    lines += _work_lines(g) + _held_lines(g)
    q = g["quota"]
    if q["budget"] is not None:
        exhausted = " (exhausted)" if q["exhausted"] else ""
        lines.append(f"  quota: {q['spent']}/{q['budget']} {q['unit']}{exhausted}")
    if health["state"] != "ok":
        lines.append(f"  ledger: {health['state']} ({health['note']})")
    return lines


def _work_lines(g: dict[str, Any]) -> list[str]:
    """What is ready, due or under way, and the next wake."""
    lines = []
    if g["frontier"]:
        more = g["frontier_total"] - len(g["frontier"])
        ready = ", ".join(t["todo_id"] for t in g["frontier"])
        lines.append(f"  ready: {ready}" + (f" (+{more} more)" if more else ""))
    lines += [
        f"  due: {m['todo_id']} watching {m['watch']} (since {m['next_at']})"
        for m in g["monitors"]["due"]
    ]
    lines += [
        f"  open turn {t['turn_id']} on {t['todo_id']} by {t['agent_id']}: "
        f"at {t['phase']} for {t['age_seconds']}s (loopx turn resume)"
        for t in g["open_turns"]
    ]
    wake = g["monitors"]["next_wake"]
    if wake:
        what = wake.get("todo_id") or f"gate {wake.get('gate_id')}"
        lines.append(f"  next wake: {wake['at']} ({what})")
    return lines


def _held_lines(g: dict[str, Any]) -> list[str]:
    """The decisions pending and the leases held."""
    lines = [
        f"  gate {gate['gate_id']} [{gate['status']}] for {gate['authority']}: "
        f"{gate['question']}"
        + (f" (ask again on {gate['ask_again_at']})" if "ask_again_at" in gate else "")
        for gate in g["gates"]
    ]
    lines += [
        f"  lease {lease['todo_id']} by {lease['agent_id']} until "
        f"{lease['lease_expires_at']} ({'live' if lease['live'] else 'EXPIRED'})"
        for lease in g["leases"]
    ]
    return lines


def _also(attention: dict[str, Any]) -> str:
    """The ranked reasons after the first: "; also 1 needs_user, 2 blocked"."""
    rest = [f"{r['count']} {r['state']}" for r in attention.get("reasons", [])[1:]]
    return f"; also {', '.join(rest)}" if rest else ""


def _attention(state: str) -> str:
    """The attention state, coloured on a terminal (never in a pipe or under NO_COLOR)."""
    import sys

    from loopx.cli.terminal import paint

    colour = COLOURS.get(state)
    return paint(state, sys.stdout, fg=colour, bold=True) if colour else state


# What each reason code says of a todo that is not ready (lists are joined).
_REASONS = {
    "dependency_open": "waits for {todo_ids}",
    "dependency_missing": "depends on unknown {todo_ids}",
    "gate_pending": "held by gate {gate_ids}",
    "claimed": "claimed by {agent_id} until {lease_expires_at}",
    "todo_blocked": "blocked",
    "monitor_not_due": "monitor, next wake {next_at}",
}


def _reason(r: dict[str, Any]) -> str:
    said = {k: ", ".join(v) if isinstance(v, list) else v for k, v in r.items()}
    return _REASONS.get(r["code"], "{code}").format_map(said)


def show_status(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """Per goal: attention state, progress, frontier, pending gates, leases, quota, health."""
    from loopx.engine.clock import from_env

    store = open_store(root)
    now, resolve = from_env().now(), text_resolver(store)
    from loopx.engine.goals_all import load_all
    from loopx.model.ids import check_id

    if goal_id is not None:
        check_id(goal_id, "goal_id")  # a bad name is a usage error, not an unreadable goal
    goals = []
    for gid, loaded in load_all(store, [goal_id] if goal_id else None):
        data = _goal_status(gid, loaded, now, resolve, named=goal_id is not None)
        if data is not None:
            goals.append(data)
    emit(fmt, {"now": now, "goals": goals}, lambda: _status_text(goals, now))


def show_next(
    goal_id: str, agent_id: str | None, explain: bool, limit: int, root: Path | None, fmt: str
) -> None:
    """The frontier: open todos whose dependencies are done, not held by a pending gate, not
    claimed by someone else under a live lease. Highest priority first."""
    from loopx.engine.clock import from_env
    from loopx.engine.core import require_goal
    from loopx.state.views import next_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    data = next_view(state, from_env().now(), text_resolver(store), agent_id, explain, limit)

    def text() -> str:
        lines = [f"ready ({data['frontier_total']}):"]
        lines += [
            f"  {t['todo_id']:<20} p{t['priority']} {t['role']:<5} {t['title']}"
            + (f"  (monitor due: {t['monitor']['watch']})" if "monitor" in t else "")
            for t in data["frontier"]
        ] or ["  nothing is ready"]
        if explain:
            lines.append(f"not ready ({len(data['not_ready'])}):")
            for item in data["not_ready"]:
                why = "; ".join(_reason(r) for r in item["reasons"])
                lines.append(f"  {item['todo_id']:<20} {why}")
        return "\n".join(lines)

    emit(fmt, data, text)
