"""A realistic demo project, written through the same governed write paths users call.

The clock is pinned and every operation has a fixed id, so the ledger is the same on every
machine and a second run replays instead of appending.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import (
    AddEvidence,
    AddNote,
    AddTodo,
    BlockTodo,
    ClaimTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    PrepareHandoff,
    RecordRun,
    RegisterAgent,
)
from loopx.engine.core import Context, load_state
from loopx.model.errors import Conflict
from loopx.store.base import Store
from loopx.store.filestore import FileStore

DEMO_START = "2026-11-02T09:00:00Z"
REV_OLD = "4f9c2a1e7b3d5c8a9e0f1b2c3d4e5f6a7b8c9d0e"
REV_NEW = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


class _Demo:
    def __init__(self, store: Store):
        self.clock = FixedClock(DEMO_START, step=420)
        self.store = store
        self.n = 0

    def ctx(self, agent: str = "maintainer", session: str = "setup") -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id=session)

    def op(self, goal: str) -> str:
        self.n += 1
        return f"demo-{goal}-{self.n:03d}"


GOALS = ("prototype", "launch", "docs", "security-review")


def create_demo(directory: Path, store: Store | None = None) -> dict[str, Any]:
    """Write the demo ledgers into `directory` (created if needed), or into `store` (any
    store: the same bytes land in PostgreSQL); return a summary.

    Every demo goal is checked before anything is written: a goal of that id that the demo
    did not create is `goal_exists` and the store is left as it was (a rerun of the demo
    itself replays)."""
    if store is None:
        files = FileStore(directory)
        _check_goals_free(files)
        files.init()
        store = files
    else:
        _check_goals_free(store)
    if Path(directory).is_dir():
        _config(Path(directory))
    d = _Demo(store)
    _prototype(d)
    _launch(d)
    _docs(d)
    _security(d)
    out = []
    for goal_id in store.goal_ids():
        state = load_state(store, goal_id).state
        assert state is not None
        out.append(
            {
                "goal_id": goal_id,
                "visibility": state.visibility,
                "status": state.status,
                "events": state.revision,
            }
        )
    return {"root": str(directory), "goals": out}


DEMO_CONFIG = """\
# The project configuration (see the README, "Project configuration").
[site]
title = "loopx demo"
description = "Goals, todos and decisions of the loopx demo project, straight from its ledger."

[repository]
url = "https://github.com/loopx-dev/loopx"
"""


DEMO_README = """\
# loopx demo

[![loopx demo status](site/public/badge.svg)](site/public/index.html)
[![launch](site/public/goals/launch/badge.svg)](site/public/goals/launch/index.html)

