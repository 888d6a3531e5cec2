"""Fold handler for reviewed allow entries: `finding.allowed` names one finding in one id.

An entry names the place (an entity, by kind and id) and the finding's kind, never the text
nor a hash of it. Ids never change, so an entry always covers exactly the text it was made
for: the boundary scan (see `loopx.build.allowances`) exempts findings of the entry's kind that
lie inside that id, and nothing else.

`GoalState.allowances` maps allowance id → a plain dict: allowance_id, entity, entity_id,
field (always ``id``), kind, reason, by (the actor), at, seq.
"""

from __future__ import annotations

from typing import Any

from loopx.state.entities import GoalState
from loopx.state.tables import entity_tables


def created_at_seq(state: GoalState, entity: str, seq: int) -> str | None:
    """The id of the `entity` created by the event at `seq`: how a printed command names an
    entity without printing an id that may itself hold the finding."""
    return next(
        (k for k in entity_tables(state)[entity] if created_seq(state, entity, k) == seq), None
    )


def created_seq(state: GoalState, entity: str, entity_id: str) -> int | None:
    """The seq of the event that created the entity (the inverse of `created_at_seq`)."""
    if entity == "goal":
        return 1 if entity_id == state.goal_id else None
    item = entity_tables(state)[entity].get(entity_id)
    if item is None:
        return None
    seq = item.prepared_seq if entity == "handoff" else item.created_seq
    return seq if isinstance(seq, int) else None


def entries(state: GoalState) -> list[dict[str, Any]]:
    """The goal's allow entries, oldest first."""
    return sorted(state.allowances.values(), key=lambda a: a["seq"])


def finding_allowed(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    state.allowances[data["allowance_id"]] = {
        "allowance_id": data["allowance_id"],
        "entity": data["entity"],
        "entity_id": data["entity_id"],
        "field": data.get("field", "id"),
        "kind": data["kind"],
        "reason": data["reason"],
        "by": event["actor"]["agent_id"],
        "at": event["recorded_at"],
        "seq": event["seq"],
    }
