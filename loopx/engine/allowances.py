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

Like a redaction it is accepted on a closed goal (an exception to `goal_terminal`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from loopx.engine import lookup
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.allowances import created_at_seq
from loopx.state.entities import GoalState
from loopx.state.redactions import target

#: (text, kind) → whether the boundary scanner finds `kind` in `text` (the privacy layer
#: answers; the engine may not import it).
Finds = Callable[[str, str], bool]
ENTITIES = ("goal", "todo", "gate", "evidence", "note", "run", "handoff")
_KIND = re.compile(r"[a-z][a-z0-9-]{1,63}")


def _resolve(state: GoalState, entity: str, entity_id: str | None, seq: int | None) -> str:
    """The id of the entity named by id, or by the seq of the event that created it."""
    found = created_at_seq(state, entity, seq) if seq is not None else entity_id
    if found is None or target(state, entity, found) is None:
        raise NotFound(f"{entity} not found", code=f"{entity}_not_found")
    return found


def _check(entity: str, kind: str, entity_id: str | None, seq: int | None) -> None:
    if entity not in ENTITIES:
        raise InvalidInput(
            f"entity must be one of {', '.join(ENTITIES)}", code="invalid_entity", entity=entity
        )
    if not _KIND.fullmatch(kind):
        raise InvalidInput("kind must be a finding kind", code="invalid_kind")
    if (entity_id is None) == (seq is None):
        raise InvalidInput("name the entity by --entity-id or by --seq", code="missing_entity_id")
    if entity_id is not None:
        check_id(entity_id, "entity_id")


def _entry(
    state: GoalState,
    request: dict[str, Any],
    finds: Finds,
    allowance_id: str | None,
) -> dict[str, Any]:
    """The event data for `request` on the folded goal, after its preconditions."""
    entity, kind = request["entity"], request["kind"]
    found_id = _resolve(state, entity, request["entity_id"], request["seq"])
    for a in state.allowances.values():
        if (a["entity"], a["entity_id"], a["kind"]) == (entity, found_id, kind):
            raise Conflict(
                "that finding is already allowed",
                code="already_allowed",
                allowance_id=a["allowance_id"],
            )
    if not finds(found_id, kind):
        raise InvalidInput(
            f"the boundary scan finds no {kind} in that {entity}'s id (user and host "
            "names: this host's, $LOOPX_PRIVATE_NAMES and .loopx/names)",
            code="no_such_finding",
        )
    return {
        "allowance_id": lookup.new_id("allowance", state.allowances, allowance_id, "allowance_id"),
        "entity": entity,
        "entity_id": found_id,
        "field": "id",
        "kind": kind,
        "reason": request["reason"],
    }


def allow_finding(
    ctx: Context,
    goal_id: str,
    *,
    entity: str,
    kind: str,
    reason: str,
    finds: Finds,
    entity_id: str | None = None,
    seq: int | None = None,
    allowance_id: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Append a `finding.allowed` event for a finding of `kind` that `finds` confirms in the
    id of an entity (named by `entity_id`, or by the `seq` that created it; a goal's defaults
    to `goal_id`); the goal may be closed."""
    if entity == "goal" and entity_id is None and seq is None:
        entity_id = goal_id
    _check(entity, kind, entity_id, seq)
    request = {
        "cmd": "finding.allow",
        "entity": entity,
        "entity_id": entity_id,
        "seq": seq,
        "kind": kind,
        "reason": lookup.text(reason, "reason", limit=lookup.MAX_TITLE),
        "allowance_id": allowance_id,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        data = _entry(lookup.need_state(state), request, finds, allowance_id)
        return [Change("finding.allowed", data, "team")]

    return execute(
        ctx,
        goal_id,
        request,
        plan,
        operation_id=operation_id,
        expected_revision=expected_revision,
        allow_terminal=True,
    )
