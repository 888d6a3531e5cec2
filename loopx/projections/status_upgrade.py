"""Reading older status documents: `upgrade(doc)` turns a `loopx.status/v1` document (a build
made before v2) into a `loopx.status/v2` one, so code that reads a build (`loopx diff`) reads
one shape whatever loopx wrote it.

v2 adds what a goal waits for. A v1 document never recorded it, so the upgrade says so
instead of guessing: `upgraded_from` names v1; `attention.next_wake` is null; `monitors` and
`waiting_for` are empty; each gate's `ask_again_at` is null. Everything else is carried as
written. Pure: the input is not changed; a v2 document is returned as it is; anything else is
`ValueError` (the caller decides what an unreadable build means).
"""

from __future__ import annotations

import copy
from typing import Any

V1 = "loopx.status/v1"
V2 = "loopx.status/v2"


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a `loopx.status/v2` document (see the module's docstring)."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == V2:
        return doc
    if schema != V1:
        raise ValueError(f"not a loopx status document: {schema!r}")
    out = copy.deepcopy(doc)
    out["schema"] = V2
    out["upgraded_from"] = V1
    out["attention"]["next_wake"] = None
    out["monitors"] = {"due": 0, "items": []}
    out["waiting_for"] = []
    for gate in out["gates"]["items"]:
        gate["ask_again_at"] = None
    return out
