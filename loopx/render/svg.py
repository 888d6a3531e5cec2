"""Lay out a task graph in layers (`loopx.render.layered`) and draw it as inline SVG.

The layout is a real layered-graph algorithm (crossing reduction, coordinate assignment), not
a grid. Components are laid out separately and placed side by side in a fixed order, so the
same graph always gives the same bytes. Very large graphs are not drawn (see MAX_NODES).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from functools import lru_cache
from html import escape
from operator import itemgetter
from typing import Any

from loopx.render.graph import FILLS, STROKES
from loopx.render.layered import SEGMENTS_MAX, dense, lay_out

MAX_NODES = 400
ROW_WIDTH = 1400  # components wider than a screen wrap onto the next row
NODE_W, NODE_H, GAP = 200, 52, 48
NODE_GAP, LAYER_GAP, BEND_W = 20, 72, 20  # between nodes on a layer, layers; a bend's width
FONT = 14  # px: readable at the drawing's natural size, which the page never shrinks
PORT_GAP = 22  # px between the ends of edges that meet one side of a node


Layout = tuple[dict[str, tuple[float, float]], dict[int, list[tuple[float, float]]]]
Shape = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]  # node ids, edge ends
Numbered = tuple[tuple[int, ...], tuple[tuple[Any, Any], ...]]  # a shape, its ids numbered
# Layouts by shape a caller keeps (a build memo): consulted first, and given every layout a
# drawing uses.
Known = MutableMapping[Shape, "Layout | None"]


def _components(g: dict[str, Any], edges: dict[int, Any]) -> list[tuple[list[str], list[int]]]:
    """Connected components in order of their first node, each with its nodes in node order
    and its edges in edge order."""
    number: dict[str, int] = {}
    for n in g["nodes"]:
        number.setdefault(n["id"], len(number))
    ends = [(number[g["edges"][i]["from"]], number[g["edges"][i]["to"]]) for i in edges]
    near: list[list[int]] = [[] for _ in number]
    for a, b in ends:
        near[a].append(b)
        near[b].append(a)
    part = [-1] * len(number)
    count = 0
    for start in range(len(number)):  # numbered in node order: a part by its first node
        if part[start] >= 0:
            continue
        part[start] = count
        stack = [start]
        while stack:
            for w in near[stack.pop()]:
                if part[w] < 0:
                    part[w] = count
                    stack.append(w)
        count += 1
    members: list[list[str]] = [[] for _ in range(count)]
    for n in g["nodes"]:
        members[part[number[n["id"]]]].append(n["id"])
    edge_ids: list[list[int]] = [[] for _ in range(count)]
    for i, (a, _) in zip(edges, ends, strict=True):
        edge_ids[part[a]].append(i)
    return list(zip(members, edge_ids, strict=True))


def layout(g: dict[str, Any], known: Known | None = None) -> Layout | None:
    """Node id → centre (x, y) and edge index → routed points, or None when too large.

    The layout depends on the nodes' ids and the edges' ends only, so it is remembered by
    those (`loopx serve` lays out a goal's graph again after every event; most events change
    a status, not the graph's shape), in this process and in `known` when given. In this
    process it is remembered by the shape with its ids numbered in order of appearance
    (`_laid_out`): the layout never looks at an id's text, so the many parts of one build
    that are shaped alike (a lone todo, a pair) are laid out once."""
    laid = _remembered_layout(g, known)
    if laid is None:
        return None
    positions, routes = laid
    return dict(positions), {i: list(points) for i, points in routes.items()}


def _remembered_layout(g: dict[str, Any], known: Known | None) -> Layout | None:
    """`layout` itself, without the copy it hands out: the dicts and lists are the ones
    remembered, which a drawing only reads."""
    shape = (
        tuple(n["id"] for n in g["nodes"]),
        tuple((e["from"], e["to"]) for e in g["edges"]),
    )
    if known is not None and shape in known:
        return known[shape]
    laid = _numbered_layout(shape)
    if known is not None:
        known[shape] = laid
    return laid


def _numbered_layout(shape: Shape) -> Layout | None:
    """The layout of `shape`, made (or remembered) with each id replaced by its number in
    order of first appearance, then named again with the ids."""
    number: dict[str, int] = {}
    for node in shape[0]:
        number.setdefault(node, len(number))
    numbered = (
        tuple(number[n] for n in shape[0]),
        tuple((number.get(a, a), number.get(b, b)) for a, b in shape[1]),
    )
    laid = _laid_out(numbered)
    if laid is None:
        return None
    named: dict[Any, str] = {i: node for node, i in number.items()}
    positions, routes = laid
    return {named[i]: p for i, p in positions.items()}, routes


@lru_cache(maxsize=512)
def _laid_out(shape: Numbered) -> Layout | None:
    nodes = [{"id": node} for node in shape[0]]
    edges = [{"from": a, "to": b} for a, b in shape[1]]
    return _layout({"nodes": nodes, "edges": edges})


def _layout(g: dict[str, Any]) -> Layout | None:
    nodes = g["nodes"]
    if not nodes or len(nodes) > MAX_NODES:
        return None if nodes else ({}, {})
    drawn = {i: None for i, e in enumerate(g["edges"]) if e["from"] != e["to"]}
    positions: dict[str, tuple[float, float]] = {}
    routes: dict[int, list[tuple[float, float]]] = {}
    x_at = y_at = row_height = 0.0
    for members, edge_ids in _components(g, drawn):
        number = {node: k for k, node in enumerate(members)}
        ends = [(number[g["edges"][i]["from"]], number[g["edges"][i]["to"]]) for i in edge_ids]
        centres, paths = lay_out(
            len(members), ends, width=NODE_W, dummy_width=BEND_W, gap=NODE_GAP, layer_gap=LAYER_GAP
        )
        xs = [x for x, _ in centres]
        ys = [y for _, y in centres]
        width = max(xs) - min(xs) + NODE_W
        height = max(ys) - min(ys) + NODE_H
        if x_at and x_at + width > ROW_WIDTH:  # wrap: components flow in rows
            x_at, y_at, row_height = 0.0, y_at + row_height + GAP, 0.0
        dx, dy = x_at - (min(xs) - NODE_W / 2), y_at - (min(ys) - NODE_H / 2)
        for node, (x, y) in zip(members, centres, strict=True):
            positions[node] = (round(x + dx, 1), round(y + dy, 1))
        for i, path in zip(edge_ids, paths, strict=True):
            routes[i] = [(round(x + dx, 1), round(y + dy, 1)) for x, y in path]
        x_at += width + GAP
        row_height = max(row_height, height)
    return positions, dict(sorted(routes.items()))


def laid_out_simply(g: dict[str, Any]) -> bool:
    """Whether some part of the drawing of `g` is laid out simply (`layered.dense`: too many
    long edges to untangle), which the page then says."""
    if len(g["nodes"]) > MAX_NODES:
        return False
    drawn = {i: None for i, e in enumerate(g["edges"]) if e["from"] != e["to"]}
    for members, edge_ids in _components(g, drawn):
        if not _may_be_dense(len(members), len(edge_ids)):
            continue
        number = {node: k for k, node in enumerate(members)}
        ends = [(number[g["edges"][i]["from"]], number[g["edges"][i]["to"]]) for i in edge_ids]
        if dense(len(members), ends):
            return True
    return False


def _may_be_dense(count: int, edges: int) -> bool:
    """False when a part of `count` nodes and `edges` edges cannot be `dense`, which needs
    more than SEGMENTS_MAX layer-to-layer pieces of edges: its nodes take `count` layers at
    most, so no edge crosses more than `count - 1` (most parts of a page are a few todos, and
    the answer comes without laying them out)."""
    return edges * (count - 1) > SEGMENTS_MAX


def _label(text: str, width: int = 24) -> list[str]:
    """At most two lines of at most `width` characters, filled greedily word by word (a word
    longer than a line is cut); a label longer than two lines ends in "…"."""
    clean = " ".join(text.split())
    if len(clean) <= width:  # it fits on one line as it is
        return [clean] if clean else []
    first, rest = _line(clean, width)
    if not rest:  # one word, too long
        return [_cut(first[:width])]
    second, more = _line(rest, width)
    if more:
        second = _cut(second[: width - 1]) + "…"
    return [ln if len(ln) <= width else _cut(ln[:width]) for ln in (first, second)]


def _line(words: str, width: int) -> tuple[str, str]:
    """The first line of `words` (single spaces between them) and the words after it: as
    many whole words as fit in `width`, or the first word alone when it does not fit."""
    if len(words) <= width:
        return words, ""
    end = words.rfind(" ", 0, width + 1)
    if end < 0:
        end = words.find(" ")
        if end < 0:
            return words, ""
    return words[:end], words[end + 1 :]


def _cut(piece: str) -> str:
    """A cut never ends inside an address: "x@users.noreply.github.com" cut to "x@users.no"
    would name another domain (the boundary scan would rightly flag it), so the cut moves
    to before the "@"."""
    last = piece.rsplit(" ", 1)[-1]
    return piece[: len(piece) - len(last) + last.index("@")] if "@" in last else piece


def _ports(
    g: dict[str, Any], pos: dict[str, tuple[float, float]]
) -> tuple[dict[int, float], dict[int, float]]:
    """Where each edge leaves its source and where it enters its target (by edge index), as
    an x offset from the node's centre: the edges meeting one side of a node are spread
    along it in the order of the nodes at their other ends, so arrowheads never pile onto
    one point."""
    outs: dict[str, list[tuple[float, int]]] = {}
    ins: dict[str, list[tuple[float, int]]] = {}
    for i, e in enumerate(g["edges"]):
        a, b = e["from"], e["to"]
        if a == b:
            continue
        outs.setdefault(a, []).append((pos[b][0], i))
        ins.setdefault(b, []).append((pos[a][0], i))
    return _spread(outs), _spread(ins)


def _spread(sides: dict[str, list[tuple[float, int]]]) -> dict[int, float]:
    """Each edge's offset along its side, the sides' ends given as (x at the other end, edge
    index); a side's ends are sorted in place."""
    at: dict[int, float] = {}
    for ends in sides.values():
        if len(ends) == 1:  # most sides: the centre
            at[ends[0][1]] = 0.0
            continue
        ends.sort()
        for (_, i), offset in zip(ends, _offsets(len(ends)), strict=True):
            at[i] = offset
    return at


@lru_cache(maxsize=64)
def _offsets(count: int) -> tuple[float, ...]:
    """The offsets of `count` edge ends along one side, left to right."""
    step = min(PORT_GAP, (NODE_W - 40) / max(count - 1, 1))
    return tuple(round((k - (count - 1) / 2) * step, 1) for k in range(count))


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
    with quadratic curves (a cubic one when there are none); each number formatted once."""
    x1, y1 = pos[e["from"]]
    x2, y2 = pos[e["to"]]
    ax, ay = x1 + ends[0] + dx, y1 + NODE_H / 2 + dy
    bx, by = x2 + ends[1] + dx, y2 - NODE_H / 2 + dy
    if len(points) <= 2:  # most edges: one layer down, no bend
        fax, fbx, mid = f"{ax:.1f}", f"{bx:.1f}", f"{(ay + by) / 2:.1f}"
        return f"M{fax},{ay:.1f} C{fax},{mid} {fbx},{mid} {fbx},{by:.1f}"
    pts = [(x + dx, y + dy) for x, y in points[1:-1]]
    pts.append((bx, by))
    parts = [f"M{ax:.1f},{ay:.1f}"]
    for (px, py), (qx, qy) in zip(pts, pts[1:], strict=False):
        parts.append(f"Q{px:.1f},{py:.1f} {(px + qx) / 2:.1f},{(py + qy) / 2:.1f}")
    parts.append(f"L{bx:.1f},{by:.1f}")
    return " ".join(parts)


_MARKUP = re.compile("[&<>\"']").search  # what `escape` replaces: text without it is kept
_WHO = {"user": "a person's todo", "agent": "an agent's todo"}
_BOX = f'width="{NODE_W}" height="{NODE_H}"'
_INSET = 4  # px between a person's todo's two borders
_INNER = (
    f'width="{NODE_W - 2 * _INSET}" height="{NODE_H - 2 * _INSET}" '
    f'rx="{NODE_H / 2 - _INSET:.0f}" fill="none"'
)
_LEADING = FONT + 3  # px from one line of a label to the next
_BASELINE = FONT * 0.35  # from a line's middle down to its baseline
_TEXT = f'text-anchor="middle" font-family="system-ui, sans-serif" font-size="{FONT}" fill="#111">'


@lru_cache(maxsize=256)
def _style(kind: str, role: str | None, status: str) -> tuple[str, str, str, str, str]:
    """What a node's drawing takes from its kind, role and status, escaped and formatted
    once for all nodes alike: its title before and after its ref, its outline's shape,
    paint and stroke."""
    fill, stroke = FILLS.get(status, "#fff"), STROKES.get(status, "#333")
    words = "decision gate" if kind == "gate" else _WHO.get(role or "", "") or kind
    shape = "gate" if kind == "gate" else "user" if role == "user" else "box"
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
    return f"<title>{escape(words)} ", f" ({escape(status)})</title>", shape, paint, stroke


def _outline(shape: str, x: float, y: float, paint: str, stroke: str) -> str:
    """A gate is a hexagon (as in the DOT and Mermaid sources); a person's todo a stadium with
    a double border; an agent's todo a rounded rectangle."""
    if shape == "gate":
        cut, w, h = 16, NODE_W, NODE_H
        points = [
            (x + cut, y), (x + w - cut, y), (x + w, y + h / 2),
            (x + w - cut, y + h), (x + cut, y + h), (x, y + h / 2),
        ]  # fmt: skip
        return f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in points)}" {paint}'
    if shape == "user":
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" {_BOX} rx="{NODE_H / 2:.0f}" {paint}'
            f'<rect x="{x + _INSET:.1f}" y="{y + _INSET:.1f}" {_INNER} stroke="{stroke}" '
            'stroke-width="1"/>'
        )
    return f'<rect x="{x:.1f}" y="{y:.1f}" {_BOX} rx="6" {paint}'


