"""Todo write paths: add, update, claim, renew, release, complete, block, unblock, reopen,
cancel. Each checks its preconditions on folded state and refuses with a stable code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from loopx.engine import lookup
from loopx.engine.clock import add_seconds
from loopx.engine.commands import (
    AddMonitor,
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CompleteTodo,
    ReleaseTodo,
    RenewTodo,
    ReopenTodo,
    TodoTransition,
    UnblockTodo,
    UpdateTodo,
)
from loopx.engine.core import Change, Context, Result, execute
from loopx.model.errors import Conflict, InvalidInput
from loopx.model.ids import check_id
from loopx.state.entities import GoalState, Todo
from loopx.state.frontier import lease_live, readiness_of

ROLES = ("agent", "user")


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


N = TypeVar("N", AddTodo, AddMonitor)


def checked_new(cmd: N) -> tuple[N, str]:
    """A new todo's (or monitor's) command with its visibility (default team) and its title
    checked, and that visibility."""
    vis = lookup.visibility(cmd.visibility, "team")
    title = lookup.text(cmd.title, "title", limit=lookup.MAX_TITLE)
    return replace(cmd, visibility=vis, title=title), vis


def new_todo(
    ctx: Context, st: GoalState, cmd: AddTodo | AddMonitor, vis: str, *, role: str, kind: str
) -> dict[str, Any]:
    """What every `todo.added` holds first (a todo or a monitor): the new id (given, else
    todo-N), the title (a blob reference when private), role, kind, priority and the
    dependencies, checked."""
    new = lookup.new_id("todo", st.todos, cmd.todo_id, "todo_id")
    deps = _check_deps(st, new, list(cmd.depends_on))
    return {
        "todo_id": new,
        "title": ctx.private_text(cmd.title, vis),
        "role": role,
        "kind": kind,
        "priority": cmd.priority,
        "depends_on": deps,
    }


def add_todo(ctx: Context, cmd: AddTodo) -> Result:
    """Add a todo. `expected_revision` guards the goal's head revision."""
    cmd, vis = checked_new(cmd)
    cmd = replace(cmd, acceptance=lookup.text(cmd.acceptance, "acceptance", required=False) or None)
    if cmd.role not in ROLES:
        raise InvalidInput("role must be agent or user", code="invalid_role")
    _check_priority(cmd.priority)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        data = new_todo(ctx, st, cmd, vis, role=cmd.role, kind=cmd.kind)
        lookup.todos_named(st, cmd.predecessor)
        data["predecessor"] = cmd.predecessor
        data["acceptance"] = ctx.optional_text(cmd.acceptance, vis)
        return [Change("todo.added", data, vis)]

    return execute(ctx, cmd, plan)


def update_todo(ctx: Context, cmd: UpdateTodo) -> Result:
    """Change an open todo's fields. `expected_revision` guards the todo's revision."""
    todo_id = check_id(cmd.todo_id, "todo_id")
    if cmd.title is not None:
        lookup.text(cmd.title, "title", limit=lookup.MAX_TITLE)
    if cmd.acceptance is not None:
        lookup.text(cmd.acceptance, "acceptance")
    if cmd.role is not None and cmd.role not in ROLES:
        raise InvalidInput("role must be agent or user", code="invalid_role")
    _check_priority(cmd.priority)
    changed = (cmd.title, cmd.priority, cmd.depends_on, cmd.acceptance, cmd.kind, cmd.role)
    if all(v is None for v in changed):
        raise InvalidInput("nothing to update: pass at least one field", code="no_change")

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        data: dict[str, Any] = {
            "todo_id": todo_id,
            "priority": cmd.priority,
            "kind": cmd.kind,
            "role": cmd.role,
        }
        if cmd.title is not None:
            data["title"] = ctx.private_text(cmd.title, item.visibility)
        if cmd.acceptance is not None:
            data["acceptance"] = ctx.private_text(cmd.acceptance, item.visibility)
        if cmd.depends_on is not None:
            data["depends_on"] = _check_deps(st, todo_id, list(cmd.depends_on))
        return [Change("todo.updated", data, item.visibility)]

    return execute(ctx, cmd, plan)


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


# What `readiness_of` says holds a todo back, as the refusal that names it.
_NOT_READY = {
    "dependency_open": ("dependencies are not done", "dependencies"),
    "dependency_missing": ("dependencies do not exist in this goal", "dependencies"),
    "gate_pending": ("pending gates block this todo", "gate_ids"),
}


