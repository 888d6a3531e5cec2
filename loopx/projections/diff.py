"""Explain what changed between two versions of a goal, in domain terms.

Both sides are reduced to the same `facts` shape — goal status, todos, gates, evidence — so a
diff of two ledger revisions and a diff of two build folders read the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.status_upgrade import upgrade
from loopx.projections.waiting import open_monitors
from loopx.state.entities import GoalState

Facts = dict[str, Any]


def facts_from_state(state: GoalState, lens: Lens) -> Facts:
    return {
        "goal_id": state.goal_id,
        "revision": state.revision,
        "status": state.status,
        "title": lens.text(state.title),
        "todos": {
            t.todo_id: {"title": lens.text(t.title), "status": t.status}
            for t in lens.keep(list(state.todos.values()), "todos")
        },
        "gates": {
            g.gate_id: {"question": lens.text(g.question), "status": g.status}
            for g in lens.keep(list(state.gates.values()), "gates")
        },
        "evidence": {
            e.evidence_id: {"kind": e.kind, "summary": lens.text(e.summary), "revision": e.revision}
            for e in lens.keep(list(state.evidence.values()), "evidence items")
        },
        "monitors": {
            t.todo_id: _monitor_fact(t.monitor)
            for t in open_monitors(state)
            if lens.sees(t.visibility)
        },
    }


def _monitor_fact(m: Any) -> dict[str, Any]:
    return {k: m[k] for k in ("next_at", "observations", "last_result")}


def _recorded_monitor(m: Any) -> tuple[str, dict[str, Any]]:
    """A monitor as a build's status.json records it; `ValueError` when it is not one loopx
    writes (its id and count are compared with another build's)."""
    fact, todo_id = _monitor_fact(m), m["todo_id"]
    count = fact["observations"]
    if not isinstance(todo_id, str) or not isinstance(count, int) or isinstance(count, bool):
        raise ValueError("not a loopx monitor")
    return todo_id, fact


def facts_from_artifacts(status: dict[str, Any], graph: dict[str, Any]) -> Facts:
    """Facts recovered from a build's status.json (any version: read as v2) and graph.json
    for one goal. A document upgraded from v1 never recorded its monitors: None, unknown."""
    status = upgrade(status)
    nodes = graph.get("nodes", [])
    monitors = (
        None
        if status.get("upgraded_from")
        else dict(_recorded_monitor(m) for m in status["monitors"]["items"])
    )
    return {
        "goal_id": status["goal"]["goal_id"],
        "revision": status["source"]["revision"],
        "status": status["goal"]["status"],
        "title": status["goal"]["title"],
        "todos": {
            n["ref"]: {"title": n["label"], "status": n["status"]}
            for n in nodes
            if n["kind"] == "todo"
        },
        "gates": {
            n["ref"]: {"question": n["label"], "status": n["status"]}
            for n in nodes
            if n["kind"] == "gate"
        },
        "evidence": {
            e["evidence_id"]: {
                "kind": e["kind"],
                "summary": e["summary"],
                "revision": e["revision"],
            }
            for e in status.get("evidence", [])
        },
        "monitors": monitors,
    }


CLOSED = {"done", "cancelled"}


def diff_facts(old: Facts | None, new: Facts | None) -> list[dict[str, Any]]:
    """Changes from `old` to `new` (either may be None: a goal added or removed)."""
    if old is None and new is None:
        return []
    if old is None:
        assert new is not None
        added = {k: new[k] for k in ("goal_id", "title", "revision")}
        return [{"kind": "goal_added", **added}]
    if new is None:
        return [{"kind": "goal_removed", "goal_id": old["goal_id"]}]
    goal = new["goal_id"]
    out: list[dict[str, Any]] = []
    if old["status"] != new["status"]:
        out.append(
            {"kind": "goal_status", "goal_id": goal, "from": old["status"], "to": new["status"]}
        )
    out += _added("todo_added", "todos", old, new, ("title", "status"))
    out += _moved("todos", "title", old, new, _todo_move)
    hidden = sorted(old["todos"].keys() - new["todos"].keys())
    out += [{"kind": "todo_hidden", "goal_id": goal, "todo_id": tid} for tid in hidden]
    out += _added("gate_opened", "gates", old, new, ("question", "status"))
    out += _moved("gates", "question", old, new, lambda a, b: "gate_resolved")
    out += _added("evidence_added", "evidence", old, new, ("kind", "summary", "revision"))
    return out + _observed(old, new)


def _observed(old: Facts, new: Facts) -> list[dict[str, Any]]:
    """A `monitor_observed` change per monitor open on both sides that was observed since
    (none when either side did not record its monitors: a build from before v2)."""
    before, after = old.get("monitors"), new.get("monitors")
    if before is None or after is None:
        return []
    out = []
    for i in sorted(before.keys() & after.keys()):
        a, b = before[i], after[i]
        if b["observations"] > a["observations"]:
            seen = {"observations": b["observations"] - a["observations"]}
            out.append(
                {"kind": "monitor_observed", "goal_id": new["goal_id"], "todo_id": i, **seen}
                | {"last_result": b["last_result"], "next_at": b["next_at"]}
            )
    return out


_ID_KEY = {"todos": "todo_id", "gates": "gate_id", "evidence": "evidence_id"}


def _added(kind: str, family: str, old: Facts, new: Facts, fields: tuple[str, ...]) -> list[Any]:
    """A `kind` change per item of `family` in `new` and not in `old`, with the item's
    `fields` (its own `kind` as `evidence_kind`: it must not overwrite the change's)."""
    before, after = old[family], new[family]
    out = []
    for i in sorted(after.keys() - before.keys()):
        item = {("evidence_kind" if f == "kind" else f): after[i][f] for f in fields}
        out.append({"kind": kind, "goal_id": new["goal_id"], _ID_KEY[family]: i, **item})
    return out


def _moved(family: str, label: str, old: Facts, new: Facts, kind: Callable[..., str]) -> list[Any]:
    """A change per item of `family` on both sides whose status moved, its kind named by
    `kind(from, to)`, with the item's `label` as it is now."""
    before, after = old[family], new[family]
    out = []
    for i in sorted(before.keys() & after.keys()):
        a, b = before[i]["status"], after[i]["status"]
        if a != b:
            change = {"kind": kind(a, b), "goal_id": new["goal_id"], _ID_KEY[family]: i}
            out.append({**change, label: after[i][label], "from": a, "to": b})
    return out


def _todo_move(a: str, b: str) -> str:
    if b in CLOSED and a not in CLOSED:
        return "todo_closed"
    if a in CLOSED and b not in CLOSED:
        return "todo_reopened"
    return "todo_status"


_PHRASES = {
    "goal_added": "goal {goal_id} added: {title}",
    "goal_removed": "goal {goal_id} no longer present",
    "goal_status": "goal {goal_id}: {from} → {to}",
    "todo_added": "todo {todo_id} opened: {title}",
    "todo_closed": "todo {todo_id} {to}: {title}",
    "todo_reopened": "todo {todo_id} reopened ({from} → {to}): {title}",
    "todo_status": "todo {todo_id}: {from} → {to}",
    "todo_hidden": "todo {todo_id} no longer visible",
    "gate_opened": "gate {gate_id} opened: {question}",
    "gate_resolved": "gate {gate_id} {to}: {question}",
    "evidence_added": "evidence {evidence_id} ({evidence_kind}) added: {summary}",
    "monitor_observed": "monitor {todo_id} observed {observations} time(s), last "
    "{last_result}: next wake {next_at}",
}


def describe(change: dict[str, Any]) -> str:
    return _PHRASES[change["kind"]].format(**change)


def summarize(changes: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c["kind"]] = out.get(c["kind"], 0) + 1
    return dict(sorted(out.items()))
