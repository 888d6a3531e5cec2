"""The faster Sugiyama layout (`loopx.render.sugiyama`) places every node and routes every
edge exactly where grandalf's own `SugiyamaLayout` on a `graph_core` does, float for float,
on graphs of every kind the task graph can hold (chains, fans, long edges across ranks,
cycles, self-loops, repeated edges, several parts) and on random ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from loopx.render import svg


def _stock() -> tuple[Any, Any, Any, Any]:
    from grandalf.graphs import Edge, Vertex, graph_core
    from grandalf.layouts import SugiyamaLayout

    return Edge, Vertex, graph_core, SugiyamaLayout


def _both(monkeypatch: pytest.MonkeyPatch, g: dict[str, Any]) -> tuple[Any, Any]:
    fast = svg._layout(g)  # first: grandalf imported with its numpy path off, as drawn
    with monkeypatch.context() as m:
        m.setattr(svg, "_grandalf", _stock)
        stock = svg._layout(g)
    return fast, stock


def _graph(n: int, pairs: list[tuple[int, int]]) -> dict[str, Any]:
    return {
        "nodes": [{"id": f"n{i}"} for i in range(n)],
        "edges": [{"from": f"n{a}", "to": f"n{b}"} for a, b in pairs],
    }


SHAPES = {
    "one node": _graph(1, []),
    "chain": _graph(6, [(i, i + 1) for i in range(5)]),
    "fan in and out": _graph(9, [(0, i) for i in range(1, 8)] + [(i, 8) for i in range(1, 8)]),
    "long edges": _graph(7, [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 5), (0, 6), (6, 4)]),
    "cycle": _graph(5, [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 1)]),
    "self-loop and repeated edge": _graph(4, [(0, 0), (0, 1), (0, 1), (1, 2), (2, 3)]),
    "parts": _graph(8, [(0, 1), (2, 3), (3, 4), (5, 6)]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_kind_of_graph_is_laid_out_as_grandalf_does(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    fast, stock = _both(monkeypatch, SHAPES[name])
    assert fast == stock and fast is not None


def test_random_graphs_are_laid_out_as_grandalf_does(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = random.Random(19)
    for _ in range(150):
        n = rnd.randint(2, 70)
        pairs = []
        for _ in range(rnd.randint(n // 2, 2 * n)):
            a, b = rnd.randrange(n), rnd.randrange(n)
            if a > b and rnd.random() < 0.9:  # mostly forward: a few back edges make cycles
                a, b = b, a
            pairs.append((a, b))
        fast, stock = _both(monkeypatch, _graph(n, pairs))
        assert fast == stock
