"""The session primer (`loopx.prime/v1`): what an agent reads before it touches a goal.

A pure function of folded state. It states the protocol (claim before work, renew, record
evidence, complete, hand off before stopping) with the commands filled in for this goal and
agent, then the agent's live claims, the handoffs waiting for it, the frontier it may take and
the gates it must not cross. `fit_primer` keeps it within a character budget by shortening the
longest lists first and counting what it left out; the protocol and the identity are never cut.

Every text comes through `text` (the caller's resolver: private text readable on this host,
the "not on this host" marker otherwise) and is flattened to one line of bounded width, so a
long title cannot blow the budget on its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from loopx.model.errors import InvalidInput
from loopx.state.entities import GoalState, Todo
from loopx.state.frontier import attention, frontier, lease_live
from loopx.state.turns import RESUME_ADVICE, open_turns

SCHEMA_ID = "loopx.prime/v1"
DEFAULT_MAX_CHARS = 6000
LIMITS = {"claims": 10, "handoffs": 5, "frontier": 8, "gates": 8, "goals": 20}
TITLE_WIDTH = 120
ANY_AGENT = "AGENT"  # shown in commands when the primer is not for a named agent

TextFn = Callable[[Any], Any]


def one_line(value: Any, width: int = TITLE_WIDTH) -> str:
    """Text on one line, at most `width` characters (an ellipsis marks a cut)."""
    line = " ".join(str(value if value is not None else "").split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def protocol(goal_id: str | None, agent_id: str | None) -> list[dict[str, str]]:
    """The working rules, each with the command that follows it."""
    g = goal_id or "GOAL"
    a = agent_id or ANY_AGENT
    on = f"--goal-id {g} --agent-id {a}"
    return [
        {
            "rule": "Pick work from the frontier; never start a todo you have not claimed.",
            "command": f"loopx next {on} --explain",
        },
        {
            "rule": "Claim before you work; a claim is a lease that expires.",
            "command": f"loopx todo claim {on} --todo-id TODO",
        },
        {
            "rule": "Renew the lease while you work (a heartbeat), before it expires.",
            "command": f"loopx todo renew {on} --todo-id TODO",
        },
        {
            "rule": "Record evidence for what you verified (tests, CI, review), bound to HEAD.",
            "command": f"loopx evidence add {on} --todo-id TODO --kind test "
            '--summary "…" --file LOG',
        },
        {
            "rule": "Complete with the evidence; a pending gate or open dependency refuses it.",
            "command": f"loopx todo complete {on} --todo-id TODO --evidence-id EVIDENCE "
            '--summary "…"',
        },
        {
            "rule": "Before you stop with work unfinished, hand it off; the next agent adopts it.",
            "command": f"loopx handoff prepare {on} --todo-id TODO "
            '--work-summary "…" --next-step "…"',
        },
        {
            "rule": "Adopt a handoff meant for you after reading it against your checkout.",
            "command": f"loopx handoff inspect {on} --todo-id TODO && "
            f"loopx handoff adopt {on} --todo-id TODO",
        },
        {
            "rule": "Gates are decisions for a named person: ask, wait, never resolve one "
            "yourself. Retry a write with the same --operation-id; pass "
            "--expected-revision to refuse stale writes.",
            "command": f"loopx gate list --goal-id {g} --status pending",
        },
    ]


def _claims(state: GoalState, now: str, agent_id: str | None, text: TextFn) -> list[dict]:
    held = [
        t
        for t in state.todos.values()
        if t.claim and t.is_open and (agent_id is None or t.claim["agent_id"] == agent_id)
    ]
    held.sort(key=lambda t: (t.claim["lease_expires_at"], t.todo_id))  # type: ignore[index]
    return [
        {
            "todo_id": t.todo_id,
            "title": one_line(text(t.title)),
            "status": t.status,
            "agent_id": t.claim["agent_id"],  # type: ignore[index]
            "lease_expires_at": t.claim["lease_expires_at"],  # type: ignore[index]
            "live": lease_live(t, now),
            "revision": t.revision,
            **_turn_on(state, t.todo_id),
        }
        for t in held
    ]


def _turn_on(state: GoalState, todo_id: str) -> dict[str, Any]:
    """`{"turn": …}` when an open turn on the todo stopped somewhere (resume it), else {}."""
    for turn in open_turns(state):
        if turn["todo_id"] == todo_id:
            return {
                "turn": {
                    "turn_id": turn["turn_id"],
                    "phase": turn["phase"],
                    "updated_at": turn["updated_at"],
                    "resume": RESUME_ADVICE.get(turn["phase"], ""),
                }
            }
    return {}


def _handoffs(state: GoalState, agent_id: str | None, text: TextFn) -> list[dict]:
    out = []
    for h in state.handoffs.values():
        todo = state.todos.get(h.todo_id)
        if h.status != "pending" or todo is None or not todo.is_open:
            continue
        target = h.target_agent_id
        if agent_id is not None and (
            h.source_agent_id == agent_id or target not in (None, agent_id)
        ):
            continue  # your own note, or one meant for someone else
        out.append(
            {
                "handoff_id": h.handoff_id,
                "todo_id": todo.todo_id,
                "title": one_line(text(todo.title)),
                "from_agent_id": h.source_agent_id,
                "target_agent_id": target,
                "prepared_at": h.prepared_at,
            }
        )
    out.sort(key=lambda h: (h["prepared_at"], h["handoff_id"]), reverse=True)
    return out


def _gates(state: GoalState, text: TextFn) -> list[dict]:
    gates = sorted((g for g in state.gates.values() if g.is_blocking), key=lambda g: g.created_seq)
    return [
        {
            "gate_id": g.gate_id,
            "status": g.status,
            "authority": g.authority,
            "question": one_line(text(g.question)),
            "blocks": sorted(g.blocks),
            "blocks_goal": g.blocks_goal,
        }
        for g in gates
    ]


def goal_primer(
    state: GoalState, now: str, text: TextFn, agent_id: str | None = None
) -> dict[str, Any]:
    """The primer for one goal, for `agent_id` (None: for whoever reads it)."""
    ready = frontier(state, now, agent_id)
    if agent_id:  # what it may take: agent work it does not hold already (see claims)
        mine = [
            t
            for t in ready
            if t.role == "agent" and not (t.claim and t.claim["agent_id"] == agent_id)
        ]
    else:
        mine = ready
    return {
        "schema": SCHEMA_ID,
        "agent_id": agent_id,
        "now": now,
        "source": {"goal_id": state.goal_id, "revision": state.revision, "head": state.head},
        "goal": {
            "goal_id": state.goal_id,
            "title": one_line(text(state.title)),
            "objective": one_line(text(state.objective), 400),
            "status": state.status,
            "revision": state.revision,
            "attention": _attention(state, now, frontier(state, now) if agent_id else ready),
        },
        "protocol": protocol(state.goal_id, agent_id),
        "claims": _claims(state, now, agent_id, text),
        "handoffs": _handoffs(state, agent_id, text),
        "frontier": [
            {
                "todo_id": t.todo_id,
                "title": one_line(text(t.title)),
                "priority": t.priority,
                "role": t.role,
                "revision": t.revision,
            }
            for t in mine
        ],
        "gates": _gates(state, text),
        "goals": [],
        "omitted": {},
    }


def index_primer(
    goals: list[dict[str, Any]], now: str, agent_id: str | None = None
) -> dict[str, Any]:
    """The primer when no single goal is chosen: the protocol and the goals to choose from
    (`goals`: goal id, title, status and attention state of each, already one-lined)."""
    return {
        "schema": SCHEMA_ID,
        "agent_id": agent_id,
        "now": now,
        "source": None,
        "goal": None,
        "protocol": protocol(None, agent_id),
        "claims": [],
        "handoffs": [],
        "frontier": [],
        "gates": [],
        "goals": sorted(goals, key=lambda g: g["goal_id"]),
        "omitted": {},
    }


def fit_primer(
    primer: dict[str, Any], max_chars: int, render: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """A copy of `primer` whose rendering fits `max_chars`, or as close as the protocol and
        identity allow. Lists start at their `LIMITS`, then the longest is halved until it fits;
        each cut is counted in `omitted` (list name → items left out). A budget too small for the
    protocol and identity alone is `budget_too_small`."""
    full = {name: len(primer[name]) for name in LIMITS}
    keep = {name: min(full[name], LIMITS[name]) for name in LIMITS}

    def cut() -> dict[str, Any]:
        out = copy.copy(primer)
        for name in LIMITS:
            out[name] = primer[name][: keep[name]]
        out["omitted"] = {n: full[n] - keep[n] for n in LIMITS if full[n] > keep[n]}
        out["max_chars"] = max_chars
        return out

    fitted = cut()
    while (size := len(render(fitted))) > max_chars:
        name = max(LIMITS, key=lambda n: (keep[n], n))
        if keep[name] == 0:  # only the protocol and the identity are left: they are not cut
            raise InvalidInput(
                f"the primer needs at least {size} characters (its protocol and identity)",
                code="budget_too_small",
                min_chars=size,
            )
        keep[name] //= 2
        fitted = cut()
    return fitted


def _attention(state: GoalState, now: str, ready: list[Todo]) -> dict[str, Any]:
    """The goal's one attention state and the facts behind it (the ranked reasons stay out:
    the frontier and the gates below say them, in the primer's budget)."""
    return {k: v for k, v in attention(state, now, ready).items() if k != "reasons"}
