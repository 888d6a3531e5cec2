"""The index projection (`loopx.index/v1`): every goal of a root, for one audience."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, ledger_now, progress
from loopx.state.entities import GoalState
from loopx.state.frontier import attention

SCHEMA = "loopx.index/v1"


def goal_summary(
    state: GoalState,
    lens: Lens,
    attention_state: str | None = None,
    reasons: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One row of the index; also cached by the build so unchanged goals are not refolded.
    `attention_state` and `reasons` spare a second frontier pass when the caller has them."""
    if attention_state is None or reasons is None:
        att = attention(state, ledger_now(state))
        attention_state, reasons = att["state"], att["reasons"]
    return {
        "goal_id": state.goal_id,
        "title": lens.text(state.title),
        "status": state.status,
        "attention": attention_state,
        "reasons": reasons,
        "progress": progress(state),
        "pending_gates": sum(1 for g in state.gates.values() if g.status == "pending"),
        "revision": state.revision,
        "head": state.head,
        "updated_at": state.updated_at,
    }


def index(rows: list[dict[str, Any]], lens: Lens, hidden_goals: dict[str, int]) -> dict[str, Any]:
    """`rows` are goal summaries this audience may see; `hidden_goals` counts the others."""
    for visibility, n in sorted(hidden_goals.items()):
        if n:
            lens.omitted[f"{visibility} goals"] += n
    rows = sorted(rows, key=lambda r: r["goal_id"])
    return {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "audience": lens.audience,
        "sources": [
            {"goal_id": r["goal_id"], "revision": r["revision"], "head": r["head"]} for r in rows
        ],
        "goals": rows,
        "omissions": lens.omissions(),
    }
