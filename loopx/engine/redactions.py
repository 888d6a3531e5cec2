"""The governed correction write path: redact one text field of one entity.

The ledger is append-only, so a secret typed into a public field, or a false positive that
makes the boundary scan refuse every build, is corrected by a `field.redacted` event: who (the
actor), why (`reason`), which field of which entity. Projections honour it from then on.

It is the one write a closed goal accepts (an exception to `goal_terminal`): a correction
that could not reach a closed goal would leave its block in place for good.
"""

from __future__ import annotations

from dataclasses import replace

from loopx.engine import lookup
from loopx.engine.commands import RedactField
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.events import REDACTABLE_FIELDS
from loopx.model.ids import check_id
from loopx.state.entities import GoalState
from loopx.state.freetext import redactable
from loopx.state.redactions import current, is_redacted, target

ENTITIES = tuple(REDACTABLE_FIELDS)


def redact_field(ctx: Context, cmd: RedactField) -> Result:
    """Append a `field.redacted` event; the goal may be closed."""
    cmd = _checked(cmd)
    entity, entity_id, name = cmd.entity, cmd.entity_id or "", cmd.field

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = target(st, entity, entity_id)
        if item is None:
            raise NotFound(f"{entity} not found", code=f"{entity}_not_found", entity_id=entity_id)
        value = current(item, entity, name)
        if value is None or value == []:
            raise InvalidInput(f"the {entity}'s {name} is empty", code="nothing_to_redact")
        if is_redacted(value):
            raise Conflict(
                f"the {entity}'s {name} is already redacted",
                code="already_redacted",
                entity=entity,
                entity_id=entity_id,
                field=name,
            )
        new = lookup.new_id("redaction", st.redactions, cmd.redaction_id, "redaction_id")
        data = {
            "redaction_id": new,
            "entity": entity,
            "entity_id": entity_id,
            "field": name,
            "reason": cmd.reason,
        }
        return [Change("field.redacted", data, "team")]

    return execute(ctx, cmd, plan)


def _checked(cmd: RedactField) -> RedactField:
    """`cmd` checked: a redactable field of a known entity, its id (a goal's defaults to the
    goal), and a reason."""
    entity = cmd.entity
    if entity not in REDACTABLE_FIELDS:
        raise InvalidInput(
            f"entity must be one of {', '.join(ENTITIES)}", code="invalid_entity", entity=entity
        )
    fields = redactable(entity)  # the entity's declared free text (loopx.state.entities)
    if cmd.field not in fields:
        raise InvalidInput(
            f"a {entity} has no redactable field of that name (one of {', '.join(fields)})",
            code="invalid_field",
        )
    named = entity == "goal" or cmd.entity_id
    entity_id = check_id(cmd.entity_id or cmd.goal_id, "entity_id") if named else ""
    if not entity_id:
        raise InvalidInput(f"--entity-id is required for a {entity}", code="missing_entity_id")
    reason = lookup.text(cmd.reason, "reason", limit=lookup.MAX_TITLE)
    return replace(cmd, entity_id=entity_id, reason=reason)
