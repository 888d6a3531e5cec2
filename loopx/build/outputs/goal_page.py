"""The goal page `index.html`: its status, and links to the goal's other files (each
projection that declares `links`, in registry order)."""

from __future__ import annotations

from loopx.build.registry import GoalContext, Output, Projection
from loopx.render.env import render

PAGE = "html/goal.html"


def _page(ctx: GoalContext, _: None) -> str:
    return render(PAGE, st=ctx["status"], extra_links=ctx.links(), root="../../", **ctx.common)


PROJECTIONS = (
    Projection("goal", "goal", lambda ctx: None, (Output("index.html", _page, template=PAGE),)),
)
