"""The layered layout (`loopx.render.layered`): edges point down a layer at a time, nodes on
a layer never overlap, crossings the order can avoid are avoided, long edges run straight,
and the same graph always gives the same numbers."""

from __future__ import annotations

import json
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from loopx.render import layered
from tests import layered_reference

W, BEND, GAP, LAYER = 200.0, 20.0, 20.0, 72.0


def lay(count: int, edges: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
    return layered.lay_out(count, edges, width=W, dummy_width=BEND, gap=GAP, layer_gap=LAYER)


def crossings(routes: list[list[tuple[float, float]]]) -> int:
    """Crossing segments between the same two layers, from the drawing itself."""
    segments: dict[tuple[float, float], list[tuple[float, float]]] = {}
    for route in routes:
        for (x1, y1), (x2, y2) in zip(route, route[1:], strict=False):
            if y1 > y2:
                x1, y1, x2, y2 = x2, y2, x1, y1
            segments.setdefault((y1, y2), []).append((x1, x2))
    n = 0
    for seg in segments.values():
        for i in range(len(seg)):
            for j in range(i):
                n += (seg[i][0] - seg[j][0]) * (seg[i][1] - seg[j][1]) < 0
    return n


def random_graph(rng: random.Random, count: int, edges: int) -> list[tuple[int, int]]:
    out = []
    for _ in range(edges):
        a, b = rng.randrange(count), rng.randrange(count)
        if a != b:
            out.append((a, b))
    return out


def test_routes_run_from_source_to_target_one_layer_a_step() -> None:
    rng = random.Random(7)
    for _ in range(30):
        count = rng.randrange(2, 40)
        edges = random_graph(rng, count, rng.randrange(1, 60))  # cycles and repeats too
        positions, routes = lay(count, edges)
        assert len(positions) == count and len(routes) == len(edges)
        for (a, b), route in zip(edges, routes, strict=True):
            assert route[0] == positions[a] and route[-1] == positions[b]
            ys = [y for _, y in route]
            step = LAYER if ys[-1] > ys[0] else -LAYER
            assert ys != [ys[0]] * len(ys)
            assert all(y2 - y1 == step for y1, y2 in zip(ys, ys[1:], strict=False))


def test_nodes_and_bends_on_a_layer_keep_their_spacing() -> None:
    rng = random.Random(11)
    for _ in range(30):
        count = rng.randrange(2, 50)
        edges = random_graph(rng, count, rng.randrange(1, 80))
        positions, routes = lay(count, edges)
        things: dict[float, list[tuple[float, float]]] = {}
        for x, y in positions:
            things.setdefault(y, []).append((x, W))
        for route in routes:
            for x, y in route[1:-1]:
                things.setdefault(y, []).append((x, BEND))
        for row in things.values():
            row.sort()
            for (x1, w1), (x2, w2) in zip(row, row[1:], strict=False):
                assert x2 - x1 >= (w1 + w2) / 2 + GAP - 1e-9


def test_a_crossing_another_order_avoids_is_avoided() -> None:
    # Drawn in the order of a first search (x then y under a), a-y crosses b-x;
    # with y left of x nothing crosses.
    _, routes = lay(4, [(0, 2), (0, 3), (1, 2)])
    assert crossings(routes) == 0
    # A tree drawn by any search order is crossing-free; so are two trees sharing leaves
    # in the same order.
    tree = [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6), (4, 7), (6, 8), (0, 9)]
    assert crossings(lay(10, tree)[1]) == 0


def test_fewer_crossings_than_the_first_order() -> None:
    rng = random.Random(3)
    for _ in range(20):
        count = rng.randrange(10, 60)
        edges = random_graph(rng, count, count * 2)
        first = layered.ITERATIONS
        try:
            layered.ITERATIONS = 0
            unordered = crossings(lay(count, edges)[1])
        finally:
            layered.ITERATIONS = first
        assert crossings(lay(count, edges)[1]) <= unordered


def test_a_long_edge_runs_straight_past_a_chain() -> None:
    positions, routes = lay(4, [(0, 1), (1, 2), (2, 3), (0, 3)])
    bends = routes[3][1:-1]
    assert len(bends) == 2 and bends[0][0] == bends[1][0]
    assert [y for _, y in positions] == [0.0, LAYER, 2 * LAYER, 3 * LAYER]


