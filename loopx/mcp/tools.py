"""The loopx MCP tools as plain functions: each one calls the engine function (or read) that
the matching CLI command calls and returns what `--format json` prints.

A write tool is a row of `WRITES`: its parameters are the fields of the command the CLI
builds too (plus the goal and the actor), so a tool cannot pass the engine what its command
does not take.

No MCP import here: `server.py` registers these, turning a `LoopxError` into a structured tool
error. The parameter annotations and `Field` descriptions become each tool's JSON Schema.
A missing `goal_id` means `LOOPX_GOAL_ID`, else the project's only active goal; a missing
`agent_id` / `session_id` means `LOOPX_AGENT_ID` / `LOOPX_SESSION_ID`, else `user` / `mcp`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from loopx.engine import evidence, handoff, monitors, todos, turns
from loopx.engine.commands import (
    AddEvidence,
    AddMonitor,
    AdoptHandoff,
    Backoff,
    BeginTurn,
    BlockTodo,
    ClaimTodo,
    Command,
    CompleteTodo,
    EndTurn,
    ObserveMonitor,
    PrepareHandoff,
    RecordPhase,
    RecordRun,
    RenewTodo,
)
from loopx.engine.core import Context, Result

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
Outcome = Literal["progress", "completed", "blocked", "failed", "no_op", "waiting"]


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


class Reads:
    """The read tools, bound to a project."""

    def __init__(self, project: Project):
        self.project = project

    def prime(
        self,
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

        store = self.project.store()
        agent = agent_id or os.environ.get("LOOPX_AGENT_ID")
        goal = goal_id or os.environ.get("LOOPX_GOAL_ID")
        primer = primer_for(store, goal, agent, _now())
        fitted = fit_primer(primer, max_chars, render_prime_markdown)
        return {"data": fitted, "text": render_prime_markdown(fitted)}

    def status(
        self,
        goal_id: Annotated[str | None, Field(description="One goal (default: every goal).")] = None,
    ) -> dict[str, Any]:
        """Per goal: attention state, progress, frontier, pending gates, leases, quota, health
        (what `loopx status --format json` prints)."""
        from loopx.cli.common import text_resolver
        from loopx.cli.status import _goal_status
        from loopx.engine.goals_all import load_all
        from loopx.model.ids import check_id

        store = self.project.store()
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
        self,
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

        store = self.project.store()
        state = require_goal(store, self.project.goal(store, goal_id))
        return {"data": next_view(state, _now(), text_resolver(store), agent_id, explain, limit)}

    def todo_show(self, todo_id: Todo, goal_id: Goal = None) -> dict[str, Any]:
        """One todo with its claim, the gates holding it, its evidence and runs."""
        from loopx.cli.todo import todo_detail

        store = self.project.store()
        return {"data": todo_detail(store, self.project.goal(store, goal_id), todo_id, _now())}

    def handoff_inspect(
        self,
        todo_id: Todo,
        goal_id: Goal = None,
        handoff_id: Annotated[str | None, Field(description="Default: the latest.")] = None,
        agent_id: Agent = None,
        max_chars: Annotated[int | None, Field(ge=1, description="Character budget.")] = None,
    ) -> dict[str, Any]:
        """Read a todo's latest handoff note with the current facts (against the project's
        checkout) before adopting it: the loopx.handoff/v1 digest."""
        from loopx.build.handoff import inspect_handoff
        from loopx.projections.handoff_budget import fit_digest
        from loopx.render.handoff import render_digest_markdown

        store = self.project.store()
        reader, session = self.project.actor(agent_id, None)
        digest = inspect_handoff(
            store,
            self.project.goal(store, goal_id),
            todo_id,
            workspace=self.project.workspace(store),
            now=_now(),
            reader={"agent_id": reader, "session_id": session},
            handoff_id=handoff_id,
        )
        if max_chars is not None:
            digest = fit_digest(digest, max_chars, render_digest_markdown)
        return {"data": digest, "text": render_digest_markdown(digest, max_chars)}

    def wake(
        self,
        goal_id: Annotated[str | None, Field(description="One goal (default: every goal).")] = None,
    ) -> dict[str, Any]:
        """What is due now: monitors whose next wake has come (observe them with
        monitor_observe), undecided gates to ask again, and when the next thing falls due
        (what `loopx wake --format json` prints)."""
        from loopx.cli.common import text_resolver
        from loopx.cli.monitor import wake_report

        store = self.project.store()
        return {"data": wake_report(store, goal_id, _now(), text_resolver(store))}

    def turn_list(
        self,
        goal_id: Goal = None,
        only_open: Annotated[bool, Field(description="Only turns not yet settled.")] = False,
    ) -> dict[str, Any]:
        """A goal's turn journal entries with their last phase and its age, oldest first."""
        from loopx.cli.turn import turn_rows

        store = self.project.store()
        goal = self.project.goal(store, goal_id)
        return {"data": {"goal_id": goal, "turns": turn_rows(store, goal, only_open, _now())}}

    def turn_resume(
        self, turn_id: Annotated[str, Field(description="Turn id.")], goal_id: Goal = None
    ) -> dict[str, Any]:
        """Where an interrupted turn stopped (its last phase) and what to re-inspect before
        continuing it; then continue with turn_phase and settle once with turn_end."""
        from loopx.cli.turn import turn_detail

        store = self.project.store()
        goal = self.project.goal(store, goal_id)
        return {"data": turn_detail(store, goal, turn_id, _now())}


