"""Explain what changed between two versions of a goal, in domain terms.

Both sides are reduced to the same `facts` shape — goal status, todos, gates, evidence — so a
diff of two ledger revisions and a diff of two build folders read the same way.
"""

from __future__ import annotations

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
        return [
            {
                "kind": "goal_added",
                "goal_id": new["goal_id"],
                "title": new["title"],
                "revision": new["revision"],
            }
        ]
    if new is None:
        return [{"kind": "goal_removed", "goal_id": old["goal_id"]}]
    goal = new["goal_id"]
    out: list[dict[str, Any]] = []
    if old["status"] != new["status"]:
        out.append(
            {"kind": "goal_status", "goal_id": goal, "from": old["status"], "to": new["status"]}
        )
    for tid in sorted(new["todos"].keys() - old["todos"].keys()):
        t = new["todos"][tid]
        out.append(
            {
                "kind": "todo_added",
                "goal_id": goal,
                "todo_id": tid,
                "title": t["title"],
                "status": t["status"],
            }
        )
    for tid in sorted(old["todos"].keys() & new["todos"].keys()):
        a, b = old["todos"][tid]["status"], new["todos"][tid]["status"]
        if a == b:
            continue
        kind = (
            "todo_closed"
            if b in CLOSED and a not in CLOSED
            else "todo_reopened"
            if a in CLOSED and b not in CLOSED
            else "todo_status"
        )
        out.append(
            {
                "kind": kind,
                "goal_id": goal,
                "todo_id": tid,
                "title": new["todos"][tid]["title"],
                "from": a,
                "to": b,
            }
        )
    for tid in sorted(old["todos"].keys() - new["todos"].keys()):
        out.append({"kind": "todo_hidden", "goal_id": goal, "todo_id": tid})
    for gid in sorted(new["gates"].keys() - old["gates"].keys()):
        g = new["gates"][gid]
        out.append(
            {
                "kind": "gate_opened",
                "goal_id": goal,
                "gate_id": gid,
                "question": g["question"],
                "status": g["status"],
            }
        )
    for gid in sorted(old["gates"].keys() & new["gates"].keys()):
        a, b = old["gates"][gid]["status"], new["gates"][gid]["status"]
        if a != b:
            out.append(
                {
                    "kind": "gate_resolved",
                    "goal_id": goal,
                    "gate_id": gid,
                    "question": new["gates"][gid]["question"],
                    "from": a,
                    "to": b,
                }
            )
    for eid in sorted(new["evidence"].keys() - old["evidence"].keys()):
        e = new["evidence"][eid]
        out.append(
            {
                "kind": "evidence_added",
                "goal_id": goal,
                "evidence_id": eid,
                "evidence_kind": e["kind"],
                "summary": e["summary"],
                "revision": e["revision"],
            }
        )
    return out


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
