"""A goal's entities by kind: what corrections and allow entries name (`entity`, `entity_id`)."""

from __future__ import annotations

from typing import Any

from loopx.state.entities import GoalState


def entity_tables(state: GoalState) -> dict[str, dict[str, Any]]:
    """Every kind of entity a correction may name → its entities by id (the goal first)."""
    return {
        "goal": {state.goal_id: state},
        "todo": state.todos,
        "gate": state.gates,
        "evidence": state.evidence,
        "note": state.notes,
        "run": state.runs,
        "handoff": state.handoffs,
    }
