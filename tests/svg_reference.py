"""The SVG drawing of a task graph as first written (`loopx.render.svg` before issue 19 made
it cheaper): kept only as the reference the fast drawing must match byte for byte
(`tests/test_svg_reference.py`); pages must not change. The layout is the module's own."""

from __future__ import annotations

from html import escape
from typing import Any

from loopx.render import svg
from loopx.render.graph import FILLS, STROKES
from loopx.render.layered import dense
from loopx.render.svg import FONT, MAX_NODES, NODE_H, NODE_W, PORT_GAP


def _components(g: dict[str, Any], edges: dict[int, Any]) -> list[tuple[list[str], list[int]]]:
    """Connected components in node order, each with its edges in edge order."""
    parent = {n["id"]: n["id"] for n in g["nodes"]}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in edges:
        a, b = find(g["edges"][i]["from"]), find(g["edges"][i]["to"])
        if a != b:
            parent[b] = a
    members: dict[str, list[str]] = {}
    for n in g["nodes"]:
        members.setdefault(find(n["id"]), []).append(n["id"])
    edge_ids: dict[str, list[int]] = {}
    for i in edges:
        edge_ids.setdefault(find(g["edges"][i]["from"]), []).append(i)
    return [(nodes, edge_ids.get(root, [])) for root, nodes in members.items()]


def laid_out_simply(g: dict[str, Any]) -> bool:
    """Whether some part of the drawing of `g` is laid out simply (`layered.dense`: too many
    long edges to untangle), which the page then says."""
    if len(g["nodes"]) > MAX_NODES:
        return False
    drawn = {i: None for i, e in enumerate(g["edges"]) if e["from"] != e["to"]}
    for members, edge_ids in _components(g, drawn):
        number = {node: k for k, node in enumerate(members)}
        ends = [(number[g["edges"][i]["from"]], number[g["edges"][i]["to"]]) for i in edge_ids]
        if dense(len(members), ends):
            return True
    return False


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
        lines[1] = _cut(lines[1][: width - 1]) + "…"
    return [ln if len(ln) <= width else _cut(ln[:width]) for ln in lines]


def _cut(piece: str) -> str:
    """A cut never ends inside an address: "x@users.noreply.github.com" cut to "x@users.no"
    would name another domain (the boundary scan would rightly flag it), so the cut moves
    to before the "@"."""
    last = piece.rsplit(" ", 1)[-1]
    return piece[: len(piece) - len(last) + last.index("@")] if "@" in last else piece


def _ports(g: dict[str, Any], pos: dict[str, tuple[float, float]]) -> dict[tuple[int, str], float]:
    """Where each edge leaves its source and enters its target, as an x offset from the
    node's centre: the edges meeting one side of a node are spread along it in the order of
    the nodes at their other ends, so arrowheads never pile onto one point."""
    sides: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for i, e in enumerate(g["edges"]):
        if e["from"] == e["to"]:
            continue
        sides.setdefault((e["from"], "out"), []).append((pos[e["to"]][0], i))
        sides.setdefault((e["to"], "in"), []).append((pos[e["from"]][0], i))
    ports: dict[tuple[int, str], float] = {}
    for (_, side), ends in sides.items():
        ends.sort()
        step = min(PORT_GAP, (NODE_W - 40) / max(len(ends) - 1, 1))
        for k, (_, i) in enumerate(ends):
            ports[(i, side)] = round((k - (len(ends) - 1) / 2) * step, 1)
    return ports


def _route(
    points: list[tuple[float, float]],
    pos: dict[str, tuple[float, float]],
    e: dict[str, Any],
    dx: float,
    dy: float,
    ends: tuple[float, float] = (0.0, 0.0),
) -> str:
    """An SVG path from the bottom of the source box to the top of the target box (at the
    offsets `ends` from their centres), through the routed points between them, smoothed
    with quadratic curves."""
    x1, y1 = pos[e["from"]]
    x2, y2 = pos[e["to"]]
    x1, x2 = x1 + ends[0], x2 + ends[1]
    via = [(x, y) for x, y in points[1:-1]]
    pts = [(x1, y1 + NODE_H / 2), *via, (x2, y2 - NODE_H / 2)]
    pts = [(x + dx, y + dy) for x, y in pts]
    if len(pts) == 2:
        (ax, ay), (bx, by) = pts
        mid = (ay + by) / 2
        return f"M{ax:.1f},{ay:.1f} C{ax:.1f},{mid:.1f} {bx:.1f},{mid:.1f} {bx:.1f},{by:.1f}"
    parts = [f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"]
    for (ax, ay), (bx, by) in zip(pts[1:-1], pts[2:], strict=False):
        parts.append(f"Q{ax:.1f},{ay:.1f} {(ax + bx) / 2:.1f},{(ay + by) / 2:.1f}")
    parts.append(f"L{pts[-1][0]:.1f},{pts[-1][1]:.1f}")
    return " ".join(parts)


def _outline(n: dict[str, Any], x: float, y: float, fill: str, stroke: str) -> str:
    """A gate is a hexagon (as in the DOT and Mermaid sources); a person's todo a stadium with
    a double border; an agent's todo a rounded rectangle."""
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"'
    if n["kind"] == "gate":
        cut, w, h = 16, NODE_W, NODE_H
        points = [
            (x + cut, y), (x + w - cut, y), (x + w, y + h / 2),
            (x + w - cut, y + h), (x + cut, y + h), (x, y + h / 2),
        ]  # fmt: skip
        return f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in points)}" {paint}/>'
    if n.get("role") == "user":
        inset = 4
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" '
            f'rx="{NODE_H / 2:.0f}" {paint}/>'
            f'<rect x="{x + inset:.1f}" y="{y + inset:.1f}" width="{NODE_W - 2 * inset}" '
            f'height="{NODE_H - 2 * inset}" rx="{NODE_H / 2 - inset:.0f}" fill="none" '
            f'stroke="{stroke}" stroke-width="1"/>'
        )
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="6" {paint}/>'


