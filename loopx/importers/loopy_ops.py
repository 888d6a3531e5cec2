"""Planned writes: an `Op` is one engine call with its operation id, time and actor, and
`Ops` builds them for one goal.

What an op asks the engine for is fixed when it is built, from the source alone: never from
the ledger, the wall clock or the importing machine. So the same source always yields the same
requests, and importing it again replays every one of them (`operation_id_reused` would mean
the source itself changed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import orjson

from loopx.engine import evidence as ev
from loopx.engine import goals, todos
from loopx.engine.commands import (
    AddEvidence,
    AddTodo,
    BlockTodo,
    CancelTodo,
    Command,
    CompleteTodo,
    RegisterAgent,
)
from loopx.engine.core import Context, Result
from loopx.engine.evidence import MAX_BODY_BYTES
from loopx.importers.sanitize import clip, has_local_path, scrub
from loopx.model.ids import check_id
from loopx.privacy.redact import redact

AGENT = "loopy-loop"
SESSION_TODO = "loopy-session"  # the todo standing for loopy-loop working the goal
EPOCH = "1970-01-01T00:00:00Z"
TITLE_MAX = 200
SUMMARY_MAX = 500
# Entities from an iteration's files, protocol failures and eval reports: written once by
# loopy-loop and never rewritten, so an operation already in the ledger needs no replay.
SETTLED = ("it-", "iter-", "pf-", "eval-")
CLOSED_AS = {"complete": "done", "block": "blocked", "cancel": "cancelled"}

Call = Callable[[Context, str], Result]  # an engine call, given its context and operation id
C = TypeVar("C", bound=Command)


@dataclass
class Op:
    """One planned write: an engine call with its operation id, clock time and actor."""

    op_id: str
    at: str | None
    agent: str
    label: str
    call: Call
    phase: int = 1  # 0: goal set-up, 1: the session's history, 2: its stop state
    settled: bool = False  # from files loopy-loop never rewrites: once imported, skip it
    group: str | None = None  # when one op of a group is refused, the rest are left out
    exists_ok: str | None = None  # a refusal code meaning "already there": not a problem


def bind(fn: Callable[[Context, C], Result], command: C) -> Call:
    """`fn(ctx, command)` as an op's call, given the op's operation id when it runs."""

    def call(ctx: Context, op_id: str) -> Result:
        return fn(ctx, replace(command, operation_id=op_id))

    return call


def inline(text: str, limit: int) -> str:
    """Text fit for the shared ledger: local paths scrubbed, anything credential- or
    personal-looking redacted (loopx's own rules, the same on every machine), cut to `limit`."""
    return clip(redact(scrub(text))[0], limit)


def safe_refs(refs: list[str]) -> list[str]:
    out = [clip(r, 2000) for r in refs if r.strip() and not has_local_path(r)]
    return list(dict.fromkeys(out))[:100]


def json_body(*parts: tuple[str, bytes | None]) -> bytes:
    """Several raw files as one private body (each kept as text when it decodes)."""
    doc = {name: data.decode("utf-8", "replace") for name, data in parts if data is not None}
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)


