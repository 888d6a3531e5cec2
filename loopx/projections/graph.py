"""The task graph (`loopx.graph/v1`): todos, gates, dependencies and successors, with
deterministic node ids, rendered as JSON, Mermaid and DOT (SVG lives in `render/svg.py`)."""

from __future__ import annotations

import re
from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, ordered_todos, source
from loopx.state.entities import Gate, GoalState, Todo

SCHEMA = "loopx.graph/v1"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def node_id(kind: str, entity_id: str) -> str:
    """A Mermaid/DOT-safe id that stays the same for the same entity across builds."""
    return f"{kind[0]}_{_UNSAFE.sub('_', entity_id)}"


def graph(state: GoalState, lens: Lens) -> dict[str, Any]:
    todos = lens.keep(ordered_todos(state), "todos")
    gates = lens.keep(sorted(state.gates.values(), key=lambda g: g.created_seq), "gates")
    nodes = [_node("todo", t.todo_id, lens.text(t.title), t.status, t.role) for t in todos]
    nodes += [_node("gate", g.gate_id, lens.text(g.question), g.status) for g in gates]
    ids: dict[str, str] = {}  # "kind:ref" → node id
    taken: set[str] = set()
    for node in nodes:
        while node["id"] in taken:  # two ids that sanitise alike: keep both, deterministically
            node["id"] += "_"
        taken.add(node["id"])
        ids[f"{node['kind']}:{node['ref']}"] = node["id"]
    edges, hidden_edges = _edges(todos, gates, ids)
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


def _node(
    kind: str, entity_id: str, label: str, status: str, role: str | None = None
) -> dict[str, Any]:
    node = {
        "id": node_id(kind, entity_id),
        "kind": kind,
        "ref": entity_id,
        "label": label,
        "status": status,
    }
    if role is not None:
        node["role"] = role
    return node


def _edges(
    todos: list[Todo], gates: list[Gate], ids: dict[str, str]
) -> tuple[list[dict[str, str]], int]:
    """Dependencies, successors and gated todos between visible nodes (`ids`: `kind:ref` →
    node id), and how many edges lead to a todo this audience does not see."""
    links: list[tuple[str, str, str]] = []
    for t in todos:
        links += [(f"todo:{dep}", f"todo:{t.todo_id}", "depends_on") for dep in t.depends_on]
        if t.successor:
            links.append((f"todo:{t.todo_id}", f"todo:{t.successor}", "successor"))
    for g in gates:
        links += [(f"gate:{g.gate_id}", f"todo:{target}", "gates") for target in g.blocks]
    edges: list[dict[str, str]] = []
    hidden = 0
    for start, target, kind in links:
        if start in ids and target in ids:
            edges.append({"from": ids[start], "to": ids[target], "kind": kind})
        elif kind != "successor":  # counted: hidden dependencies and gated todos
            hidden += 1
    return edges, hidden