_DASHES = {
    "depends_on": "",
    "successor": ' stroke-dasharray="6 4"',
    "gates": ' stroke-dasharray="2 3"',
}


def _node(n: dict[str, Any], x: float, y: float) -> str:
    """A node's outline (coloured by its status) and its label, centred, one tspan a line."""
    fill, stroke = FILLS.get(n["status"], "#fff"), STROKES.get(n["status"], "#333")
    lines = _label(n["label"])
    leading = FONT + 3
    text = "".join(
        f'<tspan x="{x + NODE_W / 2:.1f}" dy="{0 if i == 0 else leading}">{escape(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    ty = y + NODE_H / 2 - (len(lines) - 1) * leading / 2 + FONT * 0.35
    return (
        _outline(n, x, y, fill, stroke)
        + f'<text x="{x + NODE_W / 2:.1f}" y="{ty:.1f}" text-anchor="middle" '
        f'font-family="system-ui, sans-serif" font-size="{FONT}" fill="#111">{text}</text>'
    )


def to_svg_parts(
    g: dict[str, Any], node_href: dict[str, str] | None = None, known: svg.Known | None = None
) -> list[str] | None:
    """The graph as one drawing per connected component, in node order, so a page can let
    them wrap onto the next line on a narrow screen; None when too large to draw. `known`:
    see `layout`."""
    if len(g["nodes"]) > MAX_NODES:
        return None
    by_id = {n["id"]: n for n in g["nodes"]}
    drawn = {i: None for i, e in enumerate(g["edges"]) if e["from"] != e["to"]}
    components = _components(g, drawn)
    parts = []
    for k, (members, edge_ids) in enumerate(components, 1):
        sub = {
            **g,
            "nodes": [by_id[m] for m in members],
            "edges": [g["edges"][i] for i in edge_ids],
        }
        label = f", part {k} of {len(components)}" if len(components) > 1 else ""
        parts.append(to_svg(sub, node_href, part=(f"-{k}", label), known=known))
    return [p for p in parts if p]


def to_svg(
    g: dict[str, Any],
    node_href: dict[str, str] | None = None,
    part: tuple[str, str] = ("", ""),
    known: svg.Known | None = None,
) -> str | None:
    """Inline SVG of the graph (links to todo pages via `node_href`), or None if too large.
    `part`: what this drawing's ids end with and its title adds, when it is one of several
    on a page (`to_svg_parts`). `known`: see `layout`."""
    laid = svg.layout(g, known)
    if laid is None:
        return None
    pos, routes = laid
    if not pos:
        return ""
    ident, label = part
    pad = 16
    width = max(x for x, _ in pos.values()) + NODE_W / 2 + pad * 2
    height = max(y for _, y in pos.values()) + NODE_H / 2 + pad * 2
    dy = pad
    dx = pad
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" '
        f'aria-labelledby="graph-title{ident}"><title id="graph-title{ident}">Task graph of '
        f"{escape(g['source']['goal_id'])}{escape(label)}</title>",
        f'<defs><marker id="arrow{ident}" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 '
        'L0,10 z" fill="#555"/></marker></defs>',
    ]
    ports = _ports(g, pos)
    for i, e in enumerate(g["edges"]):
        if e["from"] == e["to"]:
            continue
        ends = (ports[(i, "out")], ports[(i, "in")])
        out.append(
            f'<path d="{_route(routes.get(i, []), pos, e, dx, dy, ends)}" fill="none" '
            f'stroke="#555" stroke-width="1.4"{_DASHES[e["kind"]]} '
            f'marker-end="url(#arrow{ident})"/>'
        )
    for n in g["nodes"]:
        x, y = pos[n["id"]]
        x, y = x + dx - NODE_W / 2, y + dy - NODE_H / 2
        shape = _node(n, x, y)
        who = {"user": "a person's todo", "agent": "an agent's todo"}.get(n.get("role", ""), "")
        kind = "decision gate" if n["kind"] == "gate" else who or n["kind"]
        title = f"<title>{escape(kind)} {escape(n['ref'])} ({escape(n['status'])})</title>"
        href = (node_href or {}).get(n["id"])
        if href:
            out.append(f'<a href="{escape(href)}">{title}{shape}</a>')
        else:
            out.append(f"<g>{title}{shape}</g>")
    out.append("</svg>")
    return "\n".join(out)
