"""`loopx evidence …` and `loopx run …`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    count,
    emit_rows,
    ids,
    open_store,
    path_option,
    text_resolver,
    visibility_option,
    workspace_option,
)
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import commands
from loopx.engine import evidence as ev
from loopx.engine.evidence import OUTCOMES


@click.group()
def evidence() -> None:
    """Record and list evidence."""


@write(evidence, "add", ev.add_evidence, "evidence")
@click.option("--kind", required=True, help="test, ci, pr, commit, review, log, note, …")
@click.option("--summary", required=True)
@click.option("--ref", "refs", multiple=True, help="A URI or sha256: reference (repeatable).")
@path_option("--file", "body_file", help="A body to keep in the private blob store (max 5 MiB).")
@click.option(
    "--revision", default=None, help="Git commit it was observed at (default: HEAD of --workspace)."
)
@workspace_option("Checkout whose HEAD binds the evidence")
@click.option("--todo-id", default=None, help="The todo it supports.")
@click.option("--evidence-id", default=None)
@visibility_option("private")
def add(body_file: Path | None, **fields: Any) -> commands.AddEvidence:
    """Record evidence, bound to the git revision it was observed at."""
    from loopx.engine.evidence import read_body

    body = read_body(body_file) if body_file is not None else None
    return commands.AddEvidence(body=body, **fields)


@read(evidence, "list")
@click.option("--todo-id", default=None)
@workspace_option("Checkout whose HEAD decides freshness")
def list_evidence(
    goal_id: str, todo_id: str | None, workspace: Path, root: Path | None, fmt: str
) -> None:
    """List evidence with its freshness against the workspace's HEAD."""
    from loopx.engine.core import require_goal
    from loopx.engine.git import head_revision
    from loopx.state.views import evidence_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    resolve, head = text_resolver(store), head_revision(workspace)
    rows = [
        evidence_view(e, resolve, head)
        for e in sorted(state.evidence.values(), key=lambda e: e.created_seq)
        if todo_id is None or e.todo_id == todo_id
    ]

    emit_rows(
        fmt,
        {"goal_id": goal_id, "head": head, "evidence": rows},
        rows,
        lambda e: (
            f"{e['evidence_id']:<20} {e['kind']:<7} {e['freshness']:<10} "
            f"{(e['revision'] or '-')[:10]:<10} {e['summary']}"
        ),
        "no evidence",
    )


@click.group()
def run() -> None:
    """Record and list agent runs."""


@write(run, "record", ev.record_run, "run")
@click.option("--outcome", required=True, type=click.Choice(OUTCOMES))
@click.option("--todo-id", default=None)
@click.option("--summary", default=None)
@click.option("--evidence-id", "evidence_ids", multiple=True, callback=ids)
@click.option("--successor", default=None, help="The todo to pick up next.")
@click.option("--wait", default=None, help="What the run is waiting for.")
@click.option("--quota-spent", type=count(), default=1, show_default=True)
@click.option("--run-id", default=None)
@visibility_option("team")
def record() -> None:
    """Record one bounded agent turn (--agent-id, --session-id) and what it spent."""


@read(run, "list")
@click.option("--agent-id", default=None, help="Only this agent's runs.")
def list_runs(goal_id: str, agent_id: str | None, root: Path | None, fmt: str) -> None:
    """List a goal's runs, oldest first."""
    from loopx.engine.core import require_goal
    from loopx.state.views import run_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    resolve = text_resolver(store)
    rows = [
        run_view(r, resolve)
        for r in sorted(state.runs.values(), key=lambda r: r.created_seq)
        if agent_id is None or r.agent_id == agent_id
    ]

    emit_rows(
        fmt,
        {"goal_id": goal_id, "runs": rows},
        rows,
        lambda r: (
            f"{r['run_id']:<12} {r['agent_id']:<16} {r['outcome']:<10} "
            f"{r['todo_id'] or '-':<16} {r.get('summary') or ''}"
        ),
        "no runs",
    )
