"""The search index (`loopx.search/v1`): every goal and todo an audience may see, with its
title and page, for the static search script on the index page."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, ordered_todos
from loopx.state.entities import GoalState

SCHEMA = "loopx.search/v1"
ITEM_LIMIT = 20000  # a bigger root is searched over its first goals' todos; the rest counted


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


def search_index(items: list[dict[str, Any]], audience: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "audience": audience,
        "items": items[:ITEM_LIMIT],
        "truncated": max(len(items) - ITEM_LIMIT, 0),
    }