_DASHES = {
    "depends_on": "",
    "successor": ' stroke-dasharray="6 4"',
    "gates": ' stroke-dasharray="2 3"',
}


def _node(n: dict[str, Any], x: float, y: float, href: str | None) -> str:
    """A node: its title, its outline (coloured by its status) and its label, centred, one
    tspan a line; a link to `href` when given. Text is escaped only when it holds markup."""
    head, tail, shape, paint, stroke = _style(n["kind"], n.get("role"), n["status"])
    label = n["label"]
    lines = _label(label)
    if _MARKUP(label):
        lines = [escape(line) for line in lines]
    cx = f"{x + NODE_W / 2:.1f}"
    text = f'<tspan x="{cx}" dy="0">{lines[0]}</tspan>' if lines else ""
    if len(lines) == 2:  # `_label` makes two at most
        text += f'<tspan x="{cx}" dy="{_LEADING}">{lines[1]}</tspan>'
    ty = y + NODE_H / 2 - (len(lines) - 1) * _LEADING / 2 + _BASELINE
    ref = n["ref"]
    if _MARKUP(ref):
        ref = escape(ref)
    drawn = (
        f"{head}{ref}{tail}{_outline(shape, x, y, paint, stroke)}"
        f'<text x="{cx}" y="{ty:.1f}" {_TEXT}{text}</text>'
    )
    if href:
        return f'<a href="{escape(href) if _MARKUP(href) else href}">{drawn}</a>'
    return f"<g>{drawn}</g>"


