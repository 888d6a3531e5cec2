"""Load every goal under a store, one at a time, without letting one bad goal hide the rest.

Each goal comes back as its `Loaded` fold or as the `LoopxError` that stopped it (a
corrupt ledger, an unreadable file): the callers (`status`, `goal list`, `handoff list`) show
that goal as damaged or unreadable and still list the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from loopx.engine.core import Loaded, load_state
from loopx.model.errors import LoopxError


def load_all(
    store: Any, goal_ids: Iterable[str] | None = None
) -> Iterator[tuple[str, Loaded | LoopxError]]:
    """`(goal_id, Loaded | LoopxError)` for `goal_ids` (default: every goal in the store)."""
    for goal_id in store.goal_ids() if goal_ids is None else goal_ids:
        try:
            yield goal_id, load_state(store, goal_id)
        except LoopxError as err:
            yield goal_id, err


def health_of(err: LoopxError) -> str:
    """How a goal that did not load is shown: `corrupt` ledger, or `unreadable`."""
    return "corrupt" if err.code == "ledger_corrupt" else "unreadable"
