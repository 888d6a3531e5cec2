"""The reviewed allow entry: stop one boundary finding in an id, which nothing can correct.

An id cannot be renamed in an append-only ledger, and a closed goal accepts no edit, so a
false positive in an id (a listed host name inside `pair-with-<host>`, a `key-<32 hex>` id
read as a Mailgun key) would refuse every public build for good. A `finding.allowed` event
records who allowed it (the actor), why (`reason`) and which finding: the entity whose id holds
it and the finding's kind. It names the place, never the text, so neither the command printed
in a CI log (which names the entity by the seq that created it) nor the ledger line (which
repeats an id the ledger already holds) says more than before. The boundary scan then exempts
findings of that kind inside that id (see `loopx.build.allowances`); any other still blocks.
Text fields are corrected by redaction instead (`loopx.engine.redactions`).

Whether the id does hold such a finding is the boundary scanner's to say, and this layer may
not import it: `loopx allow finding` asks it first (`loopx.build.allowances.confirm`; ids and
the seq that created an entity never change, so the answer holds at the write).

Like a redaction it is accepted on a closed goal (an exception to `goal_terminal`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from loopx.engine import lookup
from loopx.engine.commands import AllowFinding
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.allowances import created_at_seq
from loopx.state.entities import GoalState
from loopx.state.redactions import target

ENTITIES = ("goal", "todo", "gate", "evidence", "note", "run", "handoff")
_KIND = re.compile(r"[a-z][a-z0-9-]{1,63}")


def checked(cmd: AllowFinding) -> AllowFinding:
    """`cmd` checked: a known entity, named by id or by seq (a goal's id defaults to the
    goal), a finding kind, and a reason."""
    if cmd.entity not in ENTITIES:
        raise InvalidInput(
            f"entity must be one of {', '.join(ENTITIES)}", code="invalid_entity", entity=cmd.entity
        )
    if not _KIND.fullmatch(cmd.kind):
        raise InvalidInput("kind must be a finding kind", code="invalid_kind")
    entity_id = cmd.entity_id
    if cmd.entity == "goal" and entity_id is None and cmd.seq is None:
        entity_id = cmd.goal_id
    if (entity_id is None) == (cmd.seq is None):
        raise InvalidInput("name the entity by --entity-id or by --seq", code="missing_entity_id")
    if entity_id is not None:
        check_id(entity_id, "entity_id")
    reason = lookup.text(cmd.reason, "reason", limit=lookup.MAX_TITLE)
    return replace(cmd, entity_id=entity_id, reason=reason)


def named_id(state: GoalState, cmd: AllowFinding) -> str:
    """The id of the entity `cmd` names (by id, or by the seq of the event that created it)."""
    found = created_at_seq(state, cmd.entity, cmd.seq) if cmd.seq is not None else cmd.entity_id
    if found is None or target(state, cmd.entity, found) is None:
        raise NotFound(f"{cmd.entity} not found", code=f"{cmd.entity}_not_found")
    return found


def _entry(state: GoalState, cmd: AllowFinding) -> dict[str, Any]:
    """The event data for `cmd` on the folded goal, after its preconditions."""
    found_id = named_id(state, cmd)
    for a in state.allowances.values():
        if (a["entity"], a["entity_id"], a["kind"]) == (cmd.entity, found_id, cmd.kind):
            raise Conflict(
                "that finding is already allowed",
                code="already_allowed",
                allowance_id=a["allowance_id"],
            )
    new = lookup.new_id("allowance", state.allowances, cmd.allowance_id, "allowance_id")
    return {
        "allowance_id": new,
        "entity": cmd.entity,
        "entity_id": found_id,
        "field": "id",
        "kind": cmd.kind,
        "reason": cmd.reason,
    }


def allow_finding(ctx: Context, cmd: AllowFinding) -> Result:
    """Append a `finding.allowed` event; the goal may be closed."""
    cmd = checked(cmd)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        return [Change("finding.allowed", _entry(lookup.need_state(state), cmd), "team")]

    return execute(ctx, cmd, plan)
