"""Single projections on demand (the CLI's `workbench`, `review`, `graph`), built exactly as
the build builds them, so a committed workbench matches the build byte for byte."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopx.model.ids import visible_to
from loopx.privacy.audience import Lens
from loopx.projections import graph as graph_mod
from loopx.projections.review import review_packet
from loopx.projections.workbench import with_header, workbench
from loopx.render.env import render
from loopx.state.entities import GoalState


def visible_goals(goals: dict[str, str], audience: str) -> set[str]:
    """Goal ids (with their visibility) this audience may see."""
    return {g for g, vis in goals.items() if visible_to(vis, audience)}


def workbench_markdown(
    state: GoalState,
    *,
    head: str | None,
    visible: set[str],
    read_blob: Any = None,
    audience: str = "team",
) -> str:
    wb = workbench(state, Lens(audience, read_blob), head=head, visible_goals=visible)
    return with_header(wb, render("markdown/workbench.md.j2", wb=wb))


def review(
    state: GoalState,
    *,
    head: str | None,
    visible: set[str],
    audience: str,
    read_blob: Any = None,
    todo_id: str | None = None,
    since: GoalState | None = None,
) -> tuple[dict[str, Any], str]:
    rp = review_packet(
        state,
        Lens(audience, read_blob),
        head=head,
        visible_goals=visible,
        todo_id=todo_id,
        since=since,
    )
    return rp, render("markdown/review.md.j2", rp=rp)


def task_graph(state: GoalState, audience: str, read_blob: Any = None) -> dict[str, Any]:
    return graph_mod.graph(state, Lens(audience, read_blob))


def scan_public_output(
    store: Any, name: str, data: bytes, goal_ids: Iterable[str] | None = None
) -> None:
    """The boundary scan of one public artifact before it is printed or written: credentials,
    personal and machine data, and the non-public text of the goals it was projected from
    (`goal_ids`; every goal when None). Raises `BoundaryViolation`, naming position and kind,
    never the text."""
    from loopx.build.artifacts import Artifact, Site
    from loopx.build.boundary import enforce, non_public_strings, project_names, scan_public
    from loopx.build.pipeline import gather
    from loopx.engine.core import load_state

    goals: dict[str, GoalState] = {}
    if store is not None and goal_ids is None:
        goals = gather(store)
    elif store is not None:
        for goal_id in sorted(set(goal_ids or ())):
            state = load_state(store, goal_id).state
            if state is not None:
                goals[goal_id] = state
    site = Site()
    site.add(Artifact(name, data, "public"))
    forbidden = non_public_strings(goals)
    root = getattr(store, "root", None)
    if root is not None:
        forbidden = forbidden.with_names(project_names(root))
    enforce(scan_public(site, forbidden), goals, forbidden)
