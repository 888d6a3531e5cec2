"""Evidence and run write paths: facts observed at a git revision, and bounded agent turns."""

from __future__ import annotations

import re
from pathlib import Path

from loopx.engine import lookup
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.git import head_revision
from loopx.model.errors import InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.entities import GoalState
from loopx.store import fsio
from loopx.store.blobs import blob_ref

MAX_BODY_BYTES = 5 * 1024 * 1024
_REV = re.compile(r"^[0-9a-f]{7,64}$")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
OUTCOMES = ("progress", "completed", "blocked", "failed", "no_op", "waiting")


def read_body(path: Path) -> bytes:
    """Read an evidence file through the store's file rules: a regular file, not a link, a
    FIFO or a device (`unsafe_path`, refused without blocking), at most MAX_BODY_BYTES
    (`file_too_large`, counted while reading: /proc files report no size)."""
    try:
        return fsio.current().read_file(path, limit=MAX_BODY_BYTES)
    except fsio.TooLarge:
        raise InvalidInput(
            f"evidence file is larger than the limit of {MAX_BODY_BYTES} bytes",
            code="file_too_large",
        ) from None
    except OSError:
        raise NotFound("evidence file cannot be read", code="file_not_found") from None


def add_evidence(
    ctx: Context,
    goal_id: str,
    *,
    kind: str,
    summary: str,
    refs: list[str] | None = None,
    body: bytes | None = None,
    revision: str | None = None,
    workspace: Path | None = None,
    todo_id: str | None = None,
    evidence_id: str | None = None,
    visibility: str | None = None,
    operation_id: str | None = None,
) -> Result:
    """Record evidence. Its revision is `revision`, else the workspace's git HEAD, else none."""
    vis = lookup.visibility(visibility, "private")
    if not _KIND.match(kind or ""):
        raise InvalidInput(
            "evidence kind must be a short lowercase word (test, ci, pr, …)", code="invalid_kind"
        )
    summary = lookup.text(summary, "summary", limit=lookup.MAX_TITLE)
    refs = [lookup.text(r, "ref", limit=2000) for r in refs or []]
    if revision is not None and not _REV.match(revision):
        raise InvalidInput(
            "revision must be a git commit hash (7-64 hex digits)", code="invalid_revision"
        )
    if body is not None and len(body) > MAX_BODY_BYTES:
        raise InvalidInput("evidence body is too large", code="file_too_large")
    if revision is None and workspace is not None:
        revision = head_revision(workspace)
    body_ref = blob_ref(body) if body is not None else None
    request = {
        "cmd": "evidence.add",
        "kind": kind,
        "summary": summary,
        "refs": refs,
        "body": body_ref,
        "revision": revision,
        "todo_id": todo_id,
        "evidence_id": evidence_id,
        "visibility": vis,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        if todo_id is not None:
            lookup.todo(st, todo_id)
        data = {
            "evidence_id": lookup.new_id("ev", st.evidence, evidence_id, "evidence_id"),
            "kind": kind,
            "summary": ctx.private_text(summary, vis),
            "refs": [ctx.private_text(r, vis) for r in refs],
            "revision": revision,
            "todo_id": todo_id,
            "body": {"blob": ctx.blob(body)} if body is not None else None,
            "body_bytes": len(body) if body is not None else None,
        }
        return [Change("evidence.added", data, vis)]

    return execute(ctx, goal_id, request, plan, operation_id=operation_id)


def record_run(
    ctx: Context,
    goal_id: str,
    *,
    outcome: str,
    agent_id: str | None = None,
    session_id: str | None = None,
    todo_id: str | None = None,
    summary: str | None = None,
    evidence_ids: list[str] | None = None,
    successor: str | None = None,
    wait: str | None = None,
    quota_spent: int = 1,
    run_id: str | None = None,
    visibility: str | None = None,
    operation_id: str | None = None,
) -> Result:
    """Record one bounded agent turn: who, on what, how it ended, what it spent."""
    vis = lookup.visibility(visibility, "team")
    if outcome not in OUTCOMES:
        raise InvalidInput("outcome must be one of " + ", ".join(OUTCOMES), code="invalid_outcome")
    if quota_spent < 0:
        raise InvalidInput("quota spent must be zero or more", code="invalid_quota")
    agent = check_id(agent_id or ctx.agent_id, "agent_id")
    session = check_id(session_id or ctx.session_id, "session_id")
    summary = lookup.text(summary, "summary", required=False) or None
    wait = lookup.text(wait, "wait", required=False) or None
    request = {
        "cmd": "run.record",
        "outcome": outcome,
        "agent_id": agent,
        "session_id": session,
        "todo_id": todo_id,
        "summary": summary,
        "evidence_ids": evidence_ids or [],
        "successor": successor,
        "wait": wait,
        "quota_spent": quota_spent,
        "run_id": run_id,
        "visibility": vis,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        from loopx.engine.turns import refuse_unsettled

        st = lookup.need_state(state)
        for ref in (todo_id, successor):
            if ref is not None:
                lookup.todo(st, ref)
        refuse_unsettled(st, todo_id)
        data = {
            "run_id": lookup.new_id("run", st.runs, run_id, "run_id"),
            "agent_id": agent,
            "session_id": session,
            "todo_id": todo_id,
            "outcome": outcome,
            "summary": ctx.private_text(summary, vis) if summary else None,
            "evidence_ids": lookup.existing_evidence(st, evidence_ids or []),
            "successor": successor,
            "wait": ctx.private_text(wait, vis) if wait else None,
            "quota_spent": quota_spent,
        }
        return [Change("run.recorded", data, vis)]

    return execute(ctx, goal_id, request, plan, operation_id=operation_id)
