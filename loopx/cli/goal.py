"""`loopx goal …`, `loopx agent register`, `loopx quota set`, `loopx note add`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    common,
    count,
    emit,
    lease_option,
    open_store,
    text_resolver,
    visibility_option,
)
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import goals


@click.group()
def goal() -> None:
    """Create, show, list and close goals."""


@write(goal, "create", goals.create_goal, lambda c: f"goal {c.goal_id}")
@click.option("--goal-id", required=True, help="Slug id, e.g. launch.")
@click.option("--title", required=True)
@click.option("--objective", required=True)
@click.option("--acceptance", multiple=True, help="An acceptance criterion (repeatable).")
@click.option("--repository", default=None, help="Repository URL the work lives in.")
@visibility_option("team")
@click.option("--predecessor", default=None, help="A goal this one continues.")
@lease_option("Default claim lease (default 1800).")
@click.option("--quota", type=count(), default=None, help="Run budget.")
def create() -> None:
    """Create a goal (its ledger starts with goal.created)."""


@read(goal, "show")
def show(goal_id: str, root: Path | None, fmt: str) -> None:
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
def list_goals(root: Path | None, fmt: str) -> None:
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


@write(goal, "close", goals.close_goal, lambda c: f"goal {c.goal_id} {c.outcome}")
@click.option("--outcome", type=click.Choice(["achieved", "abandoned"]), required=True)
@click.option("--reason", default=None)
def close() -> None:
    """Close a goal for good. Later writes fail with goal_terminal."""


@click.group()
def agent() -> None:
    """Register agents on a goal."""


@write(agent, "register", goals.register_agent, "agent")
@click.option("--name", default=None, help="Display name.")
@click.option("--kind", default=None, help="e.g. coding-agent, reviewer.")
def register() -> None:
    """Register --agent-id on a goal."""


@click.group()
def quota() -> None:
    """Set a goal's quota."""


@write(quota, "set", goals.set_quota, "quota")
@click.option(
    "--budget",
    "quota",
    type=count(),
    default=None,
    help="Total budget; omit to remove the limit.",
)
@click.option("--unit", default="runs", show_default=True)
def quota_set() -> None:
    """Set (or clear) the goal's run budget."""


@click.group()
def note() -> None:
    """Record lessons, decisions and notes."""


@write(note, "add", goals.add_note, lambda c: c.kind)
@click.option("--text", required=True)
@click.option(
    "--kind", type=click.Choice(["lesson", "decision", "note"]), default="note", show_default=True
)
@click.option("--todo-id", default=None)
@visibility_option("private")
@click.option("--note-id", default=None)
def note_add() -> None:
    """Add a note. Private notes go to this host's blob store; the ledger keeps the hash."""