# -- the write tools ------------------------------------------------------------------------

C = TypeVar("C", bound=Command)
_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Param:
    """A tool parameter: its name (the command field it sets), JSON Schema type, default."""

    name: str
    annotation: Any
    default: Any = _EMPTY


def _receipt(result: Result) -> dict[str, Any]:
    return {"data": result.to_dict()}


@dataclass(frozen=True)
class Write(Generic[C]):
    """A write tool: the engine path it runs, the command it builds, its parameters (in the
    order its schema lists them), its description; `fields` turns arguments into command
    fields before the store is opened (None values are left to the command's defaults);
    `workspace`: the project's checkout binds git facts; `output`: what the tool returns."""

    name: str
    run: Callable[[Context, C], Result]
    command: type[C]
    params: tuple[Param, ...]
    doc: str
    fields: Callable[[dict[str, Any]], dict[str, Any]] = dict
    workspace: bool = False
    output: Callable[[Result], dict[str, Any]] = field(default=_receipt)

    def tool(self, project: Project) -> Callable[..., dict[str, Any]]:
        """The tool function, bound to `project`, with this row's signature."""

        def call(**arguments: Any) -> dict[str, Any]:
            agent, session = arguments.pop("agent_id", None), arguments.pop("session_id", None)
            goal_id = arguments.pop("goal_id", None)
            given = self.fields(arguments)
            ctx = project.context(agent, session)
            if self.workspace:
                given["workspace"] = project.workspace(ctx.store)
            values = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
            fields: dict[str, Any] = {k: v for k, v in values.items() if v is not None}
            command = self.command(goal_id=project.goal(ctx.store, goal_id), **fields)
            return self.output(self.run(ctx, command))

        call.__name__ = call.__qualname__ = self.name
        call.__doc__ = self.doc
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        parameters = [inspect.Parameter(p.name, kind, default=p.default, annotation=p.annotation)
                      for p in self.params]  # fmt: skip
        call.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
        return call


GOAL = Param("goal_id", Goal, None)
TODO = Param("todo_id", Todo)
AGENT = Param("agent_id", Agent, None)
SESSION = Param("session_id", Session, None)
OPERATION = Param("operation_id", OperationId, None)
REVISION = Param("expected_revision", Revision, None)
LEASE = Param("lease_seconds", Lease, None)


def _text(name: str, description: str) -> Param:
    return Param(name, Annotated[str | None, Field(description=description)], None)


def _ids(name: str, description: str) -> Param:
    return Param(name, Annotated[list[str] | None, Field(description=description)], None)


def _encoded(arguments: dict[str, Any]) -> dict[str, Any]:
    """An evidence body, given as text, kept as its UTF-8 bytes."""
    body = arguments.get("body")
    return {**arguments, "body": body.encode("utf-8") if body is not None else None}


def _note(arguments: dict[str, Any]) -> dict[str, Any]:
    """The note fields as one checked note (every problem reported at once)."""
    note: dict[str, Any] = {"work_summary": arguments.pop("work_summary")}
    for name in handoff.NOTE_LISTS:
        value = arguments.pop(name, None)
        if value is not None:
            note[name] = value
    return {**arguments, "note": handoff.check_note(note)}


class BackoffArgument(TypedDict):
    """A monitor's backoff, as a tool argument."""

    kind: Annotated[
        Literal["fixed", "exponential"],
        Field(description="fixed: every `seconds`; exponential: doubling from `seconds`."),
    ]
    seconds: Annotated[int, Field(ge=1, description="Seconds between observations.")]
    cap: NotRequired[Annotated[int, Field(ge=1, description="Longest exponential wait.")]]


