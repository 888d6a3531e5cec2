"""Todo write paths: add, update, claim, renew, release, complete, block, unblock, reopen,
cancel. Each checks its preconditions on folded state and refuses with a stable code."""

from __future__ import annotations

from typing import Any

from loopx.engine import lookup
from loopx.engine.clock import add_seconds
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput
from loopx.model.ids import check_id
from loopx.state.entities import GoalState, Todo
from loopx.state.frontier import lease_live, readiness_of

ROLES = ("agent", "user")


def _on_todo(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    request: dict[str, Any],
    plan: Any,
    operation_id: str | None,
    expected_revision: int | None,
) -> Result:
    """Run a write on one todo: `--expected-revision` guards that todo's revision."""
    return execute(
        ctx,
        goal_id,
        request,
        plan,
        operation_id=operation_id,
        expected_revision=expected_revision,
        revision_of=lookup.todo_revision(todo_id),
    )


def _check_priority(priority: int | None) -> None:
    if priority is not None and not 0 <= priority <= 4:
        raise InvalidInput("priority must be 0 (highest) to 4 (lowest)", code="invalid_priority")


def _check_deps(state: GoalState, todo_id: str, depends_on: list[str]) -> list[str]:
    deps = lookup.existing_todos(state, depends_on, code="dependency_not_found")
    cycle = lookup.dependency_cycle(state, todo_id, deps)
    if cycle:
        # A cycle can run through thousands of todos: show its ends, keep the error readable.
        shown = (
            cycle if len(cycle) <= 12 else [*cycle[:6], f"… {len(cycle) - 11} more …", *cycle[-5:]]
        )
        raise Conflict(
            "dependencies would form a cycle: " + " -> ".join(shown),
            code="dependency_cycle",
            cycle=cycle[:50],
            cycle_length=len(cycle),
        )
    return deps


