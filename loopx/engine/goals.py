"""Goal write paths: create, close, register an agent, set the quota, add a note."""

from __future__ import annotations

from loopx.engine import lookup
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.entities import GoalState


def create_goal(
    ctx: Context,
    goal_id: str,
    *,
    title: str,
    objective: str,
    acceptance: list[str] | None = None,
    repository: str | None = None,
    visibility: str | None = None,
    predecessor: str | None = None,
    lease_seconds: int | None = None,
    quota: int | None = None,
    quota_unit: str = "runs",
    operation_id: str | None = None,
) -> Result:
    check_id(goal_id, "goal_id")
    vis = lookup.visibility(visibility, "team")
    title = lookup.text(title, "title", limit=lookup.MAX_TITLE)
    objective = lookup.text(objective, "objective")
    criteria = [lookup.text(a, "acceptance") for a in acceptance or []]
    if predecessor is not None:
        check_id(predecessor, "predecessor")
        if predecessor == goal_id or not ctx.store.exists(predecessor):
            raise NotFound("predecessor goal not found", code="goal_not_found", goal_id=predecessor)
    request = {
        "cmd": "goal.create",
        "goal_id": goal_id,
        "title": title,
        "objective": objective,
        "acceptance": criteria,
        "repository": repository,
        "visibility": vis,
        "predecessor": predecessor,
        "lease_seconds": lease_seconds,
        "quota": quota,
        "quota_unit": quota_unit,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        policy: dict[str, object] = {"quota": quota, "quota_unit": quota_unit}
        if lease_seconds is not None:
            policy["lease_seconds"] = lease_seconds
        data = {
            "title": ctx.private_text(title, vis),
            "objective": ctx.private_text(objective, vis),
            "acceptance": [ctx.private_text(a, vis) for a in criteria],
            "repository": repository,
            "predecessor": predecessor,
            "policy": policy,
        }
        return [Change("goal.created", data, vis)]

    return execute(ctx, goal_id, request, plan, operation_id=operation_id, creates_goal=True)


def close_goal(
    ctx: Context,
    goal_id: str,
    *,
    outcome: str,
    reason: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    if outcome not in ("achieved", "abandoned"):
        raise InvalidInput("outcome must be achieved or abandoned", code="invalid_outcome")
    reason = lookup.text(reason, "reason", required=False) or None
    request = {"cmd": "goal.close", "outcome": outcome, "reason": reason}

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if outcome == "achieved":
            still_open = sorted(t.todo_id for t in st.todos.values() if t.is_open)
            if still_open:
                raise Conflict(
                    f"{len(still_open)} todos are still open; complete or cancel them first",
                    code="todos_open",
                    todo_ids=still_open[:20],
                )
        data = {"outcome": outcome}
        if reason:
            data["reason"] = ctx.private_text(reason, st.visibility)
        return [Change("goal.closed", data, st.visibility)]

    return execute(
        ctx, goal_id, request, plan, operation_id=operation_id, expected_revision=expected_revision
    )


def register_agent(
    ctx: Context,
    goal_id: str,
    agent_id: str,
    *,
    name: str | None = None,
    kind: str | None = None,
    operation_id: str | None = None,
) -> Result:
    check_id(agent_id, "agent_id")
    request = {"cmd": "agent.register", "agent_id": agent_id, "name": name, "kind": kind}

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if agent_id in st.agents:
            raise Conflict("agent already registered", code="agent_exists", agent_id=agent_id)
        return [Change("agent.registered", {"agent_id": agent_id, "name": name, "kind": kind})]

    return execute(ctx, goal_id, request, plan, operation_id=operation_id)


def set_quota(
    ctx: Context,
    goal_id: str,
    *,
    quota: int | None,
    unit: str = "runs",
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    if quota is not None and quota < 0:
        raise InvalidInput("quota must be zero or more", code="invalid_quota")
    request = {"cmd": "quota.set", "quota": quota, "unit": unit}

    def plan(state: GoalState | None, now: str) -> list[Change]:
        return [Change("quota.set", {"quota": quota, "quota_unit": unit})]

    return execute(
        ctx, goal_id, request, plan, operation_id=operation_id, expected_revision=expected_revision
    )


def add_note(
    ctx: Context,
    goal_id: str,
    *,
    text: str,
    kind: str = "note",
    todo_id: str | None = None,
    visibility: str | None = None,
    note_id: str | None = None,
    operation_id: str | None = None,
) -> Result:
    vis = lookup.visibility(visibility, "private")
    text = lookup.text(text, "text")
    if kind not in ("lesson", "decision", "note"):
        raise InvalidInput("note kind must be lesson, decision or note", code="invalid_kind")
    request = {
        "cmd": "note.add",
        "text": text,
        "kind": kind,
        "todo_id": todo_id,
        "visibility": vis,
        "note_id": note_id,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if todo_id is not None:
            lookup.todo(st, todo_id)
        data = {
            "note_id": lookup.new_id("note", st.notes, note_id, "note_id"),
            "kind": kind,
            "text": ctx.private_text(text, vis),
            "todo_id": todo_id,
        }
        return [Change("note.added", data, vis)]

    return execute(ctx, goal_id, request, plan, operation_id=operation_id)
