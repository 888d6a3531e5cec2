"""The loopx MCP tools as plain functions: each one calls the engine function (or read) that
the matching CLI command calls and returns what `--format json` prints.

No MCP import here: `server.py` registers these, turning a `LoopxError` into a structured tool
error. The parameter annotations and `Field` descriptions become each tool's JSON Schema.
A missing `goal_id` means `LOOPX_GOAL_ID`, else the project's only active goal; a missing
`agent_id` / `session_id` means `LOOPX_AGENT_ID` / `LOOPX_SESSION_ID`, else `user` / `mcp`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

Goal = Annotated[
    str | None,
    Field(description="Goal id (default: LOOPX_GOAL_ID, else the project's only active goal)."),
]
Todo = Annotated[str, Field(description="Todo id.")]
Agent = Annotated[
    str | None, Field(description="The acting agent (default: LOOPX_AGENT_ID, else `user`).")
]
Session = Annotated[
    str | None, Field(description="The acting session (default: LOOPX_SESSION_ID, else `mcp`).")
]
OperationId = Annotated[
    str | None,
    Field(
        description="Idempotency key: a retry with the same id and request replays the "
        "original receipt; reused for another request it is operation_id_reused."
    ),
]
Revision = Annotated[
    int | None,
    Field(ge=0, description="Refuse unless the entity is at this revision (revision_conflict)."),
]
Lease = Annotated[
    int | None, Field(ge=1, le=30 * 86400, description="Lease seconds (default: goal policy).")
]
Visibility = Literal["public", "team", "private"]


@dataclass
class Project:
    """Where the tools act: the project root (None: found from the working directory)."""

    root: Path | None = None

    def store(self) -> Any:
        from loopx.cli.common import open_store

        return open_store(self.root)

    def goal(self, store: Any, goal_id: str | None) -> str:
        from loopx.engine.defaults import default_goal

        return goal_id or os.environ.get("LOOPX_GOAL_ID") or default_goal(store)

    def actor(self, agent_id: str | None, session_id: str | None) -> tuple[str, str]:
        """The acting agent and session: given, else from the environment, else the defaults."""
        return (
            agent_id or os.environ.get("LOOPX_AGENT_ID") or "user",
            session_id or os.environ.get("LOOPX_SESSION_ID") or "mcp",
        )

    def context(self, agent_id: str | None, session_id: str | None) -> Any:
        from loopx.cli.common import context

        return context(self.root, *self.actor(agent_id, session_id))

    def workspace(self, store: Any) -> Path:
        return Path(store.root)


def _now() -> str:
    from loopx.engine.clock import from_env

    return from_env().now()


def make_tools(project: Project) -> list[Callable[..., dict[str, Any]]]:
    """The tools, bound to `project`, in the order they are listed."""

    def prime(
        goal_id: Annotated[
            str | None,
            Field(description="Goal id (default: LOOPX_GOAL_ID, else the only active goal)."),
        ] = None,
        agent_id: Agent = None,
        max_chars: Annotated[int, Field(ge=1, description="Character budget.")] = 6000,
    ) -> dict[str, Any]:
        """Read this first, at the start of every session: the loopx protocol (claim, renew,
        evidence, complete, hand off), your claims, handoffs waiting for you, the frontier
        you may take and the gates you must not cross."""
        from loopx.cli.prime import primer_for
        from loopx.projections.prime import fit_primer
        from loopx.render.prime import render_prime_markdown

        store = project.store()
        agent = agent_id or os.environ.get("LOOPX_AGENT_ID")
        goal = goal_id or os.environ.get("LOOPX_GOAL_ID")
        primer = primer_for(store, goal, agent, _now())
        fitted = fit_primer(primer, max_chars, render_prime_markdown)
        return {"data": fitted, "text": render_prime_markdown(fitted)}

    def status(
        goal_id: Annotated[str | None, Field(description="One goal (default: every goal).")] = None,
    ) -> dict[str, Any]:
        """Per goal: attention state, progress, frontier, pending gates, leases, quota, health
        (what `loopx status --format json` prints)."""
        from loopx.cli.common import text_resolver
        from loopx.cli.status import _goal_status
        from loopx.engine.goals_all import load_all
        from loopx.model.ids import check_id

        store = project.store()
        now, resolve = _now(), text_resolver(store)
        if goal_id is not None:
            check_id(goal_id, "goal_id")
        goals = []
        for gid, loaded in load_all(store, [goal_id] if goal_id else None):
            data = _goal_status(gid, loaded, now, resolve, named=goal_id is not None)
            if data is not None:
                goals.append(data)
        return {"data": {"now": now, "goals": goals}}

    def next(
        goal_id: Goal = None,
        agent_id: Annotated[
            str | None, Field(description="Show the agent todos this agent may take.")
        ] = None,
        explain: Annotated[bool, Field(description="Say why each other todo waits.")] = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 20,
    ) -> dict[str, Any]:
        """The frontier: ready todos, highest priority first (and, with explain, why every
        other open todo is not ready)."""
        from loopx.cli.common import text_resolver
        from loopx.engine.core import require_goal
        from loopx.state.views import next_view

        store = project.store()
        state = require_goal(store, project.goal(store, goal_id))
        return {"data": next_view(state, _now(), text_resolver(store), agent_id, explain, limit)}

    def todo_show(todo_id: Todo, goal_id: Goal = None) -> dict[str, Any]:
        """One todo with its claim, the gates holding it, its evidence and runs."""
        from loopx.cli.todo import todo_detail

        store = project.store()
        return {"data": todo_detail(store, project.goal(store, goal_id), todo_id, _now())}

    def todo_claim(
        todo_id: Todo,
        goal_id: Goal = None,
        agent_id: Agent = None,
        session_id: Session = None,
        lease_seconds: Lease = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Claim a ready todo under a lease before working on it. Another agent's live claim
        is claim_owner_mismatch; only handoff_adopt transfers a claim."""
        from loopx.engine.todos import claim_todo

        ctx = project.context(agent_id, session_id)
        return _receipt(
            claim_todo(
                ctx,
                project.goal(ctx.store, goal_id),
                todo_id,
                lease_seconds=lease_seconds,
                operation_id=operation_id,
                expected_revision=expected_revision,
            )
        )

    def todo_renew(
        todo_id: Todo,
        goal_id: Goal = None,
        agent_id: Agent = None,
        session_id: Session = None,
        lease_seconds: Lease = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Extend your lease on a todo you hold (a heartbeat)."""
        from loopx.engine.todos import renew_todo

        ctx = project.context(agent_id, session_id)
        return _receipt(
            renew_todo(
                ctx,
                project.goal(ctx.store, goal_id),
                todo_id,
                lease_seconds=lease_seconds,
                operation_id=operation_id,
                expected_revision=expected_revision,
            )
        )

    def todo_complete(
        todo_id: Todo,
        goal_id: Goal = None,
        summary: Annotated[str | None, Field(description="What was done.")] = None,
        evidence_ids: Annotated[
            list[str] | None, Field(description="Evidence supporting completion.")
        ] = None,
        successor: Annotated[str | None, Field(description="A todo continuing it.")] = None,
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Complete a todo, citing its evidence. Refused while a dependency is open
        (dependency_open) or a pending gate holds it (gate_pending)."""
        from loopx.engine.todos import complete_todo

        ctx = project.context(agent_id, session_id)
        return _receipt(
            complete_todo(
                ctx,
                project.goal(ctx.store, goal_id),
                todo_id,
                summary=summary,
                evidence_ids=list(evidence_ids or []),
                successor=successor,
                operation_id=operation_id,
                expected_revision=expected_revision,
            )
        )

    def todo_block(
        todo_id: Todo,
        reason: Annotated[str, Field(description="What blocks it.")],
        goal_id: Goal = None,
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Mark a todo blocked, with the reason."""
        from loopx.engine.todos import block_todo

        ctx = project.context(agent_id, session_id)
        return _receipt(
            block_todo(
                ctx,
                project.goal(ctx.store, goal_id),
                todo_id,
                reason=reason,
                operation_id=operation_id,
                expected_revision=expected_revision,
            )
        )

    def evidence_add(
        kind: Annotated[str, Field(description="test, ci, pr, commit, review, log, note, …")],
        summary: Annotated[str, Field(description="One line: what was observed.")],
        todo_id: Annotated[str | None, Field(description="The todo it supports.")] = None,
        goal_id: Goal = None,
        refs: Annotated[list[str] | None, Field(description="URIs or sha256: refs.")] = None,
        body: Annotated[
            str | None,
            Field(description="A body (e.g. test output, max 5 MiB) for the private blob store."),
        ] = None,
        revision: Annotated[
            str | None,
            Field(description="Git commit it was observed at (default: the project's HEAD)."),
        ] = None,
        evidence_id: Annotated[str | None, Field(description="Explicit id.")] = None,
        visibility: Visibility = "private",
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
    ) -> dict[str, Any]:
        """Record evidence, bound to the git revision it was observed at."""
        from loopx.engine.evidence import add_evidence

        ctx = project.context(agent_id, session_id)
        return _receipt(
            add_evidence(
                ctx,
                project.goal(ctx.store, goal_id),
                kind=kind,
                summary=summary,
                refs=list(refs or []),
                body=body.encode("utf-8") if body is not None else None,
                revision=revision,
                workspace=project.workspace(ctx.store),
                todo_id=todo_id,
                evidence_id=evidence_id,
                visibility=visibility,
                operation_id=operation_id,
            )
        )

    def run_record(
        outcome: Annotated[
            str, Field(description="progress, done, blocked, waiting, failed or handoff.")
        ],
        goal_id: Goal = None,
        todo_id: Annotated[str | None, Field(description="The todo worked on.")] = None,
        summary: Annotated[str | None, Field(description="What the turn did.")] = None,
        evidence_ids: Annotated[list[str] | None, Field(description="Evidence ids.")] = None,
        successor: Annotated[str | None, Field(description="A todo continuing it.")] = None,
        wait: Annotated[str | None, Field(description="What it waits for.")] = None,
        quota_spent: Annotated[int, Field(ge=0)] = 1,
        run_id: Annotated[str | None, Field(description="Explicit id.")] = None,
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
    ) -> dict[str, Any]:
        """Record one bounded agent turn: on what, how it ended, what it spent."""
        from loopx.engine.evidence import record_run

        ctx = project.context(agent_id, session_id)
        return _receipt(
            record_run(
                ctx,
                project.goal(ctx.store, goal_id),
                outcome=outcome,
                todo_id=todo_id,
                summary=summary,
                evidence_ids=list(evidence_ids or []),
                successor=successor,
                wait=wait,
                quota_spent=quota_spent,
                run_id=run_id,
                operation_id=operation_id,
            )
        )

    def handoff_prepare(
        todo_id: Todo,
        work_summary: Annotated[str, Field(description="What was done; where it stands.")],
        next_steps: Annotated[list[str] | None, Field(description="What to do next.")] = None,
        approaches_tried: Annotated[
            list[dict[str, str]] | None,
            Field(description="Each {approach, outcome: worked|failed|partial|…, reason}."),
        ] = None,
        files_touched: Annotated[
            list[dict[str, str]] | None,
            Field(description="Each {path, action: read|modified|created|deleted, summary}."),
        ] = None,
        key_decisions: list[str] | None = None,
        open_questions: list[str] | None = None,
        source_refs: list[str] | None = None,
        target_agent_id: Annotated[
            str | None, Field(description="The agent meant to adopt.")
        ] = None,
        visibility: Visibility | None = None,
        goal_id: Goal = None,
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Before you stop with work unfinished: write a continuation note for a todo you
        hold, bound to its revision and the project's git HEAD. Checked against the
        loopx.handoff-context/v1 schema (every problem reported)."""
        from loopx.engine.handoff import check_note, prepare_handoff

        note: dict[str, Any] = {"work_summary": work_summary}
        lists = {
            "next_steps": next_steps,
            "approaches_tried": approaches_tried,
            "files_touched": files_touched,
            "key_decisions": key_decisions,
            "open_questions": open_questions,
            "source_refs": source_refs,
        }
        note.update({k: v for k, v in lists.items() if v is not None})
        note = check_note(note)
        ctx = project.context(agent_id, session_id)
        result = prepare_handoff(
            ctx,
            project.goal(ctx.store, goal_id),
            todo_id,
            note=note,
            visibility=visibility,
            target_agent_id=target_agent_id,
            workspace=project.workspace(ctx.store),
            operation_id=operation_id,
            expected_revision=expected_revision,
        )
        out = _receipt(result)
        out["data"]["handoff_id"] = result.receipt["subject"]
        return out

    def handoff_inspect(
        todo_id: Todo,
        goal_id: Goal = None,
        handoff_id: Annotated[str | None, Field(description="Default: the latest.")] = None,
        agent_id: Agent = None,
        max_chars: Annotated[int | None, Field(ge=1, description="Character budget.")] = None,
    ) -> dict[str, Any]:
        """Read a todo's latest handoff note with the current facts (against the project's
        checkout) before adopting it: the loopx.handoff/v1 digest."""
        from loopx.build.handoff import inspect_handoff
        from loopx.cli.common import text_resolver
        from loopx.projections.handoff_budget import fit_digest
        from loopx.render.handoff import render_digest_markdown

        store = project.store()
        reader, session = project.actor(agent_id, None)
        digest = inspect_handoff(
            store,
            project.goal(store, goal_id),
            todo_id,
            text=text_resolver(store),
            workspace=project.workspace(store),
            now=_now(),
            reader={"agent_id": reader, "session_id": session},
            handoff_id=handoff_id,
        )
        if max_chars is not None:
            digest = fit_digest(digest, max_chars, render_digest_markdown)
        return {"data": digest, "text": render_digest_markdown(digest, max_chars)}

    def handoff_adopt(
        todo_id: Todo,
        goal_id: Goal = None,
        handoff_id: Annotated[str | None, Field(description="Default: the latest.")] = None,
        lease_seconds: Lease = None,
        agent_id: Agent = None,
        session_id: Session = None,
        operation_id: OperationId = None,
        expected_revision: Revision = None,
    ) -> dict[str, Any]:
        """Adopt a todo's pending handoff: its claim moves to you through a transfer grant.
        Refused when the note is stale (handoff_stale) or meant for another agent."""
        from loopx.engine.handoff import adopt_handoff

        ctx = project.context(agent_id, session_id)
        return _receipt(
            adopt_handoff(
                ctx,
                project.goal(ctx.store, goal_id),
                todo_id,
                handoff_id=handoff_id,
                lease_seconds=lease_seconds,
                workspace=project.workspace(ctx.store),
                operation_id=operation_id,
                expected_revision=expected_revision,
            )
        )

    return [
        prime,
        status,
        next,
        todo_show,
        todo_claim,
        todo_renew,
        todo_complete,
        todo_block,
        evidence_add,
        run_record,
        handoff_prepare,
        handoff_inspect,
        handoff_adopt,
    ]


def _receipt(result: Any) -> dict[str, Any]:
    return {"data": result.to_dict()}
