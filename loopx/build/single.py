"""Single projections on demand (the CLI's `workbench`, `review`, `graph`), made through the
projection registry exactly as the build makes them, so a committed workbench matches the
build byte for byte."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopx.build.registry import GoalContext
from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.model.ids import visible_goals as visible_goals
from loopx.projections.review import review_packet
from loopx.state.entities import GoalState

GRAPH_FILES = {
    "json": "graph.json",
    "dot": "graph.dot",
    "mermaid": "graph.mmd",
    "text": "graph.mmd",
}


def _context(
    state: GoalState, audience: str, head: str | None, visible: set[str], read_blob: Any
) -> GoalContext:
    return GoalContext(
        audience=audience,
        head=head,
        project=ProjectConfig(),
        read_blob=read_blob,
        state=state,
        visible_goals=visible,
    )


def workbench_markdown(
    state: GoalState,
    *,
    head: str | None,
    visible: set[str],
    read_blob: Any = None,
    audience: str = "team",
) -> str:
    return _context(state, audience, head, visible, read_blob).text("workbench", "workbench.md")


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
    """The review packet (of one todo, and what changed `since`, when given) and its Markdown."""
    ctx = _context(state, audience, head, visible, read_blob)
    ctx.projected["review"] = review_packet(
        state, ctx.lens(), head=head, visible_goals=visible, todo_id=todo_id, since=since
    )
    return ctx["review"], ctx.text("review", "review.md")


def graph_text(state: GoalState, audience: str, fmt: str, read_blob: Any = None) -> str:
    """The task graph as `fmt`: json, dot, mermaid (or text), or svg; a graph too large to lay
    out as SVG is `graph_too_large`."""
    ctx = _context(state, audience, None, set(), read_blob)
    if fmt != "svg":
        return ctx.text("graph", GRAPH_FILES[fmt])
    from loopx.render.svg import to_svg

    svg = to_svg(ctx["graph"])
    if svg is None:
        raise InvalidInput(
            "graph is too large to lay out; use --format dot or mermaid", code="graph_too_large"
        )
    return svg + "\n"


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