def test_a_cycle_is_drawn_with_one_edge_reversed() -> None:
    positions, routes = lay(3, [(0, 1), (1, 2), (2, 0)])
    assert sorted(y for _, y in positions) == [0.0, LAYER, 2 * LAYER]
    assert routes[2][0] == positions[2] and routes[2][-1] == positions[0]


def test_a_lone_node_and_a_pair() -> None:
    assert lay(1, []) == ([(100.0, 0.0)], [])
    positions, routes = lay(2, [(0, 1)])
    assert positions == [(100.0, 0.0), (100.0, LAYER)]
    assert routes == [[(100.0, 0.0), (100.0, LAYER)]]


def test_the_same_graph_gives_the_same_numbers_in_any_process() -> None:
    rng = random.Random(5)
    edges = random_graph(rng, 80, 160)
    script = (
        "import json, sys; from loopx.render import layered; e = json.loads(sys.argv[1]); "
        "print(json.dumps(layered.lay_out(80, [tuple(x) for x in e], width=200, "
        "dummy_width=20, gap=20, layer_gap=72)))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", script, json.dumps(edges)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1
    assert json.loads(outs.pop()) == json.loads(json.dumps(lay(80, edges)))


def test_a_dense_graph_is_laid_out_simply_and_quickly() -> None:
    """Every todo depending on every earlier one: ~85,000 bends for 80 todos, which the full
    layout took 21 s over (grandalf 88 s). Past SEGMENTS_MAX pieces of edges it is laid out
    in time linear in its size: layers in the order given, each edge one straight piece."""
    import time

    n = 80
    edges = [(j, i) for i in range(n) for j in range(i)]
    assert layered.dense(n, edges)
    started = time.process_time()
    positions, routes = lay(n, edges)
    assert time.process_time() - started < 5
    assert [y for _, y in positions] == [k * LAYER for k in range(n)]
    assert all(len(r) == 2 for r in routes)
    assert routes[0] == [positions[0], positions[1]]
    # Within the budget, the full layout: a complete graph of 20 still has its bends.
    small = [(j, i) for i in range(20) for j in range(i)]
    assert not layered.dense(20, small)
    assert any(len(r) > 2 for r in lay(20, small)[1])


def test_the_page_says_when_a_part_is_laid_out_simply() -> None:
    from loopx.render import svg

    def graph(n: int, edges: list[tuple[int, int]]) -> dict:  # type: ignore[type-arg]
        return {
            "nodes": [{"id": f"t{i}"} for i in range(n)],
            "edges": [{"from": f"t{a}", "to": f"t{b}"} for a, b in edges],
        }

    complete = [(j, i) for i in range(40) for j in range(i)]
    assert svg.laid_out_simply(graph(40, complete))
    assert not svg.laid_out_simply(graph(40, [(i, i + 1) for i in range(39)]))
    shifted = [(a + 3, b + 3) for a, b in complete]  # a second part beside a small one
    assert svg.laid_out_simply(graph(43, [(0, 1), (1, 2), *shifted]))


# The ordering and the coordinates are written for speed (issue 19); the layout they give must
# be exactly the one of the plain loops they replaced (`tests/layered_reference.py`), to the
# last bit of every float: layouts are kept between builds and pages must not change.

KW = {"width": W, "dummy_width": BEND, "gap": GAP, "layer_gap": LAYER}


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    """Small graphs of every kind: DAGs (edges to later nodes), cycles, repeated edges, lone
    nodes, a node with many neighbours (weighted medians of four and more)."""
    count = draw(st.integers(1, 30))
    pairs = st.tuples(st.integers(0, count - 1), st.integers(0, count - 1))
    edges = [(a, b) for a, b in draw(st.lists(pairs, max_size=70)) if a != b]
    if draw(st.booleans()):
        edges = [(min(a, b), max(a, b)) for a, b in edges]
    return count, edges


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_the_layout_is_the_reference_one(graph: tuple[int, list[tuple[int, int]]]) -> None:
    count, edges = graph
    assert repr(layered.lay_out(count, edges, **KW)) == repr(
        layered_reference.lay_out(count, edges, **KW)
    )


def test_large_graphs_are_laid_out_as_the_reference_does() -> None:
    """Graphs the size of the benchmark root's task graphs (~150 todos, long edges)."""
    rng = random.Random(19)
    for _ in range(6):
        count = rng.randrange(100, 170)
        edges = [(a, b) for a, b in random_graph(rng, count, count * 6 // 5) if a < b]
        assert repr(layered.lay_out(count, edges, **KW)) == repr(
            layered_reference.lay_out(count, edges, **KW)
        )
