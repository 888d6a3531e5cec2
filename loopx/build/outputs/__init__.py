"""The built-in projections, one module each, in the order the build makes them (the goal
page lists the links of goal projections in this order).

Goal scope (`<audience>/goals/<goal>/`): status, graph, workbench, review, handoffs, todos,
goal (the goal page), feed, summary (the index row and badge), search (the goal's piece of
the search index). Audience scope (`<audience>/`): index, badge, feed, search (the script),
assets.
"""

from __future__ import annotations

from loopx.build.outputs import (
    assets,
    badge,
    feed,
    goal_page,
    graph,
    handoffs,
    index,
    review,
    search,
    status,
    todo_pages,
    workbench,
)
from loopx.build.registry import Projection

MODULES = [status, graph, workbench, review, handoffs, todo_pages, goal_page, feed, badge]
MODULES += [index, search, assets]
BUILTIN: tuple[Projection, ...] = tuple(p for m in MODULES for p in m.PROJECTIONS)
