"""Badges: `badge.svg` to put in a README and `badge.json` for a shields.io endpoint, per goal
(from its index row, the `summary` projection) and per audience (over its goals)."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import ROW, AudienceContext, GoalContext, Output, Projection
from loopx.projections import badge as badge_mod
from loopx.projections.index import goal_summary
from loopx.render.badge import to_svg

TEMPLATE = "badge.svg"


def _summary(ctx: GoalContext) -> dict[str, Any]:
    st = ctx["status"]
    return goal_summary(ctx.state, ctx.lens(), st["attention"]["state"], st["attention"]["reasons"])


def _project_badge(ctx: AudienceContext) -> dict[str, Any]:
    return badge_mod.project_badge(ctx["index"]["goals"], ctx.project.name)


def _outputs(doc: Any) -> tuple[Output, ...]:
    """`badge.json` and `badge.svg` of the badge document `doc(data)`."""
    return (
        Output("badge.json", lambda ctx, data: doc(data), schema=badge_mod.SCHEMA),
        Output("badge.svg", lambda ctx, data: to_svg(doc(data)), template=TEMPLATE),
    )


PROJECTIONS = (
    Projection(ROW, "goal", _summary, _outputs(badge_mod.goal_badge)),
    Projection("badge", "audience", _project_badge, _outputs(lambda doc: doc)),
)