def add_todo(
    ctx: Context,
    goal_id: str,
    *,
    title: str,
    todo_id: str | None = None,
    role: str = "agent",
    kind: str = "task",
    priority: int = 2,
    depends_on: list[str] | None = None,
    acceptance: str | None = None,
    visibility: str | None = None,
    predecessor: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    vis = lookup.visibility(visibility, "team")
    title = lookup.text(title, "title", limit=lookup.MAX_TITLE)
    acceptance = lookup.text(acceptance, "acceptance", required=False) or None
    if role not in ROLES:
        raise InvalidInput("role must be agent or user", code="invalid_role")
    _check_priority(priority)
    request = {
        "cmd": "todo.add",
        "title": title,
        "todo_id": todo_id,
        "role": role,
        "kind": kind,
        "priority": priority,
        "depends_on": depends_on or [],
        "acceptance": acceptance,
        "visibility": vis,
        "predecessor": predecessor,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        new = lookup.new_id("todo", st.todos, todo_id, "todo_id")
        deps = _check_deps(st, new, depends_on or [])
        if predecessor is not None:
            lookup.todo(st, predecessor)
        data = {
            "todo_id": new,
            "title": ctx.private_text(title, vis),
            "role": role,
            "kind": kind,
            "priority": priority,
            "depends_on": deps,
            "predecessor": predecessor,
            "acceptance": ctx.private_text(acceptance, vis) if acceptance else None,
        }
        return [Change("todo.added", data, vis)]

    return execute(
        ctx, goal_id, request, plan, operation_id=operation_id, expected_revision=expected_revision
    )


def update_todo(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    *,
    title: str | None = None,
    priority: int | None = None,
    depends_on: list[str] | None = None,
    acceptance: str | None = None,
    kind: str | None = None,
    role: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    check_id(todo_id, "todo_id")
    if title is not None:
        title = lookup.text(title, "title", limit=lookup.MAX_TITLE)
    if acceptance is not None:
        acceptance = lookup.text(acceptance, "acceptance")
    if role is not None and role not in ROLES:
        raise InvalidInput("role must be agent or user", code="invalid_role")
    _check_priority(priority)
    fields = {
        "title": title,
        "priority": priority,
        "depends_on": depends_on,
        "acceptance": acceptance,
        "kind": kind,
        "role": role,
    }
    if all(v is None for v in fields.values()):
        raise InvalidInput("nothing to update: pass at least one field", code="no_change")
    request = {"cmd": "todo.update", "todo_id": todo_id, **fields}

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        lookup.open_todo(item)
        data: dict[str, Any] = {
            "todo_id": todo_id,
            "priority": priority,
            "kind": kind,
            "role": role,
        }
        if title is not None:
            data["title"] = ctx.private_text(title, item.visibility)
        if acceptance is not None:
            data["acceptance"] = ctx.private_text(acceptance, item.visibility)
        if depends_on is not None:
            data["depends_on"] = _check_deps(st, todo_id, depends_on)
        return [Change("todo.updated", data, item.visibility)]

    return _on_todo(ctx, goal_id, todo_id, request, plan, operation_id, expected_revision)


def _owner_check(item: Todo, agent_id: str, now: str) -> None:
    """Refuse when another agent holds `item` under a live lease."""
    if item.claim and item.claim["agent_id"] != agent_id and lease_live(item, now):
        raise Conflict(
            "todo is claimed by another agent under a live lease",
            code="claim_owner_mismatch",
            todo_id=item.todo_id,
            claimed_by=item.claim["agent_id"],
            lease_expires_at=item.claim["lease_expires_at"],
        )


def _ready_check(state: GoalState, item: Todo, now: str, agent_id: str) -> None:
    """Refuse with the first reason `readiness_of` gives among open or missing dependencies
    and pending gates (the callers check closed, blocked and claimed todos first)."""
    for reason in readiness_of(state, item, now, agent_id).reasons:
        code, ids = reason["code"], reason.get("todo_ids") or reason.get("gate_ids") or []
        shown = ", ".join(ids)
        if code == "dependency_open":
            raise Conflict(
                f"dependencies are not done: {shown}",
                code="dependency_open",
                todo_id=item.todo_id,
                dependencies=ids,
            )
        if code == "dependency_missing":
            raise Conflict(
                f"dependencies do not exist in this goal: {shown}",
                code="dependency_missing",
                todo_id=item.todo_id,
                dependencies=ids,
            )
        if code == "gate_pending":
            raise Conflict(
                f"pending gates block this todo: {shown}",
                code="gate_pending",
                todo_id=item.todo_id,
                gate_ids=ids,
            )


def claim_todo(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    *,
    lease_seconds: int | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
    via_handoff: str | None = None,
) -> Result:
    check_id(todo_id, "todo_id")
    lookup.check_lease(lease_seconds)
    request = {
        "cmd": "todo.claim",
        "todo_id": todo_id,
        "lease_seconds": lease_seconds,
        "session_id": ctx.session_id,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        lookup.open_todo(item)
        if item.status == "blocked":
            raise Conflict("todo is blocked", code="todo_blocked", todo_id=todo_id)
        _owner_check(item, ctx.agent_id, now)
        _ready_check(st, item, now, ctx.agent_id)
        lease = lookup.lease_for(st, lease_seconds)
        data = {
            "todo_id": todo_id,
            "agent_id": ctx.agent_id,
            "session_id": ctx.session_id,
            "lease_expires_at": add_seconds(now, lease),
            "via_handoff": via_handoff,
        }
        return [Change("todo.claimed", data, item.visibility)]

    return _on_todo(ctx, goal_id, todo_id, request, plan, operation_id, expected_revision)


def renew_todo(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    *,
    lease_seconds: int | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    check_id(todo_id, "todo_id")
    lookup.check_lease(lease_seconds)
    request = {"cmd": "todo.renew", "todo_id": todo_id, "lease_seconds": lease_seconds}

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        lookup.open_todo(item)
        lookup.require_holder(item, ctx.agent_id)
        lease = lookup.lease_for(st, lease_seconds)
        data = {"todo_id": todo_id, "lease_expires_at": add_seconds(now, lease)}
        return [Change("todo.renewed", data, item.visibility)]

    return _on_todo(ctx, goal_id, todo_id, request, plan, operation_id, expected_revision)


def _simple(
    cmd: str,
    event_type: str,
    check: Any,
    *,
    reason_required: bool = False,
) -> Any:
    """Build a todo transition that takes an optional (or required) reason."""

    def transition(
        ctx: Context,
        goal_id: str,
        todo_id: str,
        *,
        reason: str | None = None,
        operation_id: str | None = None,
        expected_revision: int | None = None,
    ) -> Result:
        check_id(todo_id, "todo_id")
        text = lookup.text(reason, "reason", required=reason_required) or None
        request = {"cmd": cmd, "todo_id": todo_id, "reason": text}

        def plan(state: GoalState | None, now: str) -> list[Change]:
            st = lookup.need_state(state)
            item = lookup.todo(st, todo_id)
            check(st, item, ctx, now)
            data = {
                "todo_id": todo_id,
                "reason": ctx.private_text(text, item.visibility) if text else None,
            }
            return [Change(event_type, data, item.visibility)]

        return _on_todo(ctx, goal_id, todo_id, request, plan, operation_id, expected_revision)

    transition.__name__ = cmd.replace(".", "_")
    transition.__doc__ = f"Append `{event_type}` after checking its preconditions."
    return transition


def _can_release(st: GoalState, item: Todo, ctx: Context, now: str) -> None:
    lookup.open_todo(item)
    lookup.require_holder(item, ctx.agent_id)


def _can_block(st: GoalState, item: Todo, ctx: Context, now: str) -> None:
    lookup.open_todo(item)
    if item.status == "blocked":
        raise Conflict("todo is already blocked", code="todo_blocked", todo_id=item.todo_id)
    _owner_check(item, ctx.agent_id, now)


def _can_unblock(st: GoalState, item: Todo, ctx: Context, now: str) -> None:
    if item.status != "blocked":
        raise Conflict("todo is not blocked", code="todo_not_blocked", todo_id=item.todo_id)


def _can_reopen(st: GoalState, item: Todo, ctx: Context, now: str) -> None:
    if item.is_open:
        raise Conflict(
            f"todo is {item.status}, not closed", code="todo_not_closed", todo_id=item.todo_id
        )


def _can_cancel(st: GoalState, item: Todo, ctx: Context, now: str) -> None:
    lookup.open_todo(item)
    _owner_check(item, ctx.agent_id, now)


release_todo = _simple("todo.release", "todo.released", _can_release)
block_todo = _simple("todo.block", "todo.blocked", _can_block, reason_required=True)
unblock_todo = _simple("todo.unblock", "todo.unblocked", _can_unblock)
reopen_todo = _simple("todo.reopen", "todo.reopened", _can_reopen, reason_required=True)
cancel_todo = _simple("todo.cancel", "todo.cancelled", _can_cancel)


def complete_todo(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    *,
    summary: str | None = None,
    evidence_ids: list[str] | None = None,
    successor: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    check_id(todo_id, "todo_id")
    summary = lookup.text(summary, "summary", required=False) or None
    request = {
        "cmd": "todo.complete",
        "todo_id": todo_id,
        "summary": summary,
        "evidence_ids": evidence_ids or [],
        "successor": successor,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        lookup.open_todo(item)
        if item.status == "blocked":
            raise Conflict(
                "todo is blocked; unblock it first", code="todo_blocked", todo_id=todo_id
            )
        _owner_check(item, ctx.agent_id, now)
        _ready_check(st, item, now, ctx.agent_id)
        evidence = lookup.existing_evidence(st, evidence_ids or [])
        if successor is not None:
            lookup.todo(st, successor)
        data = {
            "todo_id": todo_id,
            "evidence_ids": evidence,
            "successor": successor,
            "summary": ctx.private_text(summary, item.visibility) if summary else None,
        }
        return [Change("todo.completed", data, item.visibility)]

    return _on_todo(ctx, goal_id, todo_id, request, plan, operation_id, expected_revision)
