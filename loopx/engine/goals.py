"""Goal write paths: create, close, register an agent, set the quota, add a note."""

from __future__ import annotations

from dataclasses import replace

from loopx.engine import lookup
from loopx.engine.commands import AddNote, CloseGoal, CreateGoal, RegisterAgent, SetQuota
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.entities import GoalState


def create_goal(ctx: Context, cmd: CreateGoal) -> Result:
    """Create a goal: its ledger starts with `goal.created`."""
    check_id(cmd.goal_id, "goal_id")
    vis = lookup.visibility(cmd.visibility, "team")
    cmd = replace(
        cmd,
        visibility=vis,
        title=lookup.text(cmd.title, "title", limit=lookup.MAX_TITLE),
        objective=lookup.text(cmd.objective, "objective"),
        acceptance=tuple(lookup.text(a, "acceptance") for a in cmd.acceptance),
    )
    predecessor = cmd.predecessor
    if predecessor is not None:
        check_id(predecessor, "predecessor")
        if predecessor == cmd.goal_id or not ctx.store.exists(predecessor):
            raise NotFound("predecessor goal not found", code="goal_not_found", goal_id=predecessor)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        policy: dict[str, object] = {"quota": cmd.quota, "quota_unit": cmd.quota_unit}
        if cmd.lease_seconds is not None:
            policy["lease_seconds"] = cmd.lease_seconds
        data = {
            "title": ctx.private_text(cmd.title, vis),
            "objective": ctx.private_text(cmd.objective, vis),
            "acceptance": [ctx.private_text(a, vis) for a in cmd.acceptance],
            "repository": cmd.repository,
            "predecessor": predecessor,
            "policy": policy,
        }
        return [Change("goal.created", data, vis)]

    return execute(ctx, cmd, plan)


def close_goal(ctx: Context, cmd: CloseGoal) -> Result:
    """Close a goal for good: achieved (no todo left open) or abandoned."""
    if cmd.outcome not in ("achieved", "abandoned"):
        raise InvalidInput("outcome must be achieved or abandoned", code="invalid_outcome")
    cmd = replace(cmd, reason=lookup.text(cmd.reason, "reason", required=False) or None)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if cmd.outcome == "achieved":
            still_open = sorted(t.todo_id for t in st.todos.values() if t.is_open)
            if still_open:
                raise Conflict(
                    f"{len(still_open)} todos are still open; complete or cancel them first",
                    code="todos_open",
                    todo_ids=still_open[:20],
                )
        data = {"outcome": cmd.outcome}
        if cmd.reason:
            data["reason"] = ctx.private_text(cmd.reason, st.visibility)
        return [Change("goal.closed", data, st.visibility)]

    return execute(ctx, cmd, plan)


def register_agent(ctx: Context, cmd: RegisterAgent) -> Result:
    """Register an agent (default: the acting one) on a goal."""
    agent_id = check_id(cmd.agent_id or ctx.agent_id, "agent_id")
    cmd = replace(cmd, agent_id=agent_id)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if agent_id in st.agents:
            raise Conflict("agent already registered", code="agent_exists", agent_id=agent_id)
        data = {"agent_id": agent_id, "name": cmd.name, "kind": cmd.kind}
        return [Change("agent.registered", data)]

    return execute(ctx, cmd, plan)


def set_quota(ctx: Context, cmd: SetQuota) -> Result:
    """Set (or, with None, clear) the goal's budget."""
    if cmd.quota is not None and cmd.quota < 0:
        raise InvalidInput("quota must be zero or more", code="invalid_quota")

    def plan(state: GoalState | None, now: str) -> list[Change]:
        return [Change("quota.set", {"quota": cmd.quota, "quota_unit": cmd.unit})]

    return execute(ctx, cmd, plan)


def add_note(ctx: Context, cmd: AddNote) -> Result:
    """Add a lesson, decision or note (private by default: the ledger keeps its hash)."""
    vis = lookup.visibility(cmd.visibility, "private")
    cmd = replace(cmd, visibility=vis, text=lookup.text(cmd.text, "text"))
    if cmd.kind not in ("lesson", "decision", "note"):
        raise InvalidInput("note kind must be lesson, decision or note", code="invalid_kind")

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        lookup.todos_named(st, cmd.todo_id)
        data = {
            "note_id": lookup.new_id("note", st.notes, cmd.note_id, "note_id"),
            "kind": cmd.kind,
            "text": ctx.private_text(cmd.text, vis),
            "todo_id": cmd.todo_id,
        }
        return [Change("note.added", data, vis)]

    return execute(ctx, cmd, plan)
