"""The task-graph layouts a unit's drawings used, kept in the build memo by shape.

A layout depends only on its graph's shape (node ids, edge ends; `render.svg.layout`), and
most events change a status, not a shape: a goal rendered again after one event takes the
layouts of its last build instead of laying out every connected part again (a Sugiyama
layout each). What the memo holds is checked to be a layout of that very shape (every node
placed, every route made of points) before it is used; anything else is laid out again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, MutableMapping
from typing import Any

from loopx.render.svg import Layout, Shape


class UnitLayouts(MutableMapping[Shape, "Layout | None"]):
    """`render.svg.Known` for one unit: looks in what its last build used (`seed`), and
    records in `used` every layout this build's drawings take or make."""

    def __init__(self, seed: dict[Shape, Layout] | None = None) -> None:
        self.seed = seed or {}
        self.used: dict[Shape, Layout | None] = {}

    def __getitem__(self, shape: Shape) -> Layout | None:
        if shape not in self.used:
            self.used[shape] = self.seed[shape]
        return self.used[shape]

    def __setitem__(self, shape: Shape, laid: Layout | None) -> None:
        self.used[shape] = laid

    def __delitem__(self, shape: Shape) -> None:
        self.used.pop(shape, None)
        self.seed.pop(shape, None)

    def __contains__(self, shape: object) -> bool:
        return shape in self.used or shape in self.seed

    def __iter__(self) -> Iterator[Shape]:
        return iter({**self.seed, **self.used})

    def __len__(self) -> int:
        return len({**self.seed, **self.used})


def to_json(used: dict[Shape, Layout | None]) -> list[Any]:
    """The layouts as the memo keeps them: [node ids, edge ends, positions, routes] each,
    in shape order (a graph too large to lay out is not kept: telling that costs nothing)."""
    out = []
    for (nodes, edges), laid in sorted(used.items()):
        if laid is not None:
            positions, routes = laid
            out.append([list(nodes), [list(e) for e in edges], positions, _routes_out(routes)])
    return out


def _routes_out(routes: dict[int, list[tuple[float, float]]]) -> dict[str, Any]:
    return {str(i): points for i, points in sorted(routes.items())}


def from_json(raw: Any) -> dict[Shape, Layout]:
    """The layouts of `to_json`, each checked to fit its shape; the others are dropped."""
    found: dict[Shape, Layout] = {}
    for item in raw if isinstance(raw, list) else ():
        parsed = _parse(item)
        if parsed is not None:
            found[parsed[0]] = parsed[1]
    return found


def _parse(item: Any) -> tuple[Shape, Layout] | None:
    if not isinstance(item, list) or len(item) != 4:
        return None
    nodes, edges, positions, routes = item
    if not (isinstance(nodes, list) and all(isinstance(n, str) for n in nodes)):
        return None
    if not (isinstance(edges, list) and all(_pair(e) for e in edges)):
        return None
    if not isinstance(positions, dict) or set(positions) != set(nodes):
        return None
    placed = {n: _point(p) for n, p in positions.items()}
    if not isinstance(routes, dict) or any(p is None for p in placed.values()):
        return None
    laid: dict[int, list[tuple[float, float]]] = {}
    for i, points in routes.items():
        index = int(i) if isinstance(i, str) and i.isdigit() else -1
        route = [_point(p) for p in points] if isinstance(points, list) else [None]
        if not 0 <= index < len(edges) or any(p is None for p in route):
            return None
        laid[index] = [p for p in route if p is not None]
    shape = (tuple(nodes), tuple((a, b) for a, b in edges))
    return shape, ({n: p for n, p in placed.items() if p is not None}, laid)


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _point(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    x, y = value
    if not all(type(v) in (int, float) and math.isfinite(v) for v in (x, y)):
        return None
    return (float(x), float(y))
