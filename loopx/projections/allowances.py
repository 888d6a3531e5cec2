"""The reviewed allow entries (`loopx allow finding`) as the team workbench lists them.

Public output lists none: an entry's reason is team text, and what it allows is already in
the public pages. Entries on entities the audience may not see are counted, not shown."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.state.allowances import entries
from loopx.state.entities import GoalState
from loopx.state.redactions import target


def _visibility(state: GoalState, entity: str, entity_id: str) -> str:
    item = target(state, entity, entity_id)
    if item is state:
        return state.visibility
    if isinstance(item, dict):  # a handoff
        return str(item.get("visibility", "team"))
    return "private" if item is None else str(item.visibility)


def allowance_items(state: GoalState, lens: Lens) -> list[dict[str, Any]]:
    """Every allow entry this audience may see, oldest first."""
    if lens.is_public or not state.allowances:
        return []
    out = []
    for a in entries(state):
        visibility = _visibility(state, a["entity"], a["entity_id"])
        if not lens.sees(visibility):
            lens.omitted[f"{visibility} corrections"] += 1  # as redactions are
            continue
        out.append(
            {
                "allowance_id": a["allowance_id"],
                "kind": a["kind"],
                "what": f"{a['entity']} {a['entity_id']}",
                "by": a["by"],
                "at": a["at"],
                "reason": lens.text(a["reason"]),
            }
        )
    return out
