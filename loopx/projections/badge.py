"""Status badges (a shields.io endpoint document, https://shields.io/badges/endpoint-badge):
one per goal and one for the project, from the index rows an audience may see."""

from __future__ import annotations

from typing import Any

SCHEMA = "shields.endpoint/v1"  # our name for the shields.io endpoint format (schemaVersion 1)

WORDS = {
    "ready_for_agent": "moving",
    "needs_user": "needs a person",
    "waiting": "in progress",
    "blocked": "stuck",
}
COLOURS = {
    "ready_for_agent": "3259a8",
    "needs_user": "6f3fb0",
    "waiting": "9a6b00",
    "blocked": "b3261e",
    "achieved": "1e7a3c",
    "abandoned": "6b6b6b",
    "none": "6b6b6b",
}


def _top(row: dict[str, Any]) -> str:
    if row["status"] != "active":
        return str(row["status"])
    reasons = row.get("reasons") or []
    return str(reasons[0]["state"]) if reasons else "blocked"


def goal_badge(row: dict[str, Any]) -> dict[str, Any]:
    """`moving · 2/10 done` for an active goal; `achieved` / `abandoned` once closed."""
    top = _top(row)
    live = row["progress"]["total"] - row["progress"]["cancelled"]
    message = (
        top
        if row["status"] != "active"
        else f"{WORDS[top]} · {row['progress']['done']}/{live} done"
    )
    return {"schemaVersion": 1, "label": row["goal_id"], "message": message, "color": COLOURS[top]}


def project_badge(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """How many visible goals are active and achieved; coloured by the most pressing need."""
    active = [r for r in rows if r["status"] == "active"]
    achieved = sum(1 for r in rows if r["status"] == "achieved")
    parts = []
    if active:
        parts.append(f"{len(active)} active")
    if achieved:
        parts.append(f"{achieved} achieved")
    message = ", ".join(parts) or "no goals"
    if active:
        rank = list(WORDS)
        colour = COLOURS[min((_top(r) for r in active), key=rank.index)]
    else:
        colour = COLOURS["achieved" if achieved else "none"]
    return {"schemaVersion": 1, "label": name, "message": message, "color": colour}
