"""Shared precondition helpers for the write paths: find entities or raise typed errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import VISIBILITIES, check_id
from loopx.state.entities import Gate, GoalState, Todo
from loopx.state.frontier import lease_live

MAX_TEXT = 20_000
MAX_TITLE = 500
LEASE_RANGE = (1, 30 * 86400)  # a claim's lease: one second to thirty days
DEFAULT_LEASE = 1800


def need_state(state: GoalState | None) -> GoalState:
    if state is None:  # execute() already refuses unknown goals; this narrows the type
        raise NotFound("goal not found", code="goal_not_found")
    return state


def todo(state: GoalState, todo_id: str) -> Todo:
    found = state.todos.get(check_id(todo_id, "todo_id"))
    if found is None:
        raise NotFound("todo not found", code="todo_not_found", todo_id=todo_id)
    return found


def todos_named(state: GoalState, *todo_ids: str | None) -> None:
    """Refuse a todo id the goal does not know (`todo_not_found`); None names no todo."""
    for todo_id in todo_ids:
        if todo_id is not None:
            todo(state, todo_id)


def open_todo_in(state: GoalState | None, todo_id: str) -> tuple[GoalState, Todo]:
    """The goal and its todo `todo_id`, refused unless the todo is open (`todo_closed`)."""
    st = need_state(state)
    item = todo(st, todo_id)
    open_todo(item)
    return st, item


def gate(state: GoalState, gate_id: str) -> Gate:
    found = state.gates.get(check_id(gate_id, "gate_id"))
    if found is None:
        raise NotFound("gate not found", code="gate_not_found", gate_id=gate_id)
    return found


SHOWN_IDS = 20  # an error names at most this many ids (and counts the rest)


def _unknown(what: str, missing: list[str]) -> str:
    """The message names how many, never which: ids come from input, and input may be a
    pasted secret. The ids themselves travel in the error's details."""
    n = len(missing)
    return f"{n} unknown {what} id{'s' if n != 1 else ''} (listed in the error details)"


def existing_todos(state: GoalState, ids: Iterable[str], code: str = "todo_not_found") -> list[str]:
    ids = [check_id(i, "todo_id") for i in ids]
    missing = sorted({i for i in ids if i not in state.todos})
    if missing:
        raise NotFound(
            _unknown("todo", missing),
            code=code,
            todo_ids=missing[:SHOWN_IDS],
            missing_count=len(missing),
        )
    return list(dict.fromkeys(ids))


def existing_evidence(state: GoalState, ids: Iterable[str]) -> list[str]:
    ids = [check_id(i, "evidence_id") for i in ids]
    missing = sorted({i for i in ids if i not in state.evidence})
    if missing:
        raise NotFound(
            _unknown("evidence", missing),
            code="evidence_not_found",
            evidence_ids=missing[:SHOWN_IDS],
            missing_count=len(missing),
        )
    return list(dict.fromkeys(ids))


def new_id(prefix: str, existing: dict[str, Any], given: str | None, what: str) -> str:
    """The caller's id when given (and unused), else the next free `<prefix>-<n>`."""
    if given:
        check_id(given, what)
        if given in existing:
            code = what.removesuffix("_id") + "_exists"  # todo_exists, evidence_exists, …
            raise Conflict(f"{what} already exists", code=code, **{what: given})
        return given
    n = len(existing) + 1
    while f"{prefix}-{n}" in existing:
        n += 1
    return f"{prefix}-{n}"


def visibility(value: str | None, default: str) -> str:
    value = value or default
    if value not in VISIBILITIES:
        raise InvalidInput("visibility must be public, team or private", code="invalid_visibility")
    return value


def text(value: str | None, what: str, *, required: bool = True, limit: int = MAX_TEXT) -> str:
    """Validate free text: present when required, not blank, within its length limit."""
    if value is None or not value.strip():
        if required:
            raise InvalidInput(f"{what} must not be empty", code="empty_text", field=what)
        return ""
    if len(value) > limit:
        raise InvalidInput(
            f"{what} is {len(value)} characters; the limit is {limit}",
            code="text_too_long",
            field=what,
            limit=limit,
        )
    return value


def open_todo(item: Todo) -> None:
    if not item.is_open:
        raise Conflict(
            f"todo is {item.status}", code="todo_closed", todo_id=item.todo_id, status=item.status
        )


def dependency_cycle(state: GoalState, todo_id: str, depends_on: list[str]) -> list[str] | None:
    """A dependency path from `todo_id` through `depends_on` back to itself, or None.

    Iterative, with parent links instead of copied paths, so 10,000-deep chains stay cheap.
    """
    todos = state.todos
    parent: dict[str, str] = {}
    stack = []
    for dep in depends_on:
        if dep not in parent:
            parent[dep] = todo_id
            stack.append(dep)
    while stack:
        node = stack.pop()
        if node == todo_id:
            path = [node]
            cursor = parent[node]
            while cursor != todo_id:
                path.append(cursor)
                cursor = parent[cursor]
            path.append(todo_id)
            return path[::-1]
        item = todos.get(node)
        if item is None:
            continue
        for dep in item.depends_on:
            if dep not in parent:
                parent[dep] = node
                stack.append(dep)
    return None


# -- claims and leases ------------------------------------------------------------------------


def check_lease(seconds: int | None) -> int | None:
    """Refuse a lease outside `LEASE_RANGE` (None: the goal's policy decides)."""
    low, high = LEASE_RANGE
    if seconds is not None and not low <= seconds <= high:
        raise InvalidInput("lease must be 1 second to 30 days", code="invalid_lease")
    return seconds


def lease_for(state: GoalState, seconds: int | None) -> int:
    """The lease a claim gets: `seconds` when given (checked), else the goal's policy."""
    if check_lease(seconds) is not None:
        return seconds  # type: ignore[return-value]
    return int(state.policy.get("lease_seconds", DEFAULT_LEASE))


def todo_revision(todo_id: str) -> Callable[[GoalState], int]:
    """The revision guard's subject for a todo write (0 when the todo does not exist)."""
    return lambda state: state.todos[todo_id].revision if todo_id in state.todos else 0


def gate_revision(gate_id: str) -> Callable[[GoalState], int]:
    """The revision guard's subject for a gate write (0 when the gate does not exist)."""
    return lambda state: state.gates[gate_id].revision if gate_id in state.gates else 0


def require_holder(item: Todo, agent_id: str, now: str | None = None, *, doing: str = "") -> None:
    """Refuse unless `agent_id` holds `item`'s claim; with `now`, unless the lease is live too.

    `doing` names the action in the messages ("prepare its handoff")."""
    claim = item.claim
    if claim is None:
        raise Conflict(
            "todo is not claimed" + (f"; claim it before you {doing}" if doing else ""),
            code="not_claimed",
            todo_id=item.todo_id,
        )
    if claim["agent_id"] != agent_id:
        raise Conflict(
            f"only the agent holding the todo's claim can {doing}"
            if doing
            else "todo is claimed by another agent",
            code="claim_owner_mismatch",
            todo_id=item.todo_id,
            claimed_by=claim["agent_id"],
        )
    if now is not None and not lease_live(item, now):
        raise Conflict(
            "your lease on this todo has expired; renew it (loopx todo renew) first",
            code="lease_expired",
            todo_id=item.todo_id,
            lease_expires_at=claim["lease_expires_at"],
        )