def to_svg_parts(
    g: dict[str, Any], node_href: dict[str, str] | None = None, known: Known | None = None
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
    known: Known | None = None,
) -> str | None:
    """Inline SVG of the graph (links to todo pages via `node_href`), or None if too large.
    `part`: what this drawing's ids end with and its title adds, when it is one of several
    on a page (`to_svg_parts`). `known`: see `layout`."""
    laid = _remembered_layout(g, known)
    if laid is None:
        return None
    pos, routes = laid
    if not pos:
        return ""
    ident, label = part
    pad = 16
    width = max(pos.values())[0] + NODE_W / 2 + pad * 2
    height = max(map(itemgetter(1), pos.values())) + NODE_H / 2 + pad * 2
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
    leaves, enters = _ports(g, pos)
    arrow = f' marker-end="url(#arrow{ident})"/>'
    for i, e in enumerate(g["edges"]):
        if e["from"] == e["to"]:
            continue
        path = _route(routes.get(i, []), pos, e, dx, dy, (leaves[i], enters[i]))
        out.append(
            f'<path d="{path}" fill="none" stroke="#555" stroke-width="1.4"'
            f"{_DASHES[e['kind']]}{arrow}"
        )
    hrefs = node_href or {}
    for n in g["nodes"]:
        x, y = pos[n["id"]]
        out.append(_node(n, x + dx - NODE_W / 2, y + dy - NODE_H / 2, hrefs.get(n["id"])))
    out.append("</svg>")
    return "\n".join(out)
