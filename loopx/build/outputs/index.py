"""The audience's front page: `index.json` (`loopx.index/v1`) and `index.html`, from the
goals' index rows (the goal projection `summary`)."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import AudienceContext, Output, Projection
from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR
from loopx.projections.index import index
from loopx.render.env import render

PAGE = "html/index.html"


def _page(ctx: AudienceContext, idx: dict[str, Any]) -> str:
    return render(
        PAGE,
        idx=idx,
        root="",
        generator=GENERATOR,
        audience=ctx.audience,
        project=ctx.project,
        search=ctx["search"],  # the goals whose search pieces the page loads
        updated_at=max((r["updated_at"] for r in idx["goals"]), default=None),
    )


PROJECTIONS = (
    Projection(
        "index",
        "audience",
        lambda ctx: index(ctx.rows, Lens(ctx.audience), ctx.hidden),
        (Output("index.json", lambda ctx, idx: idx), Output("index.html", _page, template=PAGE)),
    ),
)
