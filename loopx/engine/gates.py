"""Gate write paths: open a question for a named authority; resolve it once."""

from __future__ import annotations

from loopx.engine import lookup
from loopx.engine.clock import parse
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput
from loopx.model.ids import check_id
from loopx.state.entities import GoalState

RESOLUTIONS = {
    "approve": "approved",
    "reject": "rejected",
    "defer": "deferred",
    "approved": "approved",
    "rejected": "rejected",
    "deferred": "deferred",
}


def parse_time(value: str) -> str:
    """`value` when it is a time loopx accepts (`invalid_time` otherwise)."""
    parse(value)
    return value


def open_gate(
    ctx: Context,
    goal_id: str,
    *,
    question: str,
    authority: str,
    blocks: list[str] | None = None,
    blocks_goal: bool = False,
    gate_id: str | None = None,
    visibility: str | None = None,
    ask_again_at: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Open a gate. With no todos named it holds the whole goal. `ask_again_at`: when to ask
    the authority again if still undecided (`loopx wake` lists it then)."""
    vis = lookup.visibility(visibility, "team")
    question = lookup.text(question, "question", limit=lookup.MAX_TITLE)
    check_id(authority, "authority")
    whole_goal = blocks_goal or not blocks
    request = {
        "cmd": "gate.open",
        "question": question,
        "authority": authority,
        "blocks": blocks or [],
        "blocks_goal": whole_goal,
        "gate_id": gate_id,
        "visibility": vis,
    }
    if ask_again_at is not None:
        request["ask_again_at"] = parse_time(ask_again_at)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        held = lookup.existing_todos(st, blocks or [])
        data = {
            "gate_id": lookup.new_id("gate", st.gates, gate_id, "gate_id"),
            "question": ctx.private_text(question, vis),
            "authority": authority,
            "blocks": held,
            "blocks_goal": whole_goal,
            "ask_again_at": ask_again_at,
        }
        return [Change("gate.opened", data, vis)]

    return execute(
        ctx, goal_id, request, plan, operation_id=operation_id, expected_revision=expected_revision
    )


def resolve_gate(
    ctx: Context,
    goal_id: str,
    gate_id: str,
    *,
    resolution: str,
    by: str | None = None,
    rationale: str | None = None,
    ask_again_at: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Approve, reject or defer (with `ask_again_at`: when to ask again). Only the gate's
    authority may resolve it; a deferred gate may be resolved again, an approved or rejected
    one never."""
    check_id(gate_id, "gate_id")
    outcome = RESOLUTIONS.get(resolution)
    if outcome is None:
        raise InvalidInput("resolution must be approve, reject or defer", code="invalid_resolution")
    resolver = check_id(by or ctx.agent_id, "by")
    rationale = lookup.text(rationale, "rationale", required=False) or None
    request = {
        "cmd": "gate.resolve",
        "gate_id": gate_id,
        "resolution": outcome,
        "by": resolver,
        "rationale": rationale,
    }
    if ask_again_at is not None:
        if outcome != "deferred":
            raise InvalidInput("only a deferred gate is asked again", code="ask_again_not_deferred")
        request["ask_again_at"] = parse_time(ask_again_at)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        gate = lookup.gate(st, gate_id)
        if gate.status in ("approved", "rejected"):
            raise Conflict(
                f"gate is already {gate.status}",
                code="gate_resolved",
                gate_id=gate_id,
                status=gate.status,
            )
        if resolver != gate.authority:
            raise Conflict(
                "only the gate's authority may resolve it",
                code="not_gate_authority",
                gate_id=gate_id,
                authority=gate.authority,
            )
        data = {
            "gate_id": gate_id,
            "resolution": outcome,
            "by": resolver,
            "rationale": ctx.private_text(rationale, gate.visibility) if rationale else None,
            "ask_again_at": ask_again_at,
        }
        return [Change("gate.resolved", data, gate.visibility)]

    return execute(
        ctx,
        goal_id,
        request,
        plan,
        operation_id=operation_id,
        expected_revision=expected_revision,
        revision_of=lookup.gate_revision(gate_id),
    )
