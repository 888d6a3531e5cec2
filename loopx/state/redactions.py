"""Fold handler for governed corrections: `field.redacted` blanks one text field.

The field's value becomes `REDACTED` in the folded state, so every projection of every
audience shows the marker instead of the text, and the boundary scan, which reads the same
state, neither forbids nor finds it any more. The ledger line that first held the text is
untouched (append-only); only projections honour the correction.

`GoalState.redactions` maps redaction id → a plain dict: redaction_id, entity, entity_id,
field, reason, by (the actor), at, seq.
"""

from __future__ import annotations

from typing import Any

from loopx.state.entities import GoalState
from loopx.state.tables import entity_tables

#: What a redacted field shows, in every projection and audience.
REDACTED = "[redacted]"

# (entity, field) → the attribute of the folded entity that holds it.
_ATTRIBUTES = {("goal", "reason"): "outcome_reason"}


def target(state: GoalState, entity: str, entity_id: str) -> Any:
    """The folded entity a redaction names, or None when there is none."""
    return entity_tables(state)[entity].get(entity_id)


def current(item: Any, entity: str, field: str) -> Any:
    """The field's value as folded (None when unset)."""
    return getattr(item, _ATTRIBUTES.get((entity, field), field))


def is_redacted(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(v == REDACTED for v in value)
    if isinstance(value, dict):
        return value.get("work_summary") == REDACTED and len(value) == 1
    return value == REDACTED


def _blank(value: Any, entity: str, field: str) -> Any:
    if isinstance(value, list):
        return [REDACTED for _ in value]
    if entity == "handoff":
        return {"work_summary": REDACTED}  # the smallest valid note
    if entity == "evidence" and field == "body":
        return None
    return REDACTED


def field_redacted(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    entity, field = data["entity"], data["field"]
    item = target(state, entity, data["entity_id"])
    if item is not None:
        value = _blank(current(item, entity, field), entity, field)
        setattr(item, _ATTRIBUTES.get((entity, field), field), value)
        if entity == "evidence" and field == "body":
            item.body_bytes = None
    state.redactions[data["redaction_id"]] = {
        "redaction_id": data["redaction_id"],
        "entity": entity,
        "entity_id": data["entity_id"],
        "field": field,
        "reason": data["reason"],
        "by": event["actor"]["agent_id"],
        "at": event["recorded_at"],
        "seq": event["seq"],
    }