class Ops:
    """The writes planned for one goal, in plan order, and what they do to its todos."""

    def __init__(self, goal_id: str, key: str, session_slug: str):
        self.goal_id = goal_id
        self.key = key  # the session's identity in every operation id
        self.session_slug = session_slug  # the actor's session in every write
        self.ops: list[Op] = []
        self.added: set[str] = set()  # todos this plan adds
        self.closed: dict[str, str] = {}  # todo → the status this plan leaves it in
        self.agents: set[str] = set()

    def op(
        self,
        entity: str,
        verb: str,
        call: Call,
        *,
        at: str | None,
        label: str,
        agent: str = AGENT,
        phase: int = 1,
        group: str | None = None,
        exists_ok: str | None = None,
    ) -> None:
        op_id = f"loopy:{self.key}:{entity}:{verb}"
        settled = entity.startswith(SETTLED)
        self.ops.append(Op(op_id, at, agent, label, call, phase, settled, group, exists_ok))

    def evidence(
        self,
        evidence_id: str,
        *,
        kind: str,
        summary: str,
        at: str | None,
        label: str,
        visibility: str = "team",
        body: bytes | None = None,
        refs: list[str] | None = None,
        revision: str | None = None,
        todo_id: str | None = None,
        agent: str = AGENT,
        phase: int = 1,
    ) -> str:
        check_id(evidence_id, "evidence_id")
        if body is not None and len(body) > MAX_BODY_BYTES:
            note = f"\n[cut by loopx import: {len(body)} bytes in all]\n".encode()
            body = body[: MAX_BODY_BYTES - len(note)] + note
        text = summary if visibility == "private" else inline(summary, SUMMARY_MAX)
        text = clip(text, SUMMARY_MAX)
        call = bind(
            ev.add_evidence,
            AddEvidence(
                goal_id=self.goal_id,
                kind=kind,
                summary=text,
                refs=safe_refs(refs or []),
                body=body,
                revision=revision,
                todo_id=todo_id,
                evidence_id=evidence_id,
                visibility=visibility,
            ),
        )
        self.op(evidence_id, "add", call, at=at, label=label, agent=agent, phase=phase)
        return evidence_id

    def add_todo(
        self,
        todo_id: str,
        title: str,
        *,
        at: str | None,
        role: str = "agent",
        kind: str = "task",
        phase: int = 1,
    ) -> None:
        check_id(todo_id, "todo_id")
        text = inline(title, TITLE_MAX)
        call = bind(
            todos.add_todo,
            AddTodo(goal_id=self.goal_id, title=text, todo_id=todo_id, role=role, kind=kind),
        )
        self.op(todo_id, "add", call, at=at, label=f"todo {todo_id}", phase=phase)
        self.added.add(todo_id)

    def close_todo(
        self,
        todo_id: str,
        verb: str,
        *,
        at: str | None,
        reason: str | None = None,
        evidence_ids: list[str] | None = None,
        phase: int = 1,
        agent: str = AGENT,
    ) -> None:
        """Complete, block or cancel a todo (once: the op id names the transition)."""
        goal = self.goal_id
        if verb == "complete":
            done = CompleteTodo(goal_id=goal, todo_id=todo_id, evidence_ids=evidence_ids or ())
            call = bind(todos.complete_todo, done)
        elif verb == "block":
            why = inline(reason, 2000) if reason else None
            call = bind(todos.block_todo, BlockTodo(goal_id=goal, todo_id=todo_id, reason=why))
        else:
            why = inline(reason, 2000) if reason else None
            call = bind(todos.cancel_todo, CancelTodo(goal_id=goal, todo_id=todo_id, reason=why))
        self.op(
            todo_id, verb, call, at=at, label=f"{verb} todo {todo_id}", agent=agent, phase=phase
        )
        self.closed[todo_id] = CLOSED_AS[verb]

    def register(self, agent_id: str, name: str, *, at: str | None, phase: int = 1) -> None:
        """Register an agent the first time the plan meets it (already registered is fine)."""
        if agent_id in self.agents:
            return
        self.agents.add(agent_id)
        self.op(
            agent_id,
            "register",
            bind(
                goals.register_agent,
                RegisterAgent(
                    goal_id=self.goal_id, agent_id=agent_id, name=name, kind="loopy-loop"
                ),
            ),
            at=at,
            label=f"agent {agent_id}",
            phase=phase,
            exists_ok="agent_exists",
        )

    def ordered(self, start: str | None) -> list[Op]:
        """Set-up first and the stop state last, in plan order; a write without a time of
        its own takes the time of the write before it."""
        ordered = sorted(self.ops, key=lambda op: op.phase)
        previous = start or EPOCH
        for op in ordered:
            op.at = op.at or previous
            previous = op.at
        return ordered
