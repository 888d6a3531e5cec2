"""The review packet (team and private): `review.json` (`loopx.review/v1`), `review.md`, and
`review.html`, a page that shows what the Markdown shows, made from the packet by its own
template (no Markdown renderer runs in a build)."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections.review import review_packet
from loopx.render.env import render

MARKDOWN = "markdown/review.md.j2"
PAGE = "html/review.html"


def _project(ctx: GoalContext) -> dict[str, Any]:
    return review_packet(ctx.state, ctx.lens(), head=ctx.head, visible_goals=ctx.visible_goals)


def markdown(ctx: GoalContext, rp: dict[str, Any]) -> str:
    return str(ctx.once("review.md", lambda: render(MARKDOWN, rp=rp)))


def _page(ctx: GoalContext, rp: dict[str, Any]) -> str:
    st = ctx["status"]
    return render(PAGE, rp=rp, updated_at=st["goal"]["updated_at"], root="../../", **ctx.common)


PROJECTIONS = (
    Projection(
        "review",
        "goal",
        _project,
        (
            Output("review.json", lambda ctx, rp: rp),
            Output("review.md", markdown, template=MARKDOWN),
            Output("review.html", _page, template=PAGE),
        ),
        audiences=frozenset({"team", "private"}),
        links=lambda rp: [{"href": "review.html", "label": "Review packet"}],
    ),
)
