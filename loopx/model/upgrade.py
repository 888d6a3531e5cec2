"""Event versions: `upgrade()` brings an event written by an older loopx to the current shape.

Kept free of pydantic (like `loopx.state`) so read paths — status, next, replay — never pay
for importing it; only writes validate against the models.
"""

from __future__ import annotations

from typing import Any

EVENT_VERSION = 1


def upgrade(event: dict[str, Any]) -> dict[str, Any]:
    """Bring an event written by an older loopx to the current shape (identity for v1)."""
    return event
