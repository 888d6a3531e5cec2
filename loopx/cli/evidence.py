"""`loopx evidence …` and `loopx run …`."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    actor,
    checkout_root_option,
    common,
    context,
    count,
    emit,
    emit_result,
    open_store,
    split_ids,
    text_resolver,
)


@click.group()
def evidence() -> None:
    """Record and list evidence."""


@evidence.command("add")
@click.option("--goal-id", required=True)
@click.option("--kind", required=True, help="test, ci, pr, commit, review, log, note, …")
@click.option("--summary", required=True)
@click.option("--ref", "refs", multiple=True, help="A URI or sha256: reference (repeatable).")
@click.option(
    "--file",
    "body_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A body to keep in the private blob store (max 5 MiB).",
)
@click.option(
    "--revision", default=None, help="Git commit it was observed at (default: HEAD of --workspace)."
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    callback=checkout_root_option,
    help="Checkout whose HEAD binds the evidence "
    "(default: the git work tree of the current folder).",
)
@click.option("--todo-id", default=None, help="The todo it supports.")
@click.option("--evidence-id", default=None)
@click.option("--visibility", type=VISIBILITY_CHOICE, default="private", show_default=True)
@click.option("--operation-id", default=None)
@actor
@common()
def add(
    goal_id: str,
    kind: str,
    summary: str,
    refs: tuple[str, ...],
    body_file: Path | None,
    revision: str | None,
    workspace: Path,
    todo_id: str | None,
    evidence_id: str | None,
    visibility: str,
    operation_id: str | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Record evidence, bound to the git revision it was observed at."""
    from loopx.engine.evidence import add_evidence, read_body

    ctx = context(root, agent_id, session_id)
    body = read_body(body_file) if body_file is not None else None
    result = add_evidence(
        ctx,
        goal_id,
        kind=kind,
        summary=summary,
        refs=list(refs),
        body=body,
        revision=revision,
        workspace=workspace,
        todo_id=todo_id,
        evidence_id=evidence_id,
        visibility=visibility,
        operation_id=operation_id,
    )
    emit_result(fmt, result, "evidence")


@evidence.command("list")
@click.option("--goal-id", required=True)
@click.option("--todo-id", default=None)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    callback=checkout_root_option,
    help="Checkout whose HEAD decides freshness "
    "(default: the git work tree of the current folder).",
)
@common()
def list_evidence(
    goal_id: str, todo_id: str | None, workspace: Path, root: Path | None, fmt: str, debug: bool
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

    def text() -> str:
        return (
            "\n".join(
                f"{e['evidence_id']:<20} {e['kind']:<7} {e['freshness']:<10} "
                f"{(e['revision'] or '-')[:10]:<10} {e['summary']}"
                for e in rows
            )
            or "no evidence"
        )

    emit(fmt, {"goal_id": goal_id, "head": head, "evidence": rows}, text)


@click.group()
def run() -> None:
    """Record and list agent runs."""


@run.command("record")
@click.option("--goal-id", required=True)
@click.option(
    "--outcome",
    required=True,
    type=click.Choice(["progress", "completed", "blocked", "failed", "no_op", "waiting"]),
)
@click.option("--todo-id", default=None)
@click.option("--summary", default=None)
@click.option("--evidence-id", "evidence_ids", multiple=True)
@click.option("--successor", default=None, help="The todo to pick up next.")
@click.option("--wait", default=None, help="What the run is waiting for.")
@click.option("--quota-spent", type=count(), default=1, show_default=True)
@click.option("--run-id", default=None)
@click.option("--visibility", type=VISIBILITY_CHOICE, default="team", show_default=True)
@click.option("--operation-id", default=None)
@actor
@common()
def record(
    goal_id: str,
    outcome: str,
    todo_id: str | None,
    summary: str | None,
    evidence_ids: tuple[str, ...],
    successor: str | None,
    wait: str | None,
    quota_spent: int,
    run_id: str | None,
    visibility: str,
    operation_id: str | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Record one bounded agent turn (--agent-id, --session-id) and what it spent."""
    from loopx.engine.evidence import record_run

    ctx = context(root, agent_id, session_id)
    result = record_run(
        ctx,
        goal_id,
        outcome=outcome,
        todo_id=todo_id,
        summary=summary,
        evidence_ids=split_ids(evidence_ids),
        successor=successor,
        wait=wait,
        quota_spent=quota_spent,
        run_id=run_id,
        visibility=visibility,
        operation_id=operation_id,
    )
    emit_result(fmt, result, "run")


@run.command("list")
@click.option("--goal-id", required=True)
@click.option("--agent-id", default=None, help="Only this agent's runs.")
@common()
def list_runs(goal_id: str, agent_id: str | None, root: Path | None, fmt: str, debug: bool) -> None:
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

    def text() -> str:
        return (
            "\n".join(
                f"{r['run_id']:<12} {r['agent_id']:<16} {r['outcome']:<10} "
                f"{r['todo_id'] or '-':<16} {r.get('summary') or ''}"
                for r in rows
            )
            or "no runs"
        )

    emit(fmt, {"goal_id": goal_id, "runs": rows}, text)
