"""`loopx todo …`: the todo lifecycle and its reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    actor,
    common,
    context,
    count,
    emit,
    emit_result,
    guarded,
    open_store,
    split_ids,
    text_resolver,
)
from loopx.engine.lookup import LEASE_RANGE

STATUSES = click.Choice(["open", "active", "blocked", "done", "cancelled"])


@click.group()
def todo() -> None:
    """Add, claim, complete and inspect todos."""


@todo.command("add")
@click.option("--goal-id", required=True)
@click.option("--title", required=True)
@click.option("--todo-id", default=None, help="Stable id (default: todo-N).")
@click.option(
    "--role",
    type=click.Choice(["agent", "user"]),
    default="agent",
    show_default=True,
    help="Who does it: an agent, or a person.",
)
@click.option("--kind", default="task", show_default=True, help="task, monitor, review, …")
@click.option(
    "--priority", type=click.IntRange(0, 4), default=2, show_default=True, help="0 is highest."
)
@click.option("--depends-on", multiple=True, help="Todo ids (repeatable or comma-separated).")
@click.option("--acceptance", default=None, help="What done means.")
@click.option("--visibility", type=VISIBILITY_CHOICE, default="team", show_default=True)
@click.option("--predecessor", default=None, help="A todo this one succeeds.")
@guarded
@actor
@common()
def add(
    goal_id: str,
    title: str,
    todo_id: str | None,
    role: str,
    kind: str,
    priority: int,
    depends_on: tuple[str, ...],
    acceptance: str | None,
    visibility: str,
    predecessor: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Add a todo. --expected-revision guards the goal's head revision."""
    from loopx.engine.todos import add_todo

    ctx = context(root, agent_id, session_id)
    result = add_todo(
        ctx,
        goal_id,
        title=title,
        todo_id=todo_id,
        role=role,
        kind=kind,
        priority=priority,
        depends_on=split_ids(depends_on),
        acceptance=acceptance,
        visibility=visibility,
        predecessor=predecessor,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "todo")


