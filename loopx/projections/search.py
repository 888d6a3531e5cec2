"""The search index (`loopx.search/v1`), one document per goal: the goal and each of its todos
an audience may see, with its title and page, for the static search script on the index page.

Each goal has its own piece (`<audience>/goals/<goal>/search.json` and `search-index.js`), so
an event rewrites, and the boundary scans, the piece of the goal it changed, not an index of
the whole site. The index page loads the pieces of the first goals (in its order) that hold
at most `ITEM_LIMIT` items between them (the first goal's always, itself capped there): a
bigger root is searched over its first goals' todos, as one whole-site index was."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, ordered_todos
from loopx.state.entities import GoalState

SCHEMA = "loopx.search/v1"
ITEM_LIMIT = 20000  # per goal, and what the index page loads; the rest counted


def search_items(state: GoalState, lens: Lens) -> list[dict[str, Any]]:
    g = state.goal_id
    items: list[dict[str, Any]] = [
        {
            "kind": "goal",
            "goal_id": g,
            "title": lens.text(state.title),
            "status": state.status,
            "href": f"goals/{g}/index.html",
        }
    ]
    for t in ordered_todos(state):
        if lens.sees(t.visibility):
            items.append(
                {
                    "kind": "todo",
                    "goal_id": g,
                    "todo_id": t.todo_id,
                    "title": lens.text(t.title),
                    "status": t.status,
                    "href": f"goals/{g}/todos/{t.todo_id}.html",
                }
            )
    return items


def item_count(state: GoalState, lens: Lens) -> int:
    """How many items `search_items` lists for the goal (the goal and the todos `lens` sees),
    without the text of any."""
    return 1 + sum(1 for t in state.todos.values() if lens.sees(t.visibility))


def search_index(items: list[dict[str, Any]], audience: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "audience": audience,
        "items": items[:ITEM_LIMIT],
        "truncated": max(len(items) - ITEM_LIMIT, 0),
    }


def loaded(counts: list[tuple[str, int]]) -> list[str]:
    """The goals whose pieces the index page loads, of (goal, item count) in its order: the
    first, and each next one while they all hold at most `ITEM_LIMIT` items."""
    out: list[str] = []
    total = 0
    for goal_id, count in counts:
        total += min(count, ITEM_LIMIT)
        if out and total > ITEM_LIMIT:
            break
        out.append(goal_id)
    return out
