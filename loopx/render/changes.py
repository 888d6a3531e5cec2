"""A change from `loopx diff` as one Markdown line: ids in code spans, titles as prose
(marked for `md_context.finish`, which `render.env.render` runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopx.projections.diff import describe
from loopx.render.md_context import code, prose

_IDS = frozenset({"goal_id", "todo_id", "gate_id", "evidence_id"})


def change_markdown(change: dict[str, Any]) -> str:
    return described(change, code, prose)


def described(
    change: dict[str, Any], as_id: Callable[[str], Any], as_text: Callable[[str], Any]
) -> str:
    """`describe` of a change, its ids given as `as_id` makes them and its other text as
    `as_text` does (Markdown here, HTML in `render.html_text`)."""
    fields = {
        key: (as_id(value) if key in _IDS else as_text(value)) if isinstance(value, str) else value
        for key, value in change.items()
        if key not in ("kind", "text")
    }
    fields["kind"] = change["kind"]
    return describe(fields)