def _ready_check(state: GoalState, item: Todo, now: str, agent_id: str) -> None:
    """Refuse with the first reason `readiness_of` gives among open or missing dependencies
    and pending gates (the callers check closed, blocked and claimed todos first)."""
    for reason in readiness_of(state, item, now, agent_id).reasons:
        code, ids = reason["code"], reason.get("todo_ids") or reason.get("gate_ids") or []
        if code in _NOT_READY:
            message, key = _NOT_READY[code]
            details = {"todo_id": item.todo_id, key: ids}
            raise Conflict(f"{message}: {', '.join(ids)}", code=code, **details)


def claim_todo(ctx: Context, cmd: ClaimTodo) -> Result:
    """Claim a ready todo for the acting agent under a lease."""
    todo_id = check_id(cmd.todo_id, "todo_id")
    lookup.check_lease(cmd.lease_seconds)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        if item.status == "blocked":
            raise Conflict("todo is blocked", code="todo_blocked", todo_id=todo_id)
        _owner_check(item, ctx.agent_id, now)
        _ready_check(st, item, now, ctx.agent_id)
        lease = lookup.lease_for(st, cmd.lease_seconds)
        data = {
            "todo_id": todo_id,
            "agent_id": ctx.agent_id,
            "session_id": ctx.session_id,
            "lease_expires_at": add_seconds(now, lease),
            "via_handoff": None,
        }
        return [Change("todo.claimed", data, item.visibility)]

    return execute(ctx, cmd, plan)


def renew_todo(ctx: Context, cmd: RenewTodo) -> Result:
    """Extend the acting agent's lease on a todo it holds (a heartbeat)."""
    todo_id = check_id(cmd.todo_id, "todo_id")
    lookup.check_lease(cmd.lease_seconds)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        lookup.require_holder(item, ctx.agent_id)
        lease = lookup.lease_for(st, cmd.lease_seconds)
        data = {"todo_id": todo_id, "lease_expires_at": add_seconds(now, lease)}
        return [Change("todo.renewed", data, item.visibility)]

    return execute(ctx, cmd, plan)


Check = Callable[[GoalState, Todo, Context, str], None]


def _transition(
    ctx: Context, cmd: TodoTransition, event_type: str, check: Check, *, reason_required: bool
) -> Result:
    """Append `event_type` on one todo after `check`, with the command's reason."""
    todo_id = check_id(cmd.todo_id, "todo_id")
    cmd = replace(cmd, reason=lookup.text(cmd.reason, "reason", required=reason_required) or None)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        check(st, item, ctx, now)
        reason = ctx.optional_text(cmd.reason, item.visibility)
        return [Change(event_type, {"todo_id": todo_id, "reason": reason}, item.visibility)]

    return execute(ctx, cmd, plan)


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


def release_todo(ctx: Context, cmd: ReleaseTodo) -> Result:
    """Give up the acting agent's claim; the todo is open again."""
    return _transition(ctx, cmd, "todo.released", _can_release, reason_required=False)


def block_todo(ctx: Context, cmd: BlockTodo) -> Result:
    """Mark a todo blocked, with the reason (required)."""
    return _transition(ctx, cmd, "todo.blocked", _can_block, reason_required=True)


def unblock_todo(ctx: Context, cmd: UnblockTodo) -> Result:
    """Clear a todo's blocked state."""
    return _transition(ctx, cmd, "todo.unblocked", _can_unblock, reason_required=False)


def reopen_todo(ctx: Context, cmd: ReopenTodo) -> Result:
    """Reopen a done or cancelled todo, with the reason (required)."""
    return _transition(ctx, cmd, "todo.reopened", _can_reopen, reason_required=True)


def cancel_todo(ctx: Context, cmd: CancelTodo) -> Result:
    """Cancel an open todo."""
    return _transition(ctx, cmd, "todo.cancelled", _can_cancel, reason_required=False)


def complete_todo(ctx: Context, cmd: CompleteTodo) -> Result:
    """Complete a todo, citing its evidence: refused while it is not ready."""
    todo_id = check_id(cmd.todo_id, "todo_id")
    cmd = replace(cmd, summary=lookup.text(cmd.summary, "summary", required=False) or None)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        if item.status == "blocked":
            raise Conflict(
                "todo is blocked; unblock it first", code="todo_blocked", todo_id=todo_id
            )
        _owner_check(item, ctx.agent_id, now)
        _ready_check(st, item, now, ctx.agent_id)
        evidence = lookup.existing_evidence(st, cmd.evidence_ids)
        lookup.todos_named(st, cmd.successor)
        data = {
            "todo_id": todo_id,
            "evidence_ids": evidence,
            "successor": cmd.successor,
            "summary": ctx.optional_text(cmd.summary, item.visibility),
        }
        return [Change("todo.completed", data, item.visibility)]

    return execute(ctx, cmd, plan)
