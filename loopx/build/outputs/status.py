"""`status.json`: one goal as one audience may see it (`loopx.status/v1`); the other pages of
the goal take its title, attention and source from here."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections import handoff
from loopx.projections.status import status


def _project(ctx: GoalContext) -> dict[str, Any]:
    pending = handoff.pending_handoffs(ctx.state, audience=ctx.audience)
    return status(
        ctx.state, ctx.lens(), head=ctx.head, visible_goals=ctx.visible_goals, handoffs=pending
    )


PROJECTIONS = (
    Projection("status", "goal", _project, (Output("status.json", lambda ctx, st: st),)),
)