A project made by `loopx demo`: four goals with dependencies, gates, evidence, runs, claims and
a handoff. The badges above are the public status of the project and of its `launch` goal, as a
maintainer would show them in a README. Build the pages they link to from this folder with
`loopx build --out site`, then open `site/public/index.html`.
"""


def _config(directory: Path) -> None:
    """A `loopx.toml` naming the demo's pages and repository, and a README that shows its
    badges; each written only where no such file is yet (a user's own is never replaced)."""
    from loopx.store import fsio
    from loopx.store.config import CONFIG_FILE

    for name, text in ((CONFIG_FILE, DEMO_CONFIG), ("README.md", DEMO_README)):
        with fsio.guard("write the demo files"), contextlib.suppress(FileExistsError):
            fsio.write_new(Path(directory) / name, text.encode())


def _check_goals_free(store: Store) -> None:
    taken = []
    for goal_id in GOALS:
        events = store.read(goal_id).events if store.exists(goal_id) else []
        if events and not str(events[0].get("operation_id")).startswith(f"demo-{goal_id}-"):
            taken.append(goal_id)
    if taken:
        raise Conflict(
            f"the folder already has goal{'s' if len(taken) > 1 else ''} "
            f"{', '.join(taken)} not created by the demo; nothing was written "
            "(put the demo in another folder)",
            code="goal_exists",
            goal_ids=taken,
        )


def _prototype(d: _Demo) -> None:
    g = "prototype"
    me = d.ctx()
    goals.create_goal(
        me,
        CreateGoal(
            goal_id=g,
            title="Prototype the ledger",
            visibility="public",
            objective="Prove an append-only, hash-chained JSONL ledger is fast enough "
            "to call on every agent turn.",
            acceptance=["Replay of 50,000 events under one second"],
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g, todo_id="bench-replay", title="Benchmark cold replay", operation_id=d.op(g)
        ),
    )
    agent = d.ctx("agent-claude", "proto-1")
    todos.claim_todo(agent, ClaimTodo(goal_id=g, todo_id="bench-replay", operation_id=d.op(g)))
    evidence.add_evidence(
        agent,
        AddEvidence(
            goal_id=g,
            kind="test",
            summary="Replay benchmark: 0.41 s for 50k events",
            refs=["benchmarks/RESULTS.md"],
            revision=REV_OLD,
            todo_id="bench-replay",
            evidence_id="ev-replay",
            visibility="public",
            operation_id=d.op(g),
        ),
    )
    todos.complete_todo(
        agent,
        CompleteTodo(
            goal_id=g,
            todo_id="bench-replay",
            evidence_ids=["ev-replay"],
            summary="Cold replay is 0.41 s; well inside budget.",
            operation_id=d.op(g),
        ),
    )
    goals.close_goal(
        me,
        CloseGoal(
            goal_id=g,
            outcome="achieved",
            reason="Benchmarks met; continue in launch.",
            operation_id=d.op(g),
        ),
    )


def _launch(d: _Demo) -> None:
    g = "launch"
    me = d.ctx()
    goals.create_goal(
        me,
        CreateGoal(
            goal_id=g,
            title="Launch loopx 0.1",
            visibility="public",
            predecessor="prototype",
            objective="Publish a first release that a team can use to hand agent work across "
            "sessions, with a public status page.",
            acceptance=[
                "All CI checks green on main",
                "Public status page published",
                "A second agent adopts a handoff without re-explaining",
            ],
            repository="https://github.com/loopx-dev/loopx",
            lease_seconds=3600,
            quota=40,
            operation_id=d.op(g),
        ),
    )
    for agent_id, name in (("agent-claude", "Claude Code"), ("agent-codex", "Codex")):
        goals.register_agent(
            me,
            RegisterAgent(
                goal_id=g, agent_id=agent_id, name=name, kind="coding-agent", operation_id=d.op(g)
            ),
        )
    plan = [
        ("ledger", "Append-only ledger with hash chain", [], 1, "public"),
        ("engine", "Governed write paths and receipts", ["ledger"], 1, "public"),
        ("cli", "Command-line interface", ["engine"], 2, "public"),
        ("status-page", "Public status page", ["cli"], 2, "public"),
        ("workbench", "Markdown workbench for review", ["cli"], 2, "team"),
        ("handoff", "Handoff between agents", ["engine"], 1, "team"),
        ("release-notes", "Write the release notes", ["status-page", "workbench"], 3, "team"),
        ("publish", "Publish 0.1 to the package index", ["release-notes"], 1, "public"),
    ]
    for todo_id, title, deps, prio, vis in plan:
        todos.add_todo(
            me,
            AddTodo(
                goal_id=g,
                todo_id=todo_id,
                title=title,
                depends_on=deps,
                priority=prio,
                visibility=vis,
                operation_id=d.op(g),
            ),
        )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="pick-license",
            title="Choose the license",
            role="user",
            priority=1,
            visibility="public",
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="vendor-contract",
            title="Review the hosting contract terms",
            role="user",
            priority=3,
            visibility="private",
            operation_id=d.op(g),
        ),
    )

    claude = d.ctx("agent-claude", "claude-1")
    for todo_id in ("ledger", "engine"):
        todos.claim_todo(claude, ClaimTodo(goal_id=g, todo_id=todo_id, operation_id=d.op(g)))
        ev = f"ev-{todo_id}-tests"
        evidence.add_evidence(
            claude,
            AddEvidence(
                goal_id=g,
                kind="test",
                summary=f"{todo_id} tests pass (212 passed)",
                refs=["https://github.com/loopx-dev/loopx/actions/runs/101"],
                revision=REV_OLD,
                todo_id=todo_id,
                evidence_id=ev,
                visibility="public",
                operation_id=d.op(g),
            ),
        )
        todos.complete_todo(
            claude,
            CompleteTodo(
                goal_id=g,
                todo_id=todo_id,
                evidence_ids=[ev],
                summary=f"{todo_id} landed with tests.",
                operation_id=d.op(g),
            ),
        )
        evidence.record_run(
            claude,
            RecordRun(
                goal_id=g,
                outcome="completed",
                todo_id=todo_id,
                summary=f"Implemented {todo_id}.",
                evidence_ids=[ev],
                operation_id=d.op(g),
            ),
        )
    evidence.add_evidence(
        claude,
        AddEvidence(
            goal_id=g,
            kind="log",
            summary="Full pytest log of the engine run",
            body=b"collected 212 items\n...\n212 passed in 8.31s\n",
            revision=REV_OLD,
            todo_id="engine",
            evidence_id="ev-engine-log",
            operation_id=d.op(g),
        ),
    )
    goals.add_note(
        claude,
        AddNote(
            goal_id=g,
            kind="lesson",
            visibility="team",
            text="Pause the garbage collector during bulk replay: it is most of the cost.",
            operation_id=d.op(g),
        ),
    )
    goals.add_note(
        me,
        AddNote(
            goal_id=g,
            kind="decision",
            visibility="public",
            text="The ledger is the only authority; projections are never read back.",
            operation_id=d.op(g),
        ),
    )

    codex = d.ctx("agent-codex", "codex-1")
    todos.claim_todo(codex, ClaimTodo(goal_id=g, todo_id="cli", operation_id=d.op(g)))
    evidence.add_evidence(
        codex,
        AddEvidence(
            goal_id=g,
            kind="ci",
            summary="CI green on the CLI branch",
            refs=["https://github.com/loopx-dev/loopx/pull/7"],
            revision=REV_NEW,
            todo_id="cli",
            evidence_id="ev-cli-ci",
            visibility="team",
            operation_id=d.op(g),
        ),
    )
    evidence.record_run(
        codex,
        RecordRun(
            goal_id=g,
            outcome="progress",
            todo_id="cli",
            summary="Commands for goals and todos; status next.",
            evidence_ids=["ev-cli-ci"],
            operation_id=d.op(g),
        ),
    )
    todos.claim_todo(claude, ClaimTodo(goal_id=g, todo_id="handoff", operation_id=d.op(g)))
    evidence.record_run(
        claude,
        RecordRun(
            goal_id=g,
            outcome="waiting",
            todo_id="handoff",
            wait="Waiting for the maintainer to approve the transfer-grant design.",
            operation_id=d.op(g),
        ),
    )
    gates.open_gate(
        me,
        OpenGate(
            goal_id=g,
            gate_id="approve-publish",
            authority="maintainer",
            question="Publish 0.1 to the package index?",
            blocks=["publish"],
            visibility="public",
            operation_id=d.op(g),
        ),
    )
    gates.open_gate(
        me,
        OpenGate(
            goal_id=g,
            gate_id="grant-design",
            authority="maintainer",
            question="Approve the transfer-grant design for handoffs?",
            blocks=["handoff"],
            operation_id=d.op(g),
        ),
    )
    evidence.add_evidence(
        me,
        AddEvidence(
            goal_id=g,
            kind="review",
            summary="Design review notes for handoff grants",
            body=b"Reviewed with the team; concerns about lease expiry.\n",
            todo_id="handoff",
            evidence_id="ev-grant-review",
            operation_id=d.op(g),
        ),
    )
    _demo_handoff(d, g, claude)


