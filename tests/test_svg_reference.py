"""The SVG drawing is written for speed (issue 19: every goal's graph is drawn in a cold build,
and drawn again after each event); what it draws must be exactly what the plain code it
replaced drew (`tests/svg_reference.py`), byte for byte: every kind of node, role and status,
text that needs escaping and text that does not, labels wrapped and cut, edges with bends,
edge ends spread along a side, loops, parts."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopx.render import layered, svg
from tests import svg_reference

WORDS = ["a", "ledger", "reader", "(g00-t0002)", "x@users.noreply.github.com", "R&D", "<b>",
         '"quoted"', "it's", "naïve", "…", "supercalifragilisticexpialidocious"]  # fmt: skip
STATUSES = ["open", "active", "blocked", "done", "cancelled", "pending", "deferred", "approved",
            "rejected", "unheard-of", "<&>"]  # fmt: skip

labels = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join),
    st.lists(st.sampled_from(["ab", "c", " ", "  ", "\t", "\u00a0", "\u2003", "&", "<", "@x"])).map(
        "".join
    ),
    st.text(max_size=80),
)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, str]]:
    """A task graph of todos (an agent's, a person's, no role) and gates in every status,
    with labels, refs, links and a goal id that may hold markup; DAGs and cycles, repeated
    edges and loops, lone nodes; and links to some of its nodes."""
    count = draw(st.integers(1, 24))
    nodes = []
    for i in range(count):
        node = {
            "id": f"n{i}",
            "kind": draw(st.sampled_from(["todo", "todo", "gate", "other<kind>"])),
            "ref": draw(st.sampled_from([f"g-t{i}", f"r&{i}", f"<{i}>"])),
            "label": draw(labels),
            "status": draw(st.sampled_from(STATUSES)),
        }
        role = draw(st.sampled_from(["agent", "user", None, "absent"]))
        if role != "absent":
            node["role"] = role
        nodes.append(node)
    pairs = st.tuples(st.integers(0, count - 1), st.integers(0, count - 1))
    ends = draw(st.lists(pairs, max_size=3 * count))
    if draw(st.booleans()):
        ends = [(min(a, b), max(a, b)) for a, b in ends]
    kinds = st.sampled_from(["depends_on", "successor", "gates"])
    edges = [{"from": f"n{a}", "to": f"n{b}", "kind": draw(kinds)} for a, b in ends]
    goal = draw(st.sampled_from(["g00", "g<&>"]))
    linked = draw(st.lists(st.integers(0, count - 1), max_size=count))
    href = st.sampled_from(["todos/x.html", "", 'a?b=1&c="2"'])
    hrefs = {f"n{i}": draw(href) for i in linked}
    return {"source": {"goal_id": goal}, "nodes": nodes, "edges": edges}, hrefs


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_the_drawing_is_the_reference_one(drawn: tuple[dict[str, Any], dict[str, str]]) -> None:
    g, hrefs = drawn
    assert svg.to_svg_parts(g, hrefs) == svg_reference.to_svg_parts(g, hrefs)
    assert svg.to_svg_parts(g, None, known={}) == svg_reference.to_svg_parts(g, None, known={})
    part = ("-2", ", part 2 of 3")
    assert svg.to_svg(g, hrefs, part=part) == svg_reference.to_svg(g, hrefs, part=part)
    assert svg.laid_out_simply(g) == svg_reference.laid_out_simply(g)


@settings(max_examples=500, deadline=None)
@given(labels, st.sampled_from([24, 10, 3]))
def test_labels_are_wrapped_and_cut_as_the_reference_does(text: str, width: int) -> None:
    assert svg._label(text, width) == svg_reference._label(text, width)


def test_large_graphs_are_drawn_as_the_reference_does() -> None:
    """Graphs the size of the benchmark root's task graphs (~150 todos, long edges), in
    parts, with a person's todos and gates among them."""
    rng = random.Random(19)
    for _ in range(4):
        count = rng.randrange(100, 170)
        nodes = [
            {"id": f"t{i}", "kind": "gate" if i % 40 == 0 else "todo", "ref": f"g-t{i:04}",
             "label": f"Refactor ledger reader number {i} (g-t{i:04})",
             "status": rng.choice(STATUSES), "role": "user" if i % 25 == 0 else "agent"}
            for i in range(count)
        ]  # fmt: skip
        ends = {(rng.randrange(count), rng.randrange(count)) for _ in range(count)}
        edges = [{"from": f"t{a}", "to": f"t{b}", "kind": "depends_on"} for a, b in sorted(ends)]
        g = {"source": {"goal_id": "g"}, "nodes": nodes, "edges": edges}
        hrefs = {n["id"]: f"todos/{n['ref']}.html" for n in nodes if n["kind"] == "todo"}
        assert svg.to_svg_parts(g, hrefs) == svg_reference.to_svg_parts(g, hrefs)
        assert svg.laid_out_simply(g) == svg_reference.laid_out_simply(g)


def _graph(count: int, ends: list[tuple[int, int]]) -> dict[str, Any]:
    return {
        "nodes": [{"id": f"t{i}"} for i in range(count)],
        "edges": [{"from": f"t{a}", "to": f"t{b}"} for a, b in ends],
    }


def test_only_parts_that_may_be_dense_are_layered_to_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The page asks whether a part is laid out simply; a part of a few todos cannot be (its
    edges cannot cross SEGMENTS_MAX layers between them), so only the one large part is
    layered to answer."""
    asked: list[int] = []

    def dense(count: int, edges: list[tuple[int, int]]) -> bool:
        asked.append(count)
        return layered.dense(count, edges)

    monkeypatch.setattr(svg, "dense", dense)
    pairs = [(a, a + 1) for a in range(0, 60, 2)]
    complete = [(60 + j, 60 + i) for i in range(40) for j in range(i)]
    assert svg.laid_out_simply(_graph(100, [*pairs, *complete]))
    assert asked == [40]
    asked.clear()
    assert not svg.laid_out_simply(_graph(60, pairs))
    assert asked == []


def test_a_part_said_not_to_be_dense_never_is() -> None:
    """`_may_be_dense` answers without layering: its bound (edges × (nodes - 1) layers) must
    hold for the layering `dense` makes. The longest edges a part can have: a chain through
    all its todos, and edges from its first todo to its last, as many as reach the bound and
    a few more (past it, such parts are dense)."""
    seen = set()
    for count in range(2, 130):
        chain = [(i, i + 1) for i in range(count - 1)]
        most = layered.SEGMENTS_MAX // (count - 1) - len(chain)
        for extra in range(max(most - 2, 0), most + 3):
            ends = chain + [(0, count - 1)] * extra
            is_dense = layered.dense(count, ends)
            assert svg._may_be_dense(count, len(ends)) or not is_dense
            seen.add(is_dense)
    assert seen == {True, False}
