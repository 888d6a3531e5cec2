"""Lay out a task graph with grandalf's Sugiyama layout and draw it as inline SVG.

The layout is a real layered-graph algorithm (crossing reduction, coordinate assignment), not
a grid. Components are laid out separately and placed side by side in a fixed order, so the
same graph always gives the same bytes. Very large graphs are not drawn (see MAX_NODES).
"""

from __future__ import annotations

from html import escape
from typing import Any

MAX_NODES = 400
NODE_W, NODE_H, GAP = 168, 44, 48
FILLS = {
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
STROKES = {
    "open": "#3259a8",
    "active": "#9a6b00",
    "blocked": "#b3261e",
    "done": "#1e7a3c",
    "cancelled": "#6b6b6b",
    "pending": "#6f3fb0",
    "deferred": "#6f3fb0",
    "approved": "#1e7a3c",
    "rejected": "#6b6b6b",
}


class _View:
    def __init__(self) -> None:
        self.w, self.h = NODE_W, NODE_H
        self.xy = (0.0, 0.0)


def layout(g: dict[str, Any]) -> dict[str, tuple[float, float]] | None:
    """Node id → centre (x, y), or None when the graph is too large to draw."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    nodes = g["nodes"]
    if not nodes or len(nodes) > MAX_NODES:
        return None if nodes else {}
    order = {n["id"]: i for i, n in enumerate(nodes)}
    vertices = {n["id"]: Vertex(n["id"]) for n in nodes}
    for v in vertices.values():
        v.view = _View()
    edges = [
        Edge(vertices[e["from"]], vertices[e["to"]]) for e in g["edges"] if e["from"] != e["to"]
    ]
    graph = Graph(list(vertices.values()), edges)
    components = sorted(graph.C, key=lambda c: min(order[v.data] for v in c.sV))
    positions: dict[str, tuple[float, float]] = {}
    x_offset = 0.0
    for comp in components:
        sug = SugiyamaLayout(comp)
        sug.init_all()
        sug.draw()
        xs = [v.view.xy[0] for v in comp.sV]
        left = min(xs) - NODE_W / 2
        for v in comp.sV:
            x, y = v.view.xy
            positions[v.data] = (round(x - left + x_offset, 1), round(y, 1))
        x_offset += max(xs) - min(xs) + NODE_W + GAP
    return positions


def _label(text: str, width: int = 24) -> list[str]:
    words, lines, line = " ".join(text.split()).split(" "), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width and line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
        if len(lines) == 2:
            break
    if line and len(lines) < 2:
        lines.append(line)
    if len(lines) == 2 and len(" ".join(words)) > len(" ".join(lines)):
        lines[1] = lines[1][: width - 1] + "…"
    return [ln[:width] for ln in lines]


def to_svg(g: dict[str, Any], node_href: dict[str, str] | None = None) -> str | None:
    """Inline SVG of the graph (links to todo pages via `node_href`), or None if too large."""
    pos = layout(g)
    if pos is None:
        return None
    if not pos:
        return ""
    pad = 16
    width = max(x for x, _ in pos.values()) + NODE_W / 2 + pad * 2
    height = max(y for _, y in pos.values()) + NODE_H / 2 + pad * 2
    dy = NODE_H / 2 + pad - min(y for _, y in pos.values())
    dx = pad
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" '
        f'aria-labelledby="graph-title"><title id="graph-title">Task graph of '
        f"{escape(g['source']['goal_id'])}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#555"/></marker></defs>',
    ]
    for e in g["edges"]:
        if e["from"] == e["to"]:
            continue
        x1, y1 = pos[e["from"]]
        x2, y2 = pos[e["to"]]
        y1, y2 = y1 + dy + NODE_H / 2, y2 + dy - NODE_H / 2
        dash = {
            "depends_on": "",
            "successor": ' stroke-dasharray="6 4"',
            "gates": ' stroke-dasharray="2 3"',
        }[e["kind"]]
        out.append(
            f'<path d="M{x1 + dx:.1f},{y1:.1f} C{x1 + dx:.1f},{(y1 + y2) / 2:.1f} '
            f'{x2 + dx:.1f},{(y1 + y2) / 2:.1f} {x2 + dx:.1f},{y2:.1f}" fill="none" '
            f'stroke="#555" stroke-width="1.4"{dash} marker-end="url(#arrow)"/>'
        )
    for n in g["nodes"]:
        x, y = pos[n["id"]]
        x, y = x + dx - NODE_W / 2, y + dy - NODE_H / 2
        fill, stroke = FILLS.get(n["status"], "#fff"), STROKES.get(n["status"], "#333")
        rx = 4 if n["kind"] == "gate" else 10
        lines = _label(n["label"])
        text = "".join(
            f'<tspan x="{x + NODE_W / 2:.1f}" dy="{0 if i == 0 else 14}">{escape(line)}</tspan>'
            for i, line in enumerate(lines)
        )
        ty = y + NODE_H / 2 - (len(lines) - 1) * 7 + 4
        shape = (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="{rx}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
            f'<text x="{x + NODE_W / 2:.1f}" y="{ty:.1f}" text-anchor="middle" '
            f'font-family="system-ui, sans-serif" font-size="12" fill="#111">{text}</text>'
        )
        title = f"<title>{escape(n['kind'])} {escape(n['ref'])} ({escape(n['status'])})</title>"
        href = (node_href or {}).get(n["id"])
        if href:
            out.append(f'<a href="{escape(href)}">{title}{shape}</a>')
        else:
            out.append(f"<g>{title}{shape}</g>")
    out.append("</svg>")
    return "\n".join(out)
