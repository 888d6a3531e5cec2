"""Evidence and run write paths: facts observed at a git revision, and bounded agent turns."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from loopx.engine import lookup
from loopx.engine.commands import AddEvidence, RecordRun
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.git import head_revision
from loopx.model.errors import InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.entities import GoalState
from loopx.store import fsio

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


def add_evidence(ctx: Context, cmd: AddEvidence) -> Result:
    """Record evidence. Its revision is `revision`, else the workspace's git HEAD, else none."""
    cmd = _checked_evidence(cmd)
    vis, body = cmd.visibility or "private", cmd.body

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        lookup.todos_named(st, cmd.todo_id)
        data = {
            "evidence_id": lookup.new_id("ev", st.evidence, cmd.evidence_id, "evidence_id"),
            "kind": cmd.kind,
            "summary": ctx.private_text(cmd.summary, vis),
            "refs": [ctx.private_text(r, vis) for r in cmd.refs],
            "revision": cmd.revision,
            "todo_id": cmd.todo_id,
            "body": {"blob": ctx.blob(body)} if body is not None else None,
            "body_bytes": len(body) if body is not None else None,
        }
        return [Change("evidence.added", data, vis)]

    return execute(ctx, cmd, plan)


def _checked_evidence(cmd: AddEvidence) -> AddEvidence:
    """`cmd` checked, with its defaults and its revision (the workspace's HEAD) filled in."""
    vis = lookup.visibility(cmd.visibility, "private")
    if not _KIND.match(cmd.kind or ""):
        raise InvalidInput(
            "evidence kind must be a short lowercase word (test, ci, pr, …)", code="invalid_kind"
        )
    summary = lookup.text(cmd.summary, "summary", limit=lookup.MAX_TITLE)
    refs = tuple(lookup.text(r, "ref", limit=2000) for r in cmd.refs)
    revision = cmd.revision
    if revision is not None:
        check_revision(revision)
    if cmd.body is not None and len(cmd.body) > MAX_BODY_BYTES:
        raise InvalidInput("evidence body is too large", code="file_too_large")
    if revision is None and cmd.workspace is not None:
        revision = head_revision(cmd.workspace)
    return replace(cmd, visibility=vis, summary=summary, refs=refs, revision=revision)


def check_revision(revision: str) -> None:
    """Refuse a revision that is not a git commit hash (`invalid_revision`)."""
    if not _REV.match(revision):
        raise InvalidInput(
            "revision must be a git commit hash (7-64 hex digits)", code="invalid_revision"
        )


def record_run(ctx: Context, cmd: RecordRun) -> Result:
    """Record one bounded agent turn: who, on what, how it ended, what it spent."""
    cmd = _checked_run(ctx, cmd)
    vis = cmd.visibility or "team"

    def plan(state: GoalState | None, now: str) -> list[Change]:
        from loopx.engine.turns import refuse_unsettled

        st = lookup.need_state(state)
        lookup.todos_named(st, cmd.todo_id, cmd.successor)
        refuse_unsettled(st, cmd.todo_id)
        data = {
            "run_id": lookup.new_id("run", st.runs, cmd.run_id, "run_id"),
            "agent_id": cmd.agent_id,
            "session_id": cmd.session_id,
            "todo_id": cmd.todo_id,
            "outcome": cmd.outcome,
            "summary": ctx.optional_text(cmd.summary, vis),
            "evidence_ids": lookup.existing_evidence(st, cmd.evidence_ids),
            "successor": cmd.successor,
            "wait": ctx.optional_text(cmd.wait, vis),
            "quota_spent": cmd.quota_spent,
        }
        return [Change("run.recorded", data, vis)]

    return execute(ctx, cmd, plan)


def _checked_run(ctx: Context, cmd: RecordRun) -> RecordRun:
    """`cmd` checked, with its defaults (the acting agent and session) filled in."""
    vis = lookup.visibility(cmd.visibility, "team")
    check_outcome(cmd.outcome, cmd.quota_spent)
    return replace(
        cmd,
        visibility=vis,
        agent_id=check_id(cmd.agent_id or ctx.agent_id, "agent_id"),
        session_id=check_id(cmd.session_id or ctx.session_id, "session_id"),
        summary=lookup.text(cmd.summary, "summary", required=False) or None,
        wait=lookup.text(cmd.wait, "wait", required=False) or None,
    )


def check_outcome(outcome: str, quota_spent: int) -> None:
    """Refuse an unknown run outcome or a negative quota spend."""
    if outcome not in OUTCOMES:
        raise InvalidInput("outcome must be one of " + ", ".join(OUTCOMES), code="invalid_outcome")
    if quota_spent < 0:
        raise InvalidInput("quota spent must be zero or more", code="invalid_quota")
