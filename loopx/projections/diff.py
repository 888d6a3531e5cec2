"""Explain what changed between two versions of a goal, in domain terms.

Both sides are reduced to the same `facts` shape — goal status, todos, gates, evidence — so a
diff of two ledger revisions and a diff of two build folders read the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopx.privacy.audience import Lens
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
    }


def facts_from_artifacts(status: dict[str, Any], graph: dict[str, Any]) -> Facts:
    """Facts recovered from a build's status.json and graph.json for one goal."""
    nodes = graph.get("nodes", [])
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
    o, n = old["todos"], new["todos"]
    out += _added("todo_added", goal, "todo_id", o, n, ("title", "status"))
    out += _moved(goal, "todo_id", "title", o, n, _todo_move)
    hidden = sorted(o.keys() - n.keys())
    out += [{"kind": "todo_hidden", "goal_id": goal, "todo_id": tid} for tid in hidden]
    o, n = old["gates"], new["gates"]
    out += _added("gate_opened", goal, "gate_id", o, n, ("question", "status"))
    out += _moved(goal, "gate_id", "question", o, n, lambda a, b: "gate_resolved")
    o, n = old["evidence"], new["evidence"]
    out += _added("evidence_added", goal, "evidence_id", o, n, ("kind", "summary", "revision"))
    return out


def _added(
    kind: str,
    goal: str,
    id_key: str,
    old: dict[str, Any],
    new: dict[str, Any],
    fields: tuple[str, ...],
) -> list[dict[str, Any]]:
    """A `kind` change per item in `new` and not in `old`, with the item's `fields` (its own
    `kind` as `evidence_kind`: it must not overwrite the change's)."""
    out = []
    for i in sorted(new.keys() - old.keys()):
        item = {("evidence_kind" if f == "kind" else f): new[i][f] for f in fields}
        out.append({"kind": kind, "goal_id": goal, id_key: i, **item})
    return out


def _moved(
    goal: str,
    id_key: str,
    label: str,
    old: dict[str, Any],
    new: dict[str, Any],
    kind: Callable[[str, str], str],
) -> list[dict[str, Any]]:
    """A change per item on both sides whose status moved, its kind named by `kind(from, to)`."""
    out = []
    for i in sorted(old.keys() & new.keys()):
        a, b = old[i]["status"], new[i]["status"]
        if a != b:
            change = {"kind": kind(a, b), "goal_id": goal, id_key: i, label: new[i][label]}
            out.append({**change, "from": a, "to": b})
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
}


def describe(change: dict[str, Any]) -> str:
    return _PHRASES[change["kind"]].format(**change)


def summarize(changes: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c["kind"]] = out.get(c["kind"], 0) + 1
    return dict(sorted(out.items()))
