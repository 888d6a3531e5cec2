"""The reviewed allow entries (`loopx allow finding`) as the team workbench lists them.

Public output lists none: an entry's reason is team text, and what it allows is already in
the public pages. Entries on entities the audience may not see are counted, not shown."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def listed(
    state: GoalState,
    lens: Lens,
    records: Iterable[dict[str, Any]],
    row: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The governed records on a goal's entities (allow entries, redactions) as the workbench
    lists them: `row`'s fields, then who, when and why. A record on an entity this audience
    may not see is counted as a correction, not shown."""
    out = []
    for r in records:
        visibility = _visibility(state, r["entity"], r["entity_id"])
        if not lens.sees(visibility):
            lens.omitted[f"{visibility} corrections"] += 1
            continue
        out.append({**row(r), "by": r["by"], "at": r["at"], "reason": lens.text(r["reason"])})
    return out


def allowance_items(state: GoalState, lens: Lens) -> list[dict[str, Any]]:
    """Every allow entry this audience may see, oldest first."""
    if lens.is_public or not state.allowances:
        return []
    return listed(
        state,
        lens,
        entries(state),
        lambda a: {
            "allowance_id": a["allowance_id"],
            "kind": a["kind"],
            "what": f"{a['entity']} {a['entity_id']}",
        },
    )