def _backoff(arguments: dict[str, Any]) -> dict[str, Any]:
    """The backoff argument as the command's `Backoff` (checked by the engine)."""
    given = arguments["backoff"]
    policy = Backoff(kind=given["kind"], seconds=given["seconds"], cap=given.get("cap"))
    return {**arguments, "backoff": policy}


def _with_handoff_id(result: Result) -> dict[str, Any]:
    out = _receipt(result)
    out["data"]["handoff_id"] = result.receipt["subject"]
    return out


WRITES: tuple[Write[Any], ...] = (
    Write(
        "todo_claim",
        todos.claim_todo,
        ClaimTodo,
        (TODO, GOAL, AGENT, SESSION, LEASE, OPERATION, REVISION),
        """Claim a ready todo under a lease before working on it. Another agent's live claim
        is claim_owner_mismatch; only handoff_adopt transfers a claim.""",
    ),
    Write(
        "todo_renew",
        todos.renew_todo,
        RenewTodo,
        (TODO, GOAL, AGENT, SESSION, LEASE, OPERATION, REVISION),
        """Extend your lease on a todo you hold (a heartbeat).""",
    ),
    Write(
        "todo_complete",
        todos.complete_todo,
        CompleteTodo,
        (
            TODO,
            GOAL,
            _text("summary", "What was done."),
            _ids("evidence_ids", "Evidence supporting completion."),
            _text("successor", "A todo continuing it."),
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Complete a todo, citing its evidence. Refused while a dependency is open
        (dependency_open) or a pending gate holds it (gate_pending).""",
    ),
    Write(
        "todo_block",
        todos.block_todo,
        BlockTodo,
        (
            TODO,
            Param("reason", Annotated[str, Field(description="What blocks it.")]),
            GOAL,
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Mark a todo blocked, with the reason.""",
    ),
    Write(
        "evidence_add",
        evidence.add_evidence,
        AddEvidence,
        (
            Param(
                "kind",
                Annotated[str, Field(description="test, ci, pr, commit, review, log, note, …")],
            ),
            Param("summary", Annotated[str, Field(description="One line: what was observed.")]),
            _text("todo_id", "The todo it supports."),
            GOAL,
            _ids("refs", "URIs or sha256: refs."),
            _text("body", "A body (e.g. test output, max 5 MiB) for the private blob store."),
            _text("revision", "Git commit it was observed at (default: the project's HEAD)."),
            _text("evidence_id", "Explicit id."),
            Param("visibility", Visibility, "private"),
            AGENT,
            SESSION,
            OPERATION,
        ),
        """Record evidence, bound to the git revision it was observed at.""",
        fields=_encoded,
        workspace=True,
    ),
    Write(
        "run_record",
        evidence.record_run,
        RecordRun,
        (
            Param(
                "outcome",
                Annotated[
                    str,
                    Field(description="progress, completed, blocked, failed, no_op or waiting."),
                ],
            ),
            GOAL,
            _text("todo_id", "The todo worked on."),
            _text("summary", "What the turn did."),
            _ids("evidence_ids", "Evidence ids."),
            _text("successor", "A todo continuing it."),
            _text("wait", "What it waits for."),
            Param("quota_spent", Annotated[int, Field(ge=0)], 1),
            _text("run_id", "Explicit id."),
            AGENT,
            SESSION,
            OPERATION,
        ),
        """Record one bounded agent turn: on what, how it ended, what it spent.""",
    ),
    Write(
        "handoff_prepare",
        handoff.prepare_handoff,
        PrepareHandoff,
        (
            TODO,
            Param(
                "work_summary", Annotated[str, Field(description="What was done; where it stands.")]
            ),
            _ids("next_steps", "What to do next."),
            Param(
                "approaches_tried",
                Annotated[
                    list[dict[str, str]] | None,
                    Field(description="Each {approach, outcome: worked|failed|partial|…, reason}."),
                ],
                None,
            ),
            Param(
                "files_touched",
                Annotated[
                    list[dict[str, str]] | None,
                    Field(
                        description="Each {path, action: read|modified|created|deleted, summary}."
                    ),
                ],
                None,
            ),
            Param("key_decisions", list[str] | None, None),
            Param("open_questions", list[str] | None, None),
            Param("source_refs", list[str] | None, None),
            _text("target_agent_id", "The agent meant to adopt."),
            Param("visibility", Visibility | None, None),
            GOAL,
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Before you stop with work unfinished: write a continuation note for a todo you
        hold, bound to its revision and the project's git HEAD. Checked against the
        loopx.handoff-context/v1 schema (every problem reported).""",
        fields=_note,
        workspace=True,
        output=_with_handoff_id,
    ),
    Write(
        "handoff_adopt",
        handoff.adopt_handoff,
        AdoptHandoff,
        (
            TODO,
            GOAL,
            _text("handoff_id", "Default: the latest."),
            LEASE,
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Adopt a todo's pending handoff: its claim moves to you through a transfer grant.
        Refused when the note is stale (handoff_stale) or meant for another agent.""",
        workspace=True,
    ),
    Write(
        "monitor_add",
        monitors.add_monitor,
        AddMonitor,
        (
            Param("title", Annotated[str, Field(description="What is watched, in words.")]),
            Param(
                "watch",
                Annotated[str, Field(description="What it watches: ci:…, pr:…, url:… or text.")],
            ),
            Param("backoff", BackoffArgument),
            _text("first_at", "First due (default: now), e.g. 2026-01-31T12:00:00Z."),
            _text("todo_id", "Stable id (default: todo-N)."),
            Param("priority", Annotated[int, Field(ge=0, le=4)], 2),
            _ids("depends_on", "Todo ids."),
            Param("visibility", Visibility, "team"),
            GOAL,
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Add a monitor: a todo that watches an external fact (a CI run, a pull request, a
        URL), ready for an agent when its next wake comes; the goal waits until then.""",
        fields=_backoff,
    ),
    Write(
        "monitor_observe",
        monitors.observe,
        ObserveMonitor,
        (
            TODO,
            Param("result", Literal["unchanged", "changed", "failed"]),
            Param("summary", Annotated[str, Field(description="What was seen (evidence).")]),
            GOAL,
            _ids("refs", "URIs of what was seen."),
            _text("revision", "The git commit it was observed at."),
            Param(
                "then",
                Annotated[
                    Literal["complete", "block", "successor"] | None,
                    Field(description="When changed: complete, block, or complete + successor."),
                ],
                None,
            ),
            _text("successor_title", "With then=successor."),
            _text("successor_id", "With then=successor (default: todo-N)."),
            _text("reason", "With then=block."),
            _text("evidence_id", "Explicit id."),
            Param("evidence_visibility", Visibility, "private"),
            AGENT,
            SESSION,
            OPERATION,
            REVISION,
        ),
        """Record one observation of a due monitor as evidence: unchanged or failed moves its
        next wake by the backoff; changed makes the `then` transition. Earlier observations
        stay on record.""",
    ),
    Write(
        "turn_begin",
        turns.begin_turn,
        BeginTurn,
        (TODO, _text("turn_id", "Stable id (default: turn-N)."), GOAL, AGENT, SESSION, OPERATION),
        """Open a turn journal entry (phase claim) on a todo you hold, before working: an
        interrupted turn is then resumed at its phase (turn_resume).""",
    ),
    Write(
        "turn_phase",
        turns.record_phase,
        RecordPhase,
        (
            Param("turn_id", Annotated[str, Field(description="Turn id.")]),
            Param("phase", Literal["execute", "validate", "write_back"]),
            _text("ref", "What the phase touched (a branch, a log, a URL)."),
            GOAL,
            AGENT,
            SESSION,
            OPERATION,
        ),
        """Record the phase your turn reached (execute, validate, write_back; never
        backwards). It authorises nothing.""",
    ),
    Write(
        "turn_end",
        turns.end_turn,
        EndTurn,
        (
            Param("turn_id", Annotated[str, Field(description="Turn id.")]),
            Param("outcome", Outcome),
            _text("summary", "What the turn did."),
            Param("quota_spent", Annotated[int, Field(ge=0)], 1),
            _ids("evidence_ids", "Evidence ids."),
            _text("run_id", "Explicit id."),
            GOAL,
            AGENT,
            SESSION,
            OPERATION,
        ),
        """Settle your turn: its run record and quota spend, exactly once (a second time is
        turn_settled; retry a lost answer with the same operation_id).""",
    ),
)


def make_tools(project: Project) -> list[Callable[..., dict[str, Any]]]:
    """The tools, bound to `project`, in the order they are listed."""
    reads = Reads(project)
    writes = [w.tool(project) for w in WRITES]
    return [reads.prime, reads.status, reads.next, reads.todo_show, *writes[:6], writes[6],
            reads.handoff_inspect, writes[7], reads.wake, *writes[8:10], *writes[10:],
            reads.turn_list, reads.turn_resume]  # fmt: skip
