"""The task graph: `graph.json` (`loopx.graph/v1`), its Mermaid and DOT sources, and an HTML
page with the graph laid out as SVG."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections import graph as graph_mod
from loopx.render import graph as graph_source
from loopx.render.env import render
from loopx.render.svg import laid_out_simply, to_svg_parts

PAGE = "html/graph.html"


def _project(ctx: GoalContext) -> dict[str, Any]:
    return graph_mod.graph(ctx.state, ctx.lens())


def _mermaid(ctx: GoalContext, gr: dict[str, Any]) -> str:
    return str(ctx.once("graph.mmd", lambda: graph_source.to_mermaid(gr)))


def _page(ctx: GoalContext, gr: dict[str, Any]) -> str:
    st = ctx["status"]
    hrefs = {n["id"]: f"todos/{n['ref']}.html" for n in gr["nodes"] if n["kind"] == "todo"}
    return render(
        PAGE,
        gr=gr,
        drawings=to_svg_parts(gr, hrefs, known=ctx.layouts),
        simply=laid_out_simply(gr),
        mermaid=_mermaid(ctx, gr),
        root="../../",
        title=st["goal"]["title"],
        updated_at=st["goal"]["updated_at"],
        **ctx.common,
    )


PROJECTIONS = (
    Projection(
        "graph",
        "goal",
        _project,
        (
            Output("graph.json", lambda ctx, gr: gr),
            Output("graph.mmd", _mermaid),
            Output("graph.dot", lambda ctx, gr: graph_source.to_dot(gr)),
            Output("graph.html", _page, template=PAGE),
        ),
    ),
)
