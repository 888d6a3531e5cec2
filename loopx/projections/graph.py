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

    def add(kind: str, entity_id: str, label: str, status: str) -> None:
        nid = node_id(kind, entity_id)
        while nid in taken:  # two ids that sanitise alike: keep both, deterministically
            nid += "_"
        taken.add(nid)
        ids[f"{kind}:{entity_id}"] = nid
        nodes.append({"id": nid, "kind": kind, "ref": entity_id, "label": label, "status": status})

    for t in todos:
        add("todo", t.todo_id, lens.text(t.title), t.status)
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


_MERMAID_CLASS = {
    "open": "open",
    "active": "active",
    "blocked": "blocked",
    "done": "done",
    "cancelled": "cancelled",
    "pending": "pending",
    "deferred": "pending",
    "approved": "done",
    "rejected": "cancelled",
}


def _mermaid_label(text: str) -> str:
    # Mermaid strings: quotes become #quot; entity codes, never raw markup.
    clean = " ".join(text.split())[:80]
    return clean.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(g: dict[str, Any]) -> str:
    """Mermaid flowchart source that GitHub renders."""
    lines = ["flowchart TD"]
    for n in g["nodes"]:
        label = _mermaid_label(f"{n['ref']}: {n['label']}")
        shape = ('{{"%s"}}' if n["kind"] == "gate" else '["%s"]') % label
        lines.append(f"  {n['id']}{shape}:::{_MERMAID_CLASS.get(n['status'], 'open')}")
    arrows = {"depends_on": "-->", "successor": "-.->|successor|", "gates": "-.->|gate|"}
    for e in g["edges"]:
        lines.append(f"  {e['from']} {arrows[e['kind']]} {e['to']}")
    lines += [
        "  classDef open fill:#eef4ff,stroke:#3259a8,color:#102040",
        "  classDef active fill:#fff6db,stroke:#9a6b00,color:#3d2a00",
        "  classDef blocked fill:#ffe3e0,stroke:#b3261e,color:#410e0b",
        "  classDef done fill:#e3f5e8,stroke:#1e7a3c,color:#0b3319",
        "  classDef cancelled fill:#eeeeee,stroke:#6b6b6b,color:#333333",
        "  classDef pending fill:#f3e8ff,stroke:#6f3fb0,color:#2a1047",
    ]
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    return '"' + " ".join(text.split())[:80].replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: dict[str, Any]) -> str:
    """Graphviz DOT source."""
    lines = [
        f"digraph {_dot_string(g['source']['goal_id'])} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    fills = {
        "open": "#eef4ff",
        "active": "#fff6db",
        "blocked": "#ffe3e0",
        "done": "#e3f5e8",
        "cancelled": "#eeeeee",
        "pending": "#f3e8ff",
        "deferred": "#f3e8ff",
        "approved": "#e3f5e8",
        "rejected": "#eeeeee",
    }
    for n in g["nodes"]:
        shape = ", shape=hexagon" if n["kind"] == "gate" else ""
        label = _dot_string(f"{n['ref']}: {n['label']}")
        lines.append(
            f'  {n["id"]} [label={label}, fillcolor="{fills.get(n["status"], "#fff")}"{shape}];'
        )
    styles = {
        "depends_on": "",
        "successor": ' [style=dashed, label="successor"]',
        "gates": ' [style=dotted, label="gate"]',
    }
    for e in g["edges"]:
        lines.append(f"  {e['from']} -> {e['to']}{styles[e['kind']]};")
    lines.append("}")
    return "\n".join(lines) + "\n"
