"""Atom feeds of what changed: `feed.xml` per goal, and one per audience over the goals it may
see."""

from __future__ import annotations

from functools import partial
from typing import Any

from loopx.build.registry import AudienceContext, Context, GoalContext, Output, Projection
from loopx.privacy.audience import Lens
from loopx.projections import feed as feed_mod
from loopx.projections.base import GENERATOR
from loopx.render.env import render
from loopx.state.entities import GoalState

TEMPLATE = "feed.xml"
Changes = dict[str, Any]  # entries, and the count of changes the audience may not see


def atom(
    ctx: Context, changes: Changes, *, goal: str | None, title: str, within: str, since: str
) -> str:
    """An Atom feed of `entries`. Links are relative to the feed; in the public partition with
    a configured `base_url` they are resolved against it (xml:base) and the feed names itself."""
    project = ctx.project
    base = f"{project.base_url.rstrip('/')}/{within}" if project.base_url else None
    public = ctx.audience == "public" and base is not None
    fd = feed_mod.feed(
        changes,
        feed_id=f"urn:loopx:{goal or 'project'}:{ctx.audience}:feed",
        title=title,
        since=since,
    )
    return render(
        TEMPLATE,
        fd=fd,
        base=base if public else None,
        self_href="feed.xml" if public else None,
        page="index.html",
        author=project.name,
        generator=GENERATOR,
    )


def _goal_feed(ctx: GoalContext, changes: Changes) -> str:
    goal = ctx.state.goal_id
    title = f"{ctx['status']['goal']['title']} · {ctx.project.name}"
    since = ctx.state.created_at  # a goal with no change yet: since it was created
    return atom(ctx, changes, goal=goal, title=title, within=f"goals/{goal}/", since=since)


def _audience_entries(ctx: AudienceContext) -> Changes:
    """Every goal's newest entries (the feed shows the newest `FEED_LIMIT` of all, so no
    other entry of a goal can be among them), how many changes there are and how many the
    audience may not see."""
    lens = Lens(ctx.audience, ctx.read_blob)
    per_goal = [
        ctx.part(g, "feed", partial(_newest, ctx.goals[g], lens)) for g in sorted(ctx.goals)
    ]
    return {
        "entries": [{**e, "order": tuple(e["order"])} for p in per_goal for e in p["entries"]],
        "count": sum(p["count"] for p in per_goal),
        "hidden": sum(p["hidden"] for p in per_goal),
    }


def _newest(state: GoalState, lens: Lens) -> Changes:
    """One goal's part of the audience feed, as JSON data (its `order` a list)."""
    changes = feed_mod.goal_entries(state, lens, f"goals/{state.goal_id}/")
    ordered = sorted(changes["entries"], key=lambda e: e["order"], reverse=True)
    return {
        "entries": [{**e, "order": list(e["order"])} for e in ordered[: feed_mod.FEED_LIMIT]],
        "count": len(ordered),
        "hidden": changes["hidden"],
    }


def _first(ctx: AudienceContext) -> str:
    """When the first goal this audience may see was created (the epoch without one)."""
    return min((g.created_at for g in ctx.goals.values()), default=feed_mod.EPOCH)


PROJECTIONS = (
    Projection(
        "feed",
        "goal",
        lambda ctx: feed_mod.goal_entries(ctx.state, ctx.lens(), ""),
        (Output("feed.xml", _goal_feed, template=TEMPLATE),),
    ),
    Projection(
        "feed",
        "audience",
        _audience_entries,
        (
            Output(
                "feed.xml",
                lambda ctx, changes: atom(
                    ctx, changes, goal=None, title=ctx.project.name, within="", since=_first(ctx)
                ),
                template=TEMPLATE,
            ),
        ),
    ),
)