@todo.command("update")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option("--title", default=None)
@click.option("--priority", type=click.IntRange(0, 4), default=None)
@click.option("--depends-on", multiple=True, help="Replaces the dependency list.")
@click.option("--no-depends", is_flag=True, help="Clear all dependencies.")
@click.option("--acceptance", default=None)
@click.option("--kind", default=None)
@click.option("--role", type=click.Choice(["agent", "user"]), default=None)
@guarded
@actor
@common()
def update(
    goal_id: str,
    todo_id: str,
    title: str | None,
    priority: int | None,
    depends_on: tuple[str, ...],
    no_depends: bool,
    acceptance: str | None,
    kind: str | None,
    role: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Change an open todo's fields. --expected-revision guards the todo's revision."""
    from loopx.engine.todos import update_todo

    deps = [] if no_depends else (split_ids(depends_on) if depends_on else None)
    ctx = context(root, agent_id, session_id)
    result = update_todo(
        ctx,
        goal_id,
        todo_id,
        title=title,
        priority=priority,
        depends_on=deps,
        acceptance=acceptance,
        kind=kind,
        role=role,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "todo")


@todo.command("claim")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option(
    "--lease-seconds",
    type=click.IntRange(*LEASE_RANGE),
    default=None,
    help="Lease length (default: the goal's policy).",
)
@guarded
@actor
@common()
def claim(
    goal_id: str,
    todo_id: str,
    lease_seconds: int | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Claim a ready todo for --agent-id under a lease. Another agent's live claim is
    claim_owner_mismatch; only `loopx handoff adopt` transfers a claim."""
    from loopx.engine.todos import claim_todo

    ctx = context(root, agent_id, session_id)
    result = claim_todo(
        ctx,
        goal_id,
        todo_id,
        lease_seconds=lease_seconds,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "claim on")


@todo.command("renew")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option("--lease-seconds", type=click.IntRange(*LEASE_RANGE), default=None)
@guarded
@actor
@common()
def renew(
    goal_id: str,
    todo_id: str,
    lease_seconds: int | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Extend your lease on a todo (a heartbeat)."""
    from loopx.engine.todos import renew_todo

    ctx = context(root, agent_id, session_id)
    result = renew_todo(
        ctx,
        goal_id,
        todo_id,
        lease_seconds=lease_seconds,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "lease on")


def _transition(
    name: str, fn_name: str, help_text: str, reason_help: str, reason_required: bool = False
) -> None:
    @todo.command(name, help=help_text)
    @click.option("--goal-id", required=True)
    @click.option("--todo-id", required=True)
    @click.option("--reason", required=reason_required, default=None, help=reason_help)
    @guarded
    @actor
    @common()
    def command(
        goal_id: str,
        todo_id: str,
        reason: str | None,
        operation_id: str | None,
        expected_revision: int | None,
        agent_id: str,
        session_id: str,
        root: Path | None,
        fmt: str,
        debug: bool,
    ) -> None:
        from loopx.engine import todos

        ctx = context(root, agent_id, session_id)
        result = getattr(todos, fn_name)(
            ctx,
            goal_id,
            todo_id,
            reason=reason,
            operation_id=operation_id,
            expected_revision=expected_revision,
        )
        emit_result(fmt, result, f"{name} of")


_transition("release", "release_todo", "Give up your claim; the todo is open again.", "Why.")
_transition(
    "block",
    "block_todo",
    "Mark a todo blocked, with the reason.",
    "What blocks it.",
    reason_required=True,
)
_transition("unblock", "unblock_todo", "Clear a todo's blocked state.", "Why.")
_transition(
    "reopen",
    "reopen_todo",
    "Reopen a done or cancelled todo (an explicit event).",
    "Why it must be reopened.",
    reason_required=True,
)
_transition("cancel", "cancel_todo", "Cancel an open todo.", "Why.")


@todo.command("complete")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option("--summary", default=None, help="What was done.")
@click.option(
    "--evidence-id",
    "evidence_ids",
    multiple=True,
    help="Evidence supporting completion (repeatable).",
)
@click.option("--successor", default=None, help="A todo that continues this one.")
@guarded
@actor
@common()
def complete(
    goal_id: str,
    todo_id: str,
    summary: str | None,
    evidence_ids: tuple[str, ...],
    successor: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Complete a todo. Refused while dependencies are open (dependency_open) or a pending
    gate blocks it (gate_pending)."""
    from loopx.engine.todos import complete_todo

    ctx = context(root, agent_id, session_id)
    result = complete_todo(
        ctx,
        goal_id,
        todo_id,
        summary=summary,
        evidence_ids=split_ids(evidence_ids),
        successor=successor,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "completion of")


def _todo_line(t: dict[str, Any]) -> str:
    claim = f"  @{t['claim']['agent_id']}" if t.get("claim") else ""
    deps = f"  after {','.join(t['depends_on'])}" if t["depends_on"] else ""
    return (
        f"{t['todo_id']:<20} {t['status']:<9} p{t['priority']} {t['role']:<5} "
        f"{t['title']}{claim}{deps}"
    )


@todo.command("list")
@click.option("--goal-id", required=True)
@click.option("--status", "statuses", type=STATUSES, multiple=True, help="Filter (repeatable).")
@click.option("--role", type=click.Choice(["agent", "user"]), default=None)
@click.option("--limit", type=count(1), default=None)
@common()
def list_todos(
    goal_id: str,
    statuses: tuple[str, ...],
    role: str | None,
    limit: int | None,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """List a goal's todos, oldest first."""
    from loopx.engine.clock import from_env
    from loopx.engine.core import require_goal
    from loopx.state.views import todo_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    resolve, now = text_resolver(store), from_env().now()
    items = sorted(state.todos.values(), key=lambda t: t.created_seq)
    items = [
        t
        for t in items
        if (not statuses or t.status in statuses) and (role is None or t.role == role)
    ]
    total = len(items)
    rows = [todo_view(t, resolve, now) for t in items[:limit]]
    data = {"goal_id": goal_id, "todos": rows, "total": total, "shown": len(rows)}

    def text() -> str:
        lines = [_todo_line(t) for t in rows] or ["no todos"]
        if len(rows) < total:
            lines.append(f"… {total - len(rows)} more not shown")
        return "\n".join(lines)

    emit(fmt, data, text)


def todo_detail(store: Any, goal_id: str, todo_id: str, now: str) -> dict[str, Any]:
    """One todo with its claim, the gates holding it, its evidence and runs."""
    from loopx.engine import lookup
    from loopx.engine.core import require_goal
    from loopx.state.views import evidence_view, gate_view, run_view, todo_view

    state = require_goal(store, goal_id)
    item = lookup.todo(state, todo_id)
    resolve = text_resolver(store)
    data = todo_view(item, resolve, now)
    data["gates"] = [
        gate_view(g, resolve) for g in state.gates.values() if todo_id in g.blocks or g.blocks_goal
    ]
    data["evidence"] = [
        evidence_view(e, resolve) for e in state.evidence.values() if e.todo_id == todo_id
    ]
    data["runs"] = [run_view(r, resolve) for r in state.runs.values() if r.todo_id == todo_id]
    return data


@todo.command("show")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@common()
def show(goal_id: str, todo_id: str, root: Path | None, fmt: str, debug: bool) -> None:
    """Show one todo with its claim, gates, evidence and runs."""
    from loopx.engine.clock import from_env

    data = todo_detail(open_store(root), goal_id, todo_id, from_env().now())

    def text() -> str:
        lines = [_todo_line(data), f"revision {data['revision']}, updated {data['updated_at']}"]
        if data.get("claim"):
            c = data["claim"]
            lines.append(
                f"claimed by {c['agent_id']} ({c['session_id']}) until "
                f"{c['lease_expires_at']}{'' if c['live'] else ' (expired)'}"
            )
        for name in ("acceptance", "reason", "summary"):
            if data.get(name):
                lines.append(f"{name}: {data[name]}")
        lines += [f"gate {g['gate_id']} [{g['status']}]: {g['question']}" for g in data["gates"]]
        lines += [
            f"evidence {e['evidence_id']} ({e['kind']}): {e['summary']}" for e in data["evidence"]
        ]
        lines += [f"run {r['run_id']} by {r['agent_id']}: {r['outcome']}" for r in data["runs"]]
        return "\n".join(lines)

    emit(fmt, data, text)