def _demo_handoff(d: _Demo, g: str, claude: Context) -> None:
    """agent-claude's session ends mid-task: it hands todo `handoff` to agent-codex."""
    from loopx.engine.handoff import prepare_handoff

    prepare_handoff(
        claude,
        PrepareHandoff(
            goal_id=g,
            todo_id="handoff",
            target_agent_id="agent-codex",
            git_revision=REV_NEW,
            workspace_dirty=False,
            note={
                "work_summary": "Prepare and inspect work end to end: the note is bound to the "
                "todo's revision and the checkout's HEAD, and inspect flags stale notes, moved "
                "checkouts and missing files. Adoption is written but waits for the grant-design "
                "gate before the todo can be completed.",
                "approaches_tried": [
                    {
                        "approach": "Reuse todo claim with a force flag to transfer the claim",
                        "outcome": "abandoned",
                        "reason": "It would let any agent take a live claim; the transfer must "
                        "go through a grant bound to the note.",
                    },
                    {
                        "approach": "Bind the note to the goal's head revision",
                        "outcome": "failed",
                        "reason": "Every unrelated event made the note stale; bound to the todo's "
                        "revision instead.",
                    },
                    {
                        "approach": "Digest budget by dropping whole sections",
                        "outcome": "worked",
                        "reason": "Least important first, never the identity or next steps.",
                    },
                ],
                "next_steps": [
                    "Wait for the maintainer to resolve gate grant-design.",
                    "Run the adoption round trip across two processes (tests/test_handoff_cli.py).",
                    "Add the handoff digest to the README section 'Hand work to another agent'.",
                ],
                "files_touched": [
                    {
                        "path": "loopx/engine/handoff.py",
                        "action": "created",
                        "summary": "prepare and adopt write paths",
                    },
                    {
                        "path": "loopx/projections/handoff.py",
                        "action": "created",
                        "summary": "the digest and its character budget",
                    },
                    {"path": "loopx/engine/todos.py", "action": "read"},
                    {
                        "path": "tests/test_handoff.py",
                        "action": "modified",
                        "summary": "refusal codes, one test each",
                    },
                ],
                "key_decisions": [
                    "Adoption appends handoff.adopted and todo.claimed in one operation.",
                    "A note is stale when its todo's revision moved after it was written.",
                ],
                "open_questions": [
                    "Should adoption also require the checkout to contain the note's commit?"
                ],
                "source_refs": ["https://github.com/loopx-dev/loopx/pull/9"],
            },
            operation_id=d.op(g),
        ),
    )


