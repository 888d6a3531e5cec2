"""Task graph sources: Mermaid (that GitHub renders) and Graphviz DOT, from a `loopx.graph/v1`
projection. One palette serves these and the SVG drawing (`render/svg.py`)."""

from __future__ import annotations

from typing import Any

# state class → (fill, stroke, text colour); every node status maps onto one class
PALETTE = {
    "open": ("#eef4ff", "#3259a8", "#102040"),
    "active": ("#fff6db", "#9a6b00", "#3d2a00"),
    "blocked": ("#ffe3e0", "#b3261e", "#410e0b"),
    "done": ("#e3f5e8", "#1e7a3c", "#0b3319"),
    "cancelled": ("#eeeeee", "#6b6b6b", "#333333"),
    "pending": ("#f3e8ff", "#6f3fb0", "#2a1047"),
}
STATE_CLASS = {
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
FILLS = {status: PALETTE[cls][0] for status, cls in STATE_CLASS.items()}
STROKES = {status: PALETTE[cls][1] for status, cls in STATE_CLASS.items()}


def _user(node: dict[str, Any]) -> bool:
    return node["kind"] == "todo" and node.get("role") == "user"


def _mermaid_label(text: str) -> str:
    # Mermaid strings: quotes become #quot; entity codes, never raw markup.
    clean = " ".join(text.split())[:80]
    return clean.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(g: dict[str, Any]) -> str:
    """Mermaid flowchart source that GitHub renders."""
    lines = ["flowchart TD"]
    for n in g["nodes"]:
        label = _mermaid_label(f"{n['ref']}: {n['label']}")
        # gate: hexagon; a person's todo: stadium; an agent's: rectangle
        form = '{{"%s"}}' if n["kind"] == "gate" else '(["%s"])' if _user(n) else '["%s"]'
        shape = form % label
        lines.append(f"  {n['id']}{shape}:::{STATE_CLASS.get(n['status'], 'open')}")
    arrows = {"depends_on": "-->", "successor": "-.->|successor|", "gates": "-.->|gate|"}
    for e in g["edges"]:
        lines.append(f"  {e['from']} {arrows[e['kind']]} {e['to']}")
    lines += [
        f"  classDef {cls} fill:{fill},stroke:{stroke},color:{color}"
        for cls, (fill, stroke, color) in PALETTE.items()
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
    for n in g["nodes"]:
        shape = (
            ", shape=hexagon"
            if n["kind"] == "gate"
            else ', style="rounded,filled,bold", peripheries=2'
            if _user(n)
            else ""
        )
        label = _dot_string(f"{n['ref']}: {n['label']}")
        lines.append(
            f'  {n["id"]} [label={label}, fillcolor="{FILLS.get(n["status"], "#fff")}"{shape}];'
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
