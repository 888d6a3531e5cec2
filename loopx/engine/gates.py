"""Gate write paths: open a question for a named authority; resolve it once."""

from __future__ import annotations

from dataclasses import replace

from loopx.engine import lookup
from loopx.engine.clock import parse
from loopx.engine.commands import OpenGate, ResolveGate
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput
from loopx.model.ids import check_id
from loopx.state.entities import Gate, GoalState

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


def open_gate(ctx: Context, cmd: OpenGate) -> Result:
    """Open a gate. With no todos named it holds the whole goal. `ask_again_at`: when to ask
    the authority again if still undecided (`loopx wake` lists it then)."""
    vis = lookup.visibility(cmd.visibility, "team")
    cmd = replace(
        cmd,
        visibility=vis,
        question=lookup.text(cmd.question, "question", limit=lookup.MAX_TITLE),
        blocks_goal=cmd.blocks_goal or not cmd.blocks,
    )
    check_id(cmd.authority, "authority")
    if cmd.ask_again_at is not None:
        parse_time(cmd.ask_again_at)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        data = {
            "gate_id": lookup.new_id("gate", st.gates, cmd.gate_id, "gate_id"),
            "question": ctx.private_text(cmd.question, vis),
            "authority": cmd.authority,
            "blocks": lookup.existing_todos(st, cmd.blocks),
            "blocks_goal": cmd.blocks_goal,
            "ask_again_at": cmd.ask_again_at,
        }
        return [Change("gate.opened", data, vis)]

    return execute(ctx, cmd, plan)


def resolve_gate(ctx: Context, cmd: ResolveGate) -> Result:
    """Approve, reject or defer (with `ask_again_at`: when to ask again). Only the gate's
    authority may resolve it; a deferred gate may be resolved again, an approved or rejected
    one never."""
    gate_id = check_id(cmd.gate_id, "gate_id")
    outcome = RESOLUTIONS.get(cmd.resolution)
    if outcome is None:
        raise InvalidInput("resolution must be approve, reject or defer", code="invalid_resolution")
    cmd = replace(
        cmd,
        resolution=outcome,
        by=check_id(cmd.by or ctx.agent_id, "by"),
        rationale=lookup.text(cmd.rationale, "rationale", required=False) or None,
    )
    if cmd.ask_again_at is not None:
        if outcome != "deferred":
            raise InvalidInput("only a deferred gate is asked again", code="ask_again_not_deferred")
        parse_time(cmd.ask_again_at)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        gate = _resolvable(lookup.need_state(state), gate_id, cmd.by)
        rationale = cmd.rationale
        data = {
            "gate_id": gate_id,
            "resolution": outcome,
            "by": cmd.by,
            "rationale": ctx.optional_text(rationale, gate.visibility),
            "ask_again_at": cmd.ask_again_at,
        }
        return [Change("gate.resolved", data, gate.visibility)]

    return execute(ctx, cmd, plan)


def _resolvable(state: GoalState, gate_id: str, resolver: str | None) -> Gate:
    """The gate, unless it is already decided or `resolver` is not its authority."""
    gate = lookup.gate(state, gate_id)
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
    return gate
