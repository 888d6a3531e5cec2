"""The review packet (team and private): `review.json` (`loopx.review/v1`), `review.md`, and
the Markdown as an HTML page."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections.base import GENERATOR
from loopx.projections.review import review_packet
from loopx.render.env import render
from loopx.render.markdown import to_html

MARKDOWN = "markdown/review.md.j2"
PAGE = "html/document.html"


def _project(ctx: GoalContext) -> dict[str, Any]:
    return review_packet(ctx.state, ctx.lens(), head=ctx.head, visible_goals=ctx.visible_goals)


def markdown(ctx: GoalContext, rp: dict[str, Any]) -> str:
    return str(ctx.once("review.md", lambda: render(MARKDOWN, rp=rp)))


def _page(ctx: GoalContext, rp: dict[str, Any]) -> str:
    return document(ctx, "review", "Review packet", markdown(ctx, rp))


def document(ctx: GoalContext, name: str, label: str, text: str) -> str:
    """The Markdown file `<name>.md` of a goal as an HTML page (`<name>.html`)."""
    st = ctx["status"]
    body = text.split("\n", 1)[1] if text.startswith("<!-- loopx:") else text
    return render(
        PAGE,
        title=f"{label} · {st['goal']['title']}",
        body=to_html(body),
        goal_id=st["source"]["goal_id"],
        goal_href="index.html",
        self_href=f"{name}.html",
        label=label.lower(),
        source_href=f"{name}.md",
        revision=st["source"]["revision"],
        updated_at=st["goal"]["updated_at"],
        root="../../",
        generator=GENERATOR,
        audience=ctx.audience,
        project=ctx.project,
    )


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
