"""The turn journal in the fold: one entry per bounded agent turn, its phases (claim,
execute, validate, write back, spend, settle) and when each was reached.

An entry records progress and authorises nothing: no precondition of any other write reads
it. Settling appends the run (and its quota spend) and `turn.settled` in one operation, so an
interrupted turn is either settled with its spend, or open with nothing spent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loopx.state.entities import GoalState

# The journal's own progress: events that change no goal truth. (`turn.settled` is truth: it
# comes in one operation with the run and its quota spend.)
JOURNAL = frozenset({"turn.begun", "turn.phased"})
PHASES = ("claim", "execute", "validate", "write_back", "spend", "settle")

# What the next executor must re-inspect before continuing from each last phase reached.
RESUME_ADVICE = {
    "claim": "the todo was claimed but no work is recorded: check the lease is still yours "
    "(loopx todo renew), then execute",
    "execute": "work was under way: inspect the working tree (git status, git diff) for "
    "half-made changes before executing again",
    "validate": "validation had started: run the checks again, results from before the "
    "interruption may be partial",
    "write_back": "a write-back was started (a push, a comment, evidence): check the remote "
    "and the ledger before writing again, then settle with loopx turn end",
}


def turn_begun(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    at = event["recorded_at"]
    state.turns[data["turn_id"]] = {
        "turn_id": data["turn_id"],
        "todo_id": data["todo_id"],
        "agent_id": data["agent_id"],
        "session_id": data["session_id"],
        "phase": "claim",
        "phases": [{"phase": "claim", "at": at, "session_id": data["session_id"]}],
        "begun_at": at,
        "updated_at": at,
        "status": "open",
        "run_id": None,
        "settled_at": None,
    }


def turn_phased(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    turn = state.turns.get(data["turn_id"])
    if turn is None:
        return
    step = {"phase": data["phase"], "at": event["recorded_at"], "session_id": data["session_id"]}
    if data.get("ref") is not None:
        step["ref"] = data["ref"]
    turn["phases"].append(step)
    turn["phase"] = data["phase"]
    turn["updated_at"] = event["recorded_at"]


def turn_settled(state: GoalState, data: dict[str, Any], event: dict[str, Any]) -> None:
    turn = state.turns.get(data["turn_id"])
    if turn is None:
        return
    at = event["recorded_at"]
    turn["phases"].append({"phase": "spend", "at": at, "session_id": event["actor"]["session_id"]})
    turn["phases"].append({"phase": "settle", "at": at, "session_id": event["actor"]["session_id"]})
    turn["phase"] = "settle"
    turn["status"] = "settled"
    turn["run_id"] = data["run_id"]
    turn["settled_at"] = at
    turn["updated_at"] = at


def open_turns(state: GoalState) -> list[dict[str, Any]]:
    """Turns begun and not settled, oldest first."""
    found = [t for t in state.turns.values() if t["status"] == "open"]
    return sorted(found, key=lambda t: (t["begun_at"], t["turn_id"]))


def goal_truth(state: GoalState) -> GoalState:
    """`state` as committed artifacts see it: at the last event of goal truth (its revision,
    head and time), without the journal. A turn's progress is a live fact (`loopx status`,
    prime, handoff inspect, `turn list`), so a build committed before a turn phase stays
    current after it. A shallow copy: `state` is not changed."""
    if state.truth_revision == state.revision and not state.turns:
        return state
    return replace(
        state,
        revision=state.truth_revision,
        head=state.truth_head,
        updated_at=state.truth_at,
        turns={},
    )
