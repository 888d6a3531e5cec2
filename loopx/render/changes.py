"""A change from `loopx diff` as one Markdown line: ids in code spans, titles as prose
(marked for `md_context.finish`, which `render.env.render` runs)."""

from __future__ import annotations

from typing import Any

from loopx.projections.diff import describe
from loopx.render.md_context import code, prose

_IDS = frozenset({"goal_id", "todo_id", "gate_id", "evidence_id"})


def change_markdown(change: dict[str, Any]) -> str:
    fields = {
        key: (code(value) if key in _IDS else prose(value)) if isinstance(value, str) else value
        for key, value in change.items()
        if key not in ("kind", "text")
    }
    fields["kind"] = change["kind"]
    return describe(fields)
