"""Handoff digests (team and private): one `handoffs/<todo>.json` (`loopx.handoff/v1`) and
`.md` per todo with a note."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection
from loopx.projections import handoff
from loopx.render.handoff import render_digest_markdown

Digests = dict[str, dict[str, Any]]


def _project(ctx: GoalContext) -> Digests:
    facts = {"head": ctx.head} if ctx.head else None
    return handoff.handoff_digests(
        ctx.state, audience=ctx.audience, read_blob=ctx.read_blob, workspace_facts=facts
    )


def _links(digests: Digests) -> list[dict[str, str]]:
    return [{"href": f"handoffs/{t}.md", "label": f"Handoff: {t}"} for t in sorted(digests)]


PROJECTIONS = (
    Projection(
        "handoffs",
        "goal",
        _project,
        (
            Output("handoffs/*.json", lambda ctx, digests: dict(digests)),
            Output(
                "handoffs/*.md",
                lambda ctx, digests: {t: render_digest_markdown(d) for t, d in digests.items()},
                template="handoff/digest.md.j2",
            ),
        ),
        audiences=frozenset({"team", "private"}),
        links=_links,
    ),
)
