"""The governed correction write path: redact one text field of one entity.

The ledger is append-only, so a secret typed into a public field, or a false positive that
makes the boundary scan refuse every build, is corrected by a `field.redacted` event: who (the
actor), why (`reason`), which field of which entity. Projections honour it from then on.

It is the one write a closed goal accepts (an exception to `goal_terminal`): a correction
that could not reach a closed goal would leave its block in place for good.
"""

from __future__ import annotations

from loopx.engine import lookup
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.events import REDACTABLE_FIELDS
from loopx.model.ids import check_id
from loopx.state.entities import GoalState
from loopx.state.freetext import redactable
from loopx.state.redactions import current, is_redacted, target

ENTITIES = tuple(REDACTABLE_FIELDS)


def redact_field(
    ctx: Context,
    goal_id: str,
    *,
    entity: str,
    entity_id: str | None,
    field: str,
    reason: str,
    redaction_id: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Append a `field.redacted` event; the goal may be closed."""
    if entity not in REDACTABLE_FIELDS:
        raise InvalidInput(
            f"entity must be one of {', '.join(ENTITIES)}", code="invalid_entity", entity=entity
        )
    fields = redactable(entity)  # the entity's declared free text (loopx.state.entities)
    if field not in fields:
        raise InvalidInput(
            f"a {entity} has no redactable field of that name (one of {', '.join(fields)})",
            code="invalid_field",
        )
    entity_id = check_id(entity_id or goal_id, "entity_id") if entity == "goal" or entity_id else ""
    if not entity_id:
        raise InvalidInput(f"--entity-id is required for a {entity}", code="missing_entity_id")
    reason = lookup.text(reason, "reason", limit=lookup.MAX_TITLE)
    request = {
        "cmd": "field.redact",
        "entity": entity,
        "entity_id": entity_id,
        "field": field,
        "reason": reason,
        "redaction_id": redaction_id,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = target(st, entity, entity_id)
        if item is None:
            raise NotFound(f"{entity} not found", code=f"{entity}_not_found", entity_id=entity_id)
        value = current(item, entity, field)
        if value is None or value == []:
            raise InvalidInput(f"the {entity}'s {field} is empty", code="nothing_to_redact")
        if is_redacted(value):
            raise Conflict(
                f"the {entity}'s {field} is already redacted",
                code="already_redacted",
                entity=entity,
                entity_id=entity_id,
                field=field,
            )
        data = {
            "redaction_id": lookup.new_id("redaction", st.redactions, redaction_id, "redaction_id"),
            "entity": entity,
            "entity_id": entity_id,
            "field": field,
            "reason": reason,
        }
        return [Change("field.redacted", data, "team")]

    return execute(
        ctx,
        goal_id,
        request,
        plan,
        operation_id=operation_id,
        expected_revision=expected_revision,
        allow_terminal=True,
    )
