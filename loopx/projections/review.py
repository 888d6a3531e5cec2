"""The review packet (team or private; Markdown + JSON): what a human needs for a decision."""

from __future__ import annotations

import shlex
from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import gate_item, header, recent_evidence, todo_card
from loopx.projections.diff import describe, diff_facts, facts_from_state
from loopx.state.entities import GoalState

SCHEMA = "loopx.review/v1"
EVIDENCE_LIMIT = 50  # newest first; the packet says how many more there are


def _resolve_commands(goal_id: str, gate: Any) -> list[str]:
    base = (
        f"loopx gate resolve --goal-id {shlex.quote(goal_id)} "
        f"--gate-id {shlex.quote(gate.gate_id)} --by {shlex.quote(gate.authority)}"
    )
    return [
        f'{base} --resolution {verb} --rationale "…"' for verb in ("approve", "reject", "defer")
    ]


def review_packet(
    state: GoalState,
    lens: Lens,
    *,
    head: str | None,
    visible_goals: set[str],
    todo_id: str | None = None,
    since: GoalState | None = None,
) -> dict[str, Any]:
    """A packet for the goal, or for one todo; `since` is the state at an earlier revision."""
    todos = {t.todo_id: t for t in lens.keep(list(state.todos.values()), "todos")}
    todo = todos.get(todo_id) if todo_id else None
    gates = [
        g
        for g in lens.keep(sorted(state.gates.values(), key=lambda g: g.created_seq), "gates")
        if g.is_blocking and (todo is None or g.blocks_goal or todo.todo_id in g.blocks)
    ]
    evidence, evidence_cut = recent_evidence(
        state, lens, head, limit=EVIDENCE_LIMIT, todo_id=todo.todo_id if todo else None
    )
    if gates:
        questions = [lens.text(g.question) for g in gates]
    elif todo is not None:
        questions = [
            f"Is {todo.todo_id} ({lens.text(todo.title)}) done as its acceptance "
            "asks, on the evidence below?"
        ]
    else:
        questions = ["Does the evidence below show progress toward the goal's acceptance?"]
    changes: list[dict[str, Any]] = []
    if since is not None:
        changes = diff_facts(
            facts_from_state(since, Lens(lens.audience)),
            facts_from_state(state, Lens(lens.audience)),
        )
        if todo is not None:
            changes = [c for c in changes if c.get("todo_id") in (None, todo.todo_id)]
    return {
        **header(SCHEMA, state, lens, head, visible_goals),
        "todo": todo_card(todo, lens, state) if todo is not None else None,
        "questions": questions,
        "since_revision": since.revision if since is not None else None,
        "changes": [{**c, "text": describe(c)} for c in changes],
        "evidence": evidence,
        "evidence_total": len(evidence) + evidence_cut,
        "gates": [
            {**gate_item(g, lens, state), "commands": _resolve_commands(state.goal_id, g)}
            for g in gates
        ],
        "omissions": lens.omissions(),
    }
