"""The task graph drawn for people: distinct shapes for agent todos, a person's todos and
gates (in the SVG, Mermaid and DOT alike), readable text, and edges that meet a node at
distinct points instead of piling onto one."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from loopx.render.graph import to_dot, to_mermaid
from loopx.render.svg import FONT, to_svg, to_svg_parts
from tests.conftest import run_cli

NS = "{http://www.w3.org/2000/svg}"


def _graph() -> dict[str, Any]:
    def todo(ref: str, role: str = "agent") -> dict[str, Any]:
        return {"id": f"t_{ref}", "kind": "todo", "ref": ref, "label": f"Todo {ref}",
                "status": "open", "role": role}  # fmt: skip

    nodes = [todo("a"), todo("b"), todo("c"), todo("d"), todo("sign", "user")]
    nodes.append({"id": "g_go", "kind": "gate", "ref": "go", "label": "Go?", "status": "pending"})
    edges = [{"from": f"t_{x}", "to": "t_d", "kind": "depends_on"} for x in "abc"]
    edges += [
        {"from": "t_d", "to": "t_sign", "kind": "depends_on"},
        {"from": "g_go", "to": "t_sign", "kind": "gates"},
    ]
    return {"source": {"goal_id": "g"}, "nodes": nodes, "edges": edges}


def test_shapes_differ_by_kind_and_role() -> None:
    svg = ET.fromstring(to_svg(_graph()) or "")
    shapes = {}
    for a in svg.iter(f"{NS}a"):
        ref = a.find(f"{NS}title").text  # type: ignore[union-attr]
        shapes[ref] = [child.tag.removeprefix(NS) for child in a if child.tag != f"{NS}title"]
    for g in svg.iter(f"{NS}g"):
        title = g.find(f"{NS}title")
        if title is not None:
            shapes[title.text] = [c.tag.removeprefix(NS) for c in g if c.tag != f"{NS}title"]
    assert shapes["an agent's todo a (open)"] == ["rect", "text"]
    assert shapes["a person's todo sign (open)"] == ["rect", "rect", "text"]  # double border
    assert shapes["decision gate go (pending)"] == ["polygon", "text"]
    assert {t.get("font-size") for t in svg.iter(f"{NS}text")} == {str(FONT)}
    assert FONT >= 14
    assert '  t_sign(["sign: Todo sign"]):::open' in to_mermaid(_graph())
    assert '  g_go{{"go: Go?"}}:::pending' in to_mermaid(_graph())
    dot = to_dot(_graph())
    assert (
        't_sign [label="sign: Todo sign", fillcolor="#eef4ff", style="rounded,filled,bold", ' in dot
    )
    assert "shape=hexagon" in dot


def test_edges_into_one_node_end_at_distinct_points() -> None:
    svg = ET.fromstring(to_svg(_graph()) or "")
    ends = []
    for path in svg.iter(f"{NS}path"):
        if path.get("marker-end"):
            numbers = re.findall(r"-?\d+(?:\.\d+)?", path.get("d", ""))
            ends.append((float(numbers[-2]), float(numbers[-1])))
    assert len(ends) == 5
    assert len(set(ends)) == 5  # no two arrowheads on one point (three meet node d)


def test_a_page_draws_each_connected_part_apart_so_it_can_wrap() -> None:
    g = _graph()
    g["nodes"].append({"id": "t_alone", "kind": "todo", "ref": "alone", "label": "Alone",
                       "status": "open", "role": "agent"})  # fmt: skip
    parts = to_svg_parts(g, {"t_a": "todos/a.html"})
    assert parts is not None and len(parts) == 2
    drawn = [ET.fromstring(p) for p in parts]
    titles = [d.find(f"{NS}title").text for d in drawn]  # type: ignore[union-attr]
    assert titles == ["Task graph of g, part 1 of 2", "Task graph of g, part 2 of 2"]
    ids = [e.get("id") for d in drawn for e in d.iter() if e.get("id")]
    assert len(ids) == len(set(ids)) == 4  # a title and an arrowhead each, none shared
    for d, k in zip(drawn, (1, 2), strict=True):
        ends = {p.get("marker-end") for p in d.iter(f"{NS}path") if p.get("marker-end")}
        assert ends <= {f"url(#arrow-{k})"}
    nodes = [len([*d.iter(f"{NS}a")]) + len([*d.iter(f"{NS}g")]) for d in drawn]
    assert nodes == [6, 1]
    assert int(drawn[1].get("width") or 0) < 390  # a lone todo fits a phone
    # one part: the same drawing as the whole graph, under its own ids
    whole = to_svg(_graph()) or ""
    assert to_svg_parts(_graph()) == [
        whole.replace('"graph-title"', '"graph-title-1"').replace("#arrow)", "#arrow-1)")
        .replace('id="arrow"', 'id="arrow-1"')
    ]  # fmt: skip


def test_ids_that_sanitise_alike_stay_distinct_nodes_and_edges(project: Path) -> None:
    """`a-b`, `a.b` and `a_b` all sanitise to `t_a_b`: each keeps a node of its own (in order
    of the todos, one `_` more each), and every edge names the node of its own entity."""
    r = ["--root", str(project), "--goal-id", "demo"]
    for tid in ("a-b", "a.b", "a_b"):
        assert run_cli(["todo", "add", *r, "--todo-id", tid, "--title", tid]).exit_code == 0
    assert run_cli(["todo", "update", *r, "--todo-id", "a_b", "--depends-on", "a.b"]).exit_code == 0
    gate = ["gate", "open", *r, "--gate-id", "a-b", "--question", "Q?", "--authority", "m"]
    assert run_cli([*gate, "--blocks", "a-b"]).exit_code == 0
    graph = run_cli(["graph", *r, "--format", "json"]).json()
    ids = {n["ref"] if n["kind"] == "todo" else "gate": n["id"] for n in graph["nodes"]}
    assert ids == {"a-b": "t_a_b", "a.b": "t_a_b_", "a_b": "t_a_b__", "gate": "g_a_b"}
    assert sorted((e["from"], e["to"], e["kind"]) for e in graph["edges"]) == [
        ("g_a_b", "t_a_b", "gates"),
        ("t_a_b_", "t_a_b__", "depends_on"),
    ]


def test_a_layout_is_remembered_by_the_graphs_shape_alone() -> None:
    """`loopx serve` draws a goal's graph again after every event: a status that changed
    draws the same layout again without laying it out, another shape is laid out anew."""
    from loopx.render import svg

    svg._laid_out.cache_clear()
    first = to_svg(_graph())
    changed = _graph()
    changed["nodes"][0]["status"] = "done"
    second = to_svg(changed)
    assert svg._laid_out.cache_info().misses == 1 and svg._laid_out.cache_info().hits == 1
    assert first != second and first is not None and second is not None
    assert re.findall(r'<rect x="[^"]+" y="[^"]+"', first) == re.findall(
        r'<rect x="[^"]+" y="[^"]+"', second
    )
    grown = _graph()
    grown["edges"].append({"from": "t_a", "to": "t_b", "kind": "depends_on"})
    to_svg(grown)
    assert svg._laid_out.cache_info().misses == 2


def test_parts_shaped_alike_under_other_ids_are_laid_out_once() -> None:
    """The layout never looks at an id's text: a graph whose ids are all renamed takes the
    layout made for the first (one Sugiyama layout), placed under its own ids, and it is
    the very layout a direct run of the layout gives."""
    from loopx.render import svg

    svg._laid_out.cache_clear()
    first = _graph()
    renamed = _graph()
    rename = {n["id"]: f"x{i}_{n['id']}" for i, n in enumerate(renamed["nodes"])}
    for n in renamed["nodes"]:
        n["id"] = rename[n["id"]]
    for e in renamed["edges"]:
        e["from"], e["to"] = rename[e["from"]], rename[e["to"]]
    a, b = svg.layout(first), svg.layout(renamed)
    assert svg._laid_out.cache_info().misses == 1 and svg._laid_out.cache_info().hits == 1
    assert a is not None and b is not None
    assert b[0] == {rename[n]: p for n, p in a[0].items()} and b[1] == a[1]
    assert list(b[0]) == [rename[n] for n in a[0]]
    assert a == svg._layout(first) and b == svg._layout(renamed)
