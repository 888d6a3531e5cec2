"""What a rebuild knows of a goal whose ledger has not changed since the last build, without
folding it again.

A fresh `loopx build` after one event needs of every other goal only a few fields: its id,
visibility and creation time, its revision and head, and those of its last event of goal
truth (the unit keys, the sources, the boundary's per-goal memo; every file, index row and
search or feed part of the goal is carried by its unit). The build memo keeps them under the
ledger's change token (`store.select.change_token`: the file's size, mtime, ctime and inode,
or a database's head; an edit changes the ctime, which no one can set back), and a goal
whose token is the same stands in as `Carried`: those fields from the memo, anything else
read from the state itself, folded on first use and checked to have those very fields (if
not, the memo was damaged or the ledger written since: the build starts again, folding
every goal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from loopx.state.entities import GoalState
from loopx.state.turns import goal_truth

TEXT = ("goal_id", "visibility", "created_at", "head", "truth_head", "truth_at")
WHOLE = ("revision", "truth_revision")
FIELDS = TEXT + WHOLE


def of(state: GoalState) -> dict[str, Any]:
    """The fields of a goal's state (as folded: not its goal-truth view) the memo keeps."""
    return {name: getattr(state, name) for name in FIELDS}


def parse(raw: Any) -> dict[str, Any] | None:
    """The fields as `of` made them, or None when `raw` is not of that shape (a damaged or
    forged memo only costs folding the goal)."""
    if not isinstance(raw, dict) or set(raw) != set(FIELDS):
        return None
    if not all(isinstance(raw[k], str) for k in TEXT):
        return None
    if not all(type(raw[k]) is int and raw[k] >= 0 for k in WHOLE):
        return None
    return raw


class Stale(Exception):
    """A carried goal's state is not what the memo said (its ledger was written since the
    token was taken, or the memo is damaged): the build starts again, folding every goal
    (`forget`)."""


class Carried:
    """A goal's state, standing in for `GoalState`: the memo's fields as they are, anything
    else from the state `fold()` returns (once), whose fields must be the memo's (`Stale`
    otherwise)."""

    def __init__(
        self, fields: dict[str, Any], fold: Callable[[], GoalState], *, truth: bool = False
    ) -> None:
        self._fields = fields
        self._fold = fold
        self._truth = truth
        self._state: GoalState | None = None
        self.goal_id: str = fields["goal_id"]
        self.visibility: str = fields["visibility"]
        self.created_at: str = fields["created_at"]
        self.truth_revision: int = fields["truth_revision"]
        self.truth_head: str = fields["truth_head"]
        self.truth_at: str = fields["truth_at"]
        self.revision: int = fields["truth_revision" if truth else "revision"]
        self.head: str = fields["truth_head" if truth else "head"]

    def truth(self) -> GoalState:
        """Its goal-truth view (`state.turns.goal_truth`), not folded either."""
        if self._truth:
            return self.as_state()
        return Carried(self._fields, lambda: goal_truth(self.folded()), truth=True).as_state()

    def as_state(self) -> GoalState:
        return cast(GoalState, self)

    def folded(self) -> GoalState:
        """The state itself, folded on first use and checked against the memo's fields."""
        if self._state is None:
            state = self._fold()
            if self._truth:  # the fields are of the state as folded, not of this view
                fields = {**self._fields, "revision": state.revision, "head": state.head}
                ok = (state.revision, state.head) == (self.revision, self.head)
            else:
                fields, ok = self._fields, True
            if not ok or of(state) != fields:
                raise Stale(self.goal_id)
            self._state = state
        return self._state

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.folded(), name)


def truth(state: GoalState) -> GoalState:
    """`state.turns.goal_truth` of a state, folded or carried."""
    if isinstance(state, Carried):
        return state.truth()
    return goal_truth(state)


def folded(state: GoalState) -> GoalState:
    """The state itself, folding a carried one (before it goes to a worker process)."""
    return state.folded() if isinstance(state, Carried) else state


def forget(states: dict[str, Any], known: dict[str, Any]) -> None:
    """Drop every carried goal and the memo's fields (after `Stale`): each goal is folded."""
    known.clear()
    for goal_id in [g for g, (_, state) in states.items() if isinstance(state, Carried)]:
        del states[goal_id]
