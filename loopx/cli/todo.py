"""`loopx todo …`: the todo lifecycle and its reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loopx.cli.common import (
    count,
    emit,
    ids,
    lease_option,
    open_store,
    split_ids,
    text_resolver,
    visibility_option,
)
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import commands, todos
from loopx.engine.core import Context, Result

T = TypeVar("T", bound=commands.TodoTransition)

STATUSES = click.Choice(["open", "active", "blocked", "done", "cancelled"])
ROLES = click.Choice(todos.ROLES)  # who does a todo: an agent, or a person


@click.group()
def todo() -> None:
    """Add, claim, complete and inspect todos."""


@write(todo, "add", todos.add_todo, "todo")
@click.option("--title", required=True)
@click.option("--todo-id", default=None, help="Stable id (default: todo-N).")
@click.option(
    "--role",
    type=ROLES,
    default="agent",
    show_default=True,
    help="Who does it: an agent, or a person.",
)
@click.option("--kind", default="task", show_default=True, help="task, monitor, review, …")
@click.option(
    "--priority", type=click.IntRange(0, 4), default=2, show_default=True, help="0 is highest."
)
@click.option(
    "--depends-on", multiple=True, callback=ids, help="Todo ids (repeatable or comma-separated)."
)
@click.option("--acceptance", default=None, help="What done means.")
@visibility_option("team")
@click.option("--predecessor", default=None, help="A todo this one succeeds.")
def add() -> None:
    """Add a todo. --expected-revision guards the goal's head revision."""


@write(todo, "update", todos.update_todo, "todo")
@click.option("--todo-id", required=True)
@click.option("--title", default=None)
@click.option("--priority", type=click.IntRange(0, 4), default=None)
@click.option("--depends-on", multiple=True, help="Replaces the dependency list.")
@click.option("--no-depends", is_flag=True, help="Clear all dependencies.")
@click.option("--acceptance", default=None)
@click.option("--kind", default=None)
@click.option("--role", type=ROLES, default=None)
def update(depends_on: tuple[str, ...], no_depends: bool, **fields: Any) -> commands.UpdateTodo:
    """Change an open todo's fields. --expected-revision guards the todo's revision."""
    deps = [] if no_depends else (split_ids(depends_on) if depends_on else None)
    return commands.UpdateTodo(depends_on=deps, **fields)


@write(todo, "claim", todos.claim_todo, "claim on")
@click.option("--todo-id", required=True)
@lease_option("Lease length (default: the goal's policy).")
def claim() -> None:
    """Claim a ready todo for --agent-id under a lease. Another agent's live claim is
    claim_owner_mismatch; only `loopx handoff adopt` transfers a claim."""


@write(todo, "renew", todos.renew_todo, "lease on")
@click.option("--todo-id", required=True)
@lease_option()
def renew() -> None:
    """Extend your lease on a todo (a heartbeat)."""


def _transition(
    name: str,
    run: Callable[[Context, T], Result],
    help_text: str,
    reason_help: str,
    reason_required: bool,
) -> None:
    """Declare `todo NAME`: a transition on one todo, with a reason."""

    def build() -> None:
        """`help_text`, set below."""

    build.__doc__ = help_text
    reason = click.option("--reason", required=reason_required, default=None, help=reason_help)
    todo_id = click.option("--todo-id", required=True)
    write(todo, name, run, f"{name} of")(todo_id(reason(build)))


# The transitions on one todo: name, engine path, help, --reason's help, whether it is required.
TRANSITIONS: tuple[tuple[str, Callable[..., Result], str, str, bool], ...] = (
    ("release", todos.release_todo, "Give up your claim; the todo is open again.", "Why.", False),
    ("block", todos.block_todo, "Mark a todo blocked, with the reason.", "What blocks it.", True),
    ("unblock", todos.unblock_todo, "Clear a todo's blocked state.", "Why.", False),
    (
        "reopen",
        todos.reopen_todo,
        "Reopen a done or cancelled todo (an explicit event).",
        "Why it must be reopened.",
        True,
    ),
    ("cancel", todos.cancel_todo, "Cancel an open todo.", "Why.", False),
)
for transition in TRANSITIONS:
    _transition(*transition)


@write(todo, "complete", todos.complete_todo, "completion of")
@click.option("--todo-id", required=True)
@click.option("--summary", default=None, help="What was done.")
@click.option(
    "--evidence-id",
    "evidence_ids",
    multiple=True,
    callback=ids,
    help="Evidence supporting completion (repeatable).",
)
@click.option("--successor", default=None, help="A todo that continues this one.")
def complete() -> None:
    """Complete a todo. Refused while dependencies are open (dependency_open) or a pending
    gate blocks it (gate_pending)."""


def _todo_line(t: dict[str, Any]) -> str:
    claim = f"  @{t['claim']['agent_id']}" if t.get("claim") else ""
    deps = f"  after {','.join(t['depends_on'])}" if t["depends_on"] else ""
    return (
        f"{t['todo_id']:<20} {t['status']:<9} p{t['priority']} {t['role']:<5} "
        f"{t['title']}{claim}{deps}"
    )


@read(todo, "list")
@click.option("--status", "statuses", type=STATUSES, multiple=True, help="Filter (repeatable).")
@click.option("--role", type=ROLES, default=None)
@click.option("--limit", type=count(1), default=None)
def list_todos(
    goal_id: str,
    statuses: tuple[str, ...],
    role: str | None,
    limit: int | None,
    root: Path | None,
    fmt: str,
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


@read(todo, "show")
@click.option("--todo-id", required=True)
def show(goal_id: str, todo_id: str, root: Path | None, fmt: str) -> None:
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
