"""The workbench: `workbench.md` to commit for review, and its HTML page. It exists for every
audience (a public one is what an open-source repository commits)."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections.workbench import with_header, workbench
from loopx.render.env import render

MARKDOWN = "markdown/workbench.md.j2"
PAGE = "html/workbench.html"


def _project(ctx: GoalContext) -> dict[str, Any]:
    return workbench(ctx.state, ctx.lens(), head=ctx.head, visible_goals=ctx.visible_goals)


def _markdown(ctx: GoalContext, wb: dict[str, Any]) -> str:
    return with_header(wb, render(MARKDOWN, wb=wb))


def _page(ctx: GoalContext, wb: dict[str, Any]) -> str:
    lens = ctx.lens()
    return render(
        PAGE,
        wb=wb,
        reasons=ctx["status"]["attention"]["reasons"],
        pages={t for t, todo in ctx.state.todos.items() if lens.sees(todo.visibility)},
        root="../../",
        **ctx.common,
    )


PROJECTIONS = (
    Projection(
        "workbench",
        "goal",
        _project,
        (
            Output("workbench.md", _markdown, template=MARKDOWN),
            Output("workbench.html", _page, template=PAGE),
        ),
        links=lambda wb: [{"href": "workbench.html", "label": "Workbench"}],
    ),
)