def _docs(d: _Demo) -> None:
    g = "docs"
    me = d.ctx()
    goals.create_goal(
        me,
        CreateGoal(
            goal_id=g,
            title="Documentation pass",
            visibility="team",
            objective="Every command documented with an example.",
            acceptance=["README covers every command"],
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="readme",
            title="README walkthrough",
            priority=1,
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="errors",
            title="Error code table",
            depends_on=["readme"],
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="screens",
            title="Screenshot of the status page",
            depends_on=["readme"],
            priority=3,
            operation_id=d.op(g),
        ),
    )
    writer = d.ctx("agent-codex", "codex-docs")
    todos.claim_todo(writer, ClaimTodo(goal_id=g, todo_id="readme", operation_id=d.op(g)))
    todos.block_todo(
        writer,
        BlockTodo(
            goal_id=g,
            todo_id="readme",
            reason="Waiting for the CLI to settle.",
            operation_id=d.op(g),
        ),
    )


def _security(d: _Demo) -> None:
    g = "security-review"
    me = d.ctx()
    goals.create_goal(
        me,
        CreateGoal(
            goal_id=g,
            title="Security review",
            visibility="private",
            objective="Audit the public boundary before launch.",
            operation_id=d.op(g),
        ),
    )
    todos.add_todo(
        me,
        AddTodo(
            goal_id=g,
            todo_id="threat-model",
            title="Write the threat model",
            visibility="private",
            operation_id=d.op(g),
        ),
    )
    gates.open_gate(
        me,
        OpenGate(
            goal_id=g,
            gate_id="pentest-budget",
            authority="maintainer",
            question="Approve an external penetration test?",
            visibility="private",
            operation_id=d.op(g),
        ),
    )
