"""`loopx goal …`, `loopx agent register`, `loopx quota set`, `loopx note add`."""

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
    text_resolver,
)
from loopx.engine.lookup import LEASE_RANGE


@click.group()
def goal() -> None:
    """Create, show, list and close goals."""


@goal.command("create")
@click.option("--goal-id", required=True, help="Slug id, e.g. launch.")
@click.option("--title", required=True)
@click.option("--objective", required=True)
@click.option("--acceptance", multiple=True, help="An acceptance criterion (repeatable).")
@click.option("--repository", default=None, help="Repository URL the work lives in.")
@click.option("--visibility", type=VISIBILITY_CHOICE, default="team", show_default=True)
@click.option("--predecessor", default=None, help="A goal this one continues.")
@click.option(
    "--lease-seconds",
    type=click.IntRange(*LEASE_RANGE),
    default=None,
    help="Default claim lease (default 1800).",
)
@click.option("--quota", type=count(), default=None, help="Run budget.")
@click.option("--operation-id", default=None)
@actor
@common()
def create(
    goal_id: str,
    title: str,
    objective: str,
    acceptance: tuple[str, ...],
    repository: str | None,
    visibility: str,
    predecessor: str | None,
    lease_seconds: int | None,
    quota: int | None,
    operation_id: str | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Create a goal (its ledger starts with goal.created)."""
    from loopx.engine.goals import create_goal

    ctx = context(root, agent_id, session_id)
    result = create_goal(
        ctx,
        goal_id,
        title=title,
        objective=objective,
        acceptance=list(acceptance),
        repository=repository,
        visibility=visibility,
        predecessor=predecessor,
        lease_seconds=lease_seconds,
        quota=quota,
        operation_id=operation_id,
    )
    emit_result(fmt, result, f"goal {goal_id}")


@goal.command("show")
@click.option("--goal-id", required=True)
@common()
def show(goal_id: str, root: Path | None, fmt: str, debug: bool) -> None:
    """Show a goal's identity, objective, acceptance and policy."""
    from loopx.engine.core import require_goal
    from loopx.state.views import counts, goal_view, quota_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    data = goal_view(state, text_resolver(store))
    data["counts"] = counts(state)
    data["quota"] = quota_view(state)

    def text() -> str:
        lines = [
            f"{data['goal_id']}: {data['title']}  [{data['status']}, {data['visibility']}, "
            f"revision {data['revision']}]",
            f"objective: {data['objective']}",
        ]
        lines += [f"  - {a}" for a in data["acceptance"]]
        c = data["counts"]
        lines.append(
            f"todos: {c['total']} ({c['open']} open, {c['active']} active, "
            f"{c['blocked']} blocked, {c['done']} done, {c['cancelled']} cancelled)"
        )
        if data["predecessor"]:
            lines.append(f"continues: {data['predecessor']}")
        return "\n".join(lines)

    emit(fmt, data, text)


@goal.command("list")
@common()
def list_goals(root: Path | None, fmt: str, debug: bool) -> None:
    """List every goal under the root."""
    from loopx.engine.goals_all import health_of, load_all
    from loopx.model.errors import LoopxError
    from loopx.state.views import counts

    store = open_store(root)
    resolve = text_resolver(store)
    rows: list[dict[str, Any]] = []
    for goal_id, loaded in load_all(store):
        if isinstance(loaded, LoopxError):
            error = loaded.to_dict()
            rows.append({"goal_id": goal_id, "health": health_of(loaded), "error": error})
            continue
        state = loaded.state
        if state is None:
            continue
        rows.append(
            {
                "goal_id": goal_id,
                "title": resolve(state.title),
                "status": state.status,
                "visibility": state.visibility,
                "revision": state.revision,
                "counts": counts(state),
                "health": "ok",
            }
        )

    def text() -> str:
        if not rows:
            return "no goals (create one with: loopx goal create --goal-id ID …)"
        return "\n".join(
            f"{r['goal_id']:<20} {r['health']} ledger ({r['error']['code']}): "
            f"{r['error']['message']}"
            if r["health"] != "ok"
            else f"{r['goal_id']:<20} {r['status']:<9} {r['visibility']:<7} "
            f"{r['counts']['done']}/{r['counts']['total']} done  {r['title']}"
            for r in rows
        )

    emit(fmt, {"goals": rows}, text)


@goal.command("close")
@click.option("--goal-id", required=True)
@click.option("--outcome", type=click.Choice(["achieved", "abandoned"]), required=True)
@click.option("--reason", default=None)
@guarded
@actor
@common()
def close(
    goal_id: str,
    outcome: str,
    reason: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Close a goal for good. Later writes fail with goal_terminal."""
    from loopx.engine.goals import close_goal

    ctx = context(root, agent_id, session_id)
    result = close_goal(
        ctx,
        goal_id,
        outcome=outcome,
        reason=reason,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, f"goal {goal_id} {outcome}")


@click.group()
def agent() -> None:
    """Register agents on a goal."""


@agent.command("register")
@click.option("--goal-id", required=True)
@click.option("--name", default=None, help="Display name.")
@click.option("--kind", default=None, help="e.g. coding-agent, reviewer.")
@click.option("--operation-id", default=None)
@actor
@common()
def register(
    goal_id: str,
    name: str | None,
    kind: str | None,
    operation_id: str | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Register --agent-id on a goal."""
    from loopx.engine.goals import register_agent

    ctx = context(root, agent_id, session_id)
    result = register_agent(ctx, goal_id, agent_id, name=name, kind=kind, operation_id=operation_id)
    emit_result(fmt, result, f"agent {agent_id}")


@click.group()
def quota() -> None:
    """Set a goal's quota."""


@quota.command("set")
@click.option("--goal-id", required=True)
@click.option(
    "--budget",
    type=count(),
    default=None,
    help="Total budget; omit to remove the limit.",
)
@click.option("--unit", default="runs", show_default=True)
@guarded
@actor
@common()
def quota_set(
    goal_id: str,
    budget: int | None,
    unit: str,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Set (or clear) the goal's run budget."""
    from loopx.engine.goals import set_quota

    ctx = context(root, agent_id, session_id)
    result = set_quota(
        ctx,
        goal_id,
        quota=budget,
        unit=unit,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "quota")


@click.group()
def note() -> None:
    """Record lessons, decisions and notes."""


@note.command("add")
@click.option("--goal-id", required=True)
@click.option("--text", "body", required=True)
@click.option(
    "--kind", type=click.Choice(["lesson", "decision", "note"]), default="note", show_default=True
)
@click.option("--todo-id", default=None)
@click.option("--visibility", type=VISIBILITY_CHOICE, default="private", show_default=True)
@click.option("--note-id", default=None)
@click.option("--operation-id", default=None)
@actor
@common()
def note_add(
    goal_id: str,
    body: str,
    kind: str,
    todo_id: str | None,
    visibility: str,
    note_id: str | None,
    operation_id: str | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Add a note. Private notes go to this host's blob store; the ledger keeps the hash."""
    from loopx.engine.goals import add_note

    ctx = context(root, agent_id, session_id)
    result = add_note(
        ctx,
        goal_id,
        text=body,
        kind=kind,
        todo_id=todo_id,
        visibility=visibility,
        note_id=note_id,
        operation_id=operation_id,
    )
    emit_result(fmt, result, f"{kind}")
