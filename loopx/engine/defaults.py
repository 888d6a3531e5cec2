"""Which goal a command means when none is named. `--goal-id` beats `LOOPX_GOAL_ID` (both read
by the CLI), which beats the configuration's `defaults.goal` (read here), which beats the one
goal of a project, or its one active goal."""

from __future__ import annotations

from typing import Any

from loopx.engine.core import is_closed
from loopx.model.errors import InvalidInput, LoopxError, NotFound
from loopx.store.config import store_config


def _candidates(store: Any) -> tuple[list[str], list[str]]:
    """(every goal, the candidates): the goal itself when there is one; else every goal that
    is not closed (a goal whose ledger cannot be read counts: it may be active). Closed is
    read from each goal's snapshot and the events since, not from a fold of every goal."""
    ids = sorted(store.goal_ids())
    if len(ids) <= 1:
        return ids, ids
    active = []
    for goal_id in ids:
        try:
            closed = is_closed(store, goal_id)
        except LoopxError:
            closed = False
        if not closed:
            active.append(goal_id)
    return ids, active


def sole_goal(store: Any) -> str | None:
    """The goal a project means without saying: the configured one, else its only goal, else
    its only active goal."""
    configured = store_config(store).goal
    if configured is not None:
        return configured
    found = _candidates(store)[1]
    return found[0] if len(found) == 1 else None


def default_goal(store: Any) -> str:
    """`sole_goal`, or the error that says how to name one."""
    configured = store_config(store).goal
    if configured is not None:
        return configured
    ids, found = _candidates(store)
    if len(found) == 1:
        return found[0]
    if not ids:
        raise NotFound("no goals yet (create one with: loopx goal create)", code="goal_not_found")
    raise InvalidInput(
        "no goal named and no single active goal: pass --goal-id or set LOOPX_GOAL_ID",
        code="goal_required",
        goal_ids=found[:20],
    )
