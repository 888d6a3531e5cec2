"""Project and render every artifact of a build, in memory (gather before write), through
the projection registry (`loopx.build.registry`; the projections are `loopx.build.outputs`).

Layout of a build folder:

    manifest.json
    <audience>/index.html, index.json, badge.{json,svg}, feed.xml, search.js, style.css
    <audience>/goals/<goal>/index.html, status.json, graph.{json,mmd,dot,html},
                            workbench.{md,html}, feed.xml, badge.{json,svg},
                            search.json, search-index.js, todos/<todo>.html
    team|private only:      review.{json,md,html}, handoffs/<todo>.{md,json}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from loopx.build.artifacts import AnyArtifact, Artifact, Site
from loopx.build.registry import ROW, AudienceContext, File, GoalContext
from loopx.build.validate import check
from loopx.model.config import ProjectConfig
from loopx.model.ids import visible_to
from loopx.privacy.audience import BlobReader
from loopx.state.entities import GoalState


def add_files(
    site: Site, files: Iterable[File | AnyArtifact], audience: str, goal: str | None
) -> None:
    """Add rendered files (and files carried over as they are) to the site; with
    `site.validate`, each JSON document is checked against its schema first."""
    for f in files:
        if not isinstance(f, File):
            site.add(f)  # carried over: made of the same inputs by an earlier build
            continue
        if site.validate and f.doc is not None and f.schema is not None:
            check(f.schema, f.doc, f.path)
        site.add(Artifact(f.path, f.data, audience, f.schema, goal, f.key))


def goal_artifacts(
    state: GoalState,
    audience: str,
    *,
    head: str | None,
    visible_goals: set[str],
    read_blob: BlobReader | None,
    validate: bool,
    project: ProjectConfig | None = None,
    carried: dict[str, AnyArtifact] | None = None,
    layouts: Any = None,
) -> tuple[list[AnyArtifact], dict[str, Any]]:
    """Every artifact of one goal for one audience, and its index row (a unit of work that
    can run in another process and be cached). Private text is read only for `private`.

    `carried`: the files of this unit's last build, by path. Given (and but for the private
    audience, whose text is read from the blob store), files whose output declares its
    inputs are keyed by them, and one whose inputs are those of the carried file of the same
    path is that file, not made again (`Context.carry`). `layouts`: task-graph layouts by
    shape to take and fill (`render.svg.Known`)."""
    ctx = GoalContext(
        audience=audience,
        head=head,
        project=project or ProjectConfig(),
        read_blob=read_blob if audience == "private" else None,
        state=state,
        visible_goals=visible_goals,
        layouts=layouts,
    )
    if carried is not None and audience != "private":
        ctx.carry = _carrier(carried, validate)
    site = Site(head=head, validate=validate)
    add_files(site, ctx.files(), audience, state.goal_id)
    return list(site.artifacts.values()), ctx[ROW]


def _carrier(
    carried: dict[str, AnyArtifact], validate: bool
) -> Callable[[str, str], AnyArtifact | None]:
    """The carried file of a path made of the same inputs (with `validate`, never a JSON
    document: it is made again, and checked against its schema)."""

    def carry(path: str, key: str) -> AnyArtifact | None:
        held = carried.get(path)
        if held is None or held.key != key or (validate and held.schema is not None):
            return None
        return held

    return carry


def audience_artifacts(
    site: Site,
    audience: str,
    rows: list[dict[str, Any]],
    hidden: dict[str, int],
    project: ProjectConfig | None = None,
    goals: dict[str, GoalState] | None = None,
    read_blob: BlobReader | None = None,
    parts: dict[str, dict[str, Any]] | None = None,
) -> None:
    """The audience's own files (index, badge, feed, search, stylesheet), from the index rows
    of the goals it may see, and those goals (`goals`). `parts`: what the files take from
    each goal, carried over (`AudienceContext.parts`; filled in with what is made)."""
    ctx = AudienceContext(
        audience=audience,
        head=site.head,
        project=project or ProjectConfig(),
        read_blob=read_blob if audience == "private" else None,
        goals=goals or {},
        hidden=hidden,
        rows=rows,
        parts=parts if parts is not None else {},
    )
    add_files(site, ctx.files(), audience, None)


def visibility_split(goals: dict[str, GoalState], audience: str) -> tuple[set[str], dict[str, int]]:
    """The goals this audience may see, and how many of each visibility it may not."""
    visible = {g for g, st in goals.items() if visible_to(st.visibility, audience)}
    hidden = Counter(st.visibility for g, st in goals.items() if g not in visible)
    return visible, dict(hidden)
