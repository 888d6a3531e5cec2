"""The task graph (`loopx.graph/v1`): todos, gates, dependencies and successors, with
deterministic node ids, rendered as JSON, Mermaid and DOT (SVG lives in `render/svg.py`)."""

from __future__ import annotations

import re
from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, ordered_todos, source
from loopx.state.entities import GoalState

SCHEMA = "loopx.graph/v1"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def node_id(kind: str, entity_id: str) -> str:
    """A Mermaid/DOT-safe id that stays the same for the same entity across builds."""
    return f"{kind[0]}_{_UNSAFE.sub('_', entity_id)}"


def graph(state: GoalState, lens: Lens) -> dict[str, Any]:
    todos = lens.keep(ordered_todos(state), "todos")
    visible = {t.todo_id for t in todos}
    gates = lens.keep(sorted(state.gates.values(), key=lambda g: g.created_seq), "gates")
    ids: dict[str, str] = {}
    taken: set[str] = set()
    nodes: list[dict[str, Any]] = []

    def add(kind: str, entity_id: str, label: str, status: str, role: str | None = None) -> None:
        nid = node_id(kind, entity_id)
        while nid in taken:  # two ids that sanitise alike: keep both, deterministically
            nid += "_"
        taken.add(nid)
        ids[f"{kind}:{entity_id}"] = nid
        node = {"id": nid, "kind": kind, "ref": entity_id, "label": label, "status": status}
        if role is not None:
            node["role"] = role
        nodes.append(node)

    for t in todos:
        add("todo", t.todo_id, lens.text(t.title), t.status, t.role)
    for g in gates:
        add("gate", g.gate_id, lens.text(g.question), g.status)
    edges: list[dict[str, str]] = []
    hidden_edges = 0
    for t in todos:
        for dep in t.depends_on:
            if dep in visible:
                edges.append(
                    {
                        "from": ids[f"todo:{dep}"],
                        "to": ids[f"todo:{t.todo_id}"],
                        "kind": "depends_on",
                    }
                )
            else:
                hidden_edges += 1
        if t.successor and t.successor in visible:
            edges.append(
                {
                    "from": ids[f"todo:{t.todo_id}"],
                    "to": ids[f"todo:{t.successor}"],
                    "kind": "successor",
                }
            )
    for g in gates:
        for target in g.blocks:
            if target in visible:
                edges.append(
                    {"from": ids[f"gate:{g.gate_id}"], "to": ids[f"todo:{target}"], "kind": "gates"}
                )
            else:
                hidden_edges += 1
    if hidden_edges:
        lens.omitted["edges to hidden todos"] += hidden_edges
    return {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "audience": lens.audience,
        "source": source(state),
        "nodes": nodes,
        "edges": edges,
        "omissions": lens.omissions(),
    }
