"""Turn journal write paths: begin a turn on a claimed todo, record the phases it reaches,
and settle it into a run record (with its quota spend) exactly once.

The journal authorises nothing: beginning a turn needs the todo's claim, as any work does,
and a phase reached grants no other write. Settling appends `run.recorded` and `turn.settled`
as one operation, so a process killed at any point leaves the turn either open with nothing
spent or settled with its spend, never spent twice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loopx.engine import lookup
from loopx.engine.commands import BeginTurn, EndTurn, RecordPhase
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.evidence import check_outcome
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.state.entities import GoalState
from loopx.state.turns import PHASES

STEP_PHASES = ("execute", "validate", "write_back")


def _turn(state: GoalState, turn_id: str) -> dict[str, Any]:
    turn = state.turns.get(turn_id)
    if turn is None:
        raise NotFound("no such turn", code="turn_not_found", turn_id=turn_id)
    if turn["status"] != "open":
        raise Conflict(
            "turn is already settled; its run and quota are recorded once",
            code="turn_settled",
            turn_id=turn_id,
            run_id=turn["run_id"],
        )
    return turn


def _owner(state: GoalState, turn: dict[str, Any], agent_id: str) -> None:
    """The turn's agent may continue it; another only after adopting the todo by handoff."""
    if turn["agent_id"] == agent_id:
        return
    todo = state.todos.get(turn["todo_id"])
    claim = todo.claim if todo is not None else None
    if claim and claim["agent_id"] == agent_id and claim.get("via_handoff"):
        return
    raise Conflict(
        "the turn belongs to another agent; adopt its todo by handoff first",
        code="turn_owner_mismatch",
        turn_id=turn["turn_id"],
        agent_id=turn["agent_id"],
    )


def begin_turn(ctx: Context, cmd: BeginTurn) -> Result:
    """Open a journal entry for a turn on `todo_id`, which the acting agent holds."""
    todo_id = check_id(cmd.todo_id, "todo_id")

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        lookup.require_holder(item, ctx.agent_id, now, doing="begin a turn on it")
        for other in st.turns.values():
            if other["todo_id"] == todo_id and other["status"] == "open":
                raise Conflict(
                    "a turn on this todo is still open: resume it (loopx turn resume)",
                    code="turn_open",
                    turn_id=other["turn_id"],
                )
        data = {
            "turn_id": lookup.new_id("turn", st.turns, cmd.turn_id, "turn_id"),
            "todo_id": todo_id,
            "agent_id": ctx.agent_id,
            "session_id": ctx.session_id,
        }
        return [Change("turn.begun", data, item.visibility)]

    return execute(ctx, cmd, plan)


def record_phase(ctx: Context, cmd: RecordPhase) -> Result:
    """Record that the turn reached `phase` (execute, validate, write_back; never backwards)."""
    turn_id, phase = check_id(cmd.turn_id, "turn_id"), cmd.phase
    if phase not in STEP_PHASES:
        raise InvalidInput(
            "phase must be execute, validate or write_back (turn end spends and settles)",
            code="invalid_phase",
        )
    cmd = replace(
        cmd, ref=lookup.text(cmd.ref, "ref", required=False, limit=lookup.MAX_TITLE) or None
    )

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        turn = _turn(st, turn_id)
        _owner(st, turn, ctx.agent_id)
        if PHASES.index(phase) < PHASES.index(turn["phase"]):
            raise Conflict(
                f"turn is at {turn['phase']}; a phase cannot go back to {phase}",
                code="turn_phase_order",
                turn_id=turn_id,
                phase=turn["phase"],
            )
        todo = st.todos.get(turn["todo_id"])
        vis = todo.visibility if todo is not None else "team"
        data = {
            "turn_id": turn_id,
            "phase": phase,
            "session_id": ctx.session_id,
            "ref": ctx.optional_text(cmd.ref, vis),
        }
        return [Change("turn.phased", data, vis)]

    return execute(ctx, cmd, plan)


def end_turn(ctx: Context, cmd: EndTurn) -> Result:
    """Settle the turn: its run record and quota spend, and `turn.settled`, in one operation.
    A second settlement is `turn_settled`; retry a lost answer with the same operation id."""
    turn_id = check_id(cmd.turn_id, "turn_id")
    check_outcome(cmd.outcome, cmd.quota_spent)
    cmd = replace(cmd, summary=lookup.text(cmd.summary, "summary", required=False) or None)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        turn = _turn(st, turn_id)
        _owner(st, turn, ctx.agent_id)
        new_run = lookup.new_id("run", st.runs, cmd.run_id, "run_id")
        run = {
            "run_id": new_run,
            "agent_id": ctx.agent_id,
            "session_id": ctx.session_id,
            "todo_id": turn["todo_id"],
            "outcome": cmd.outcome,
            "summary": ctx.optional_text(cmd.summary, "team"),
            "evidence_ids": lookup.existing_evidence(st, cmd.evidence_ids),
            "quota_spent": cmd.quota_spent,
        }
        settled = {"turn_id": turn_id, "run_id": new_run}
        # The settlement first (the receipt's subject is the turn), its run in the same operation.
        return [Change("turn.settled", settled, "team"), Change("run.recorded", run, "team")]

    return execute(ctx, cmd, plan)


def refuse_unsettled(state: GoalState, todo_id: str | None) -> None:
    """A run recorded by hand for a todo with an open turn would spend its quota outside the
    turn, and `turn end` would spend it again: refused, `turn_unsettled`."""
    for turn in state.turns.values():
        if todo_id is not None and turn["todo_id"] == todo_id and turn["status"] == "open":
            raise Conflict(
                "a turn on this todo is open: settle it with loopx turn end, which records "
                "the run and its quota once",
                code="turn_unsettled",
                turn_id=turn["turn_id"],
            )
