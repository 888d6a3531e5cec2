"""Fit a handoff digest into a character budget: drop the least important material first,
never the goal and todo identity, the next steps or the re-inspect codes, and say what was
dropped (omissions with reason `budget`).

Each step of `BUDGET_STEPS` removes one kind of material from the digest (a copy) and returns
how many items (or characters) it removed; `fit_digest` takes steps until the rendering fits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from loopx.model.errors import InvalidInput


def _note(d: dict[str, Any]) -> dict[str, Any] | None:
    note: dict[str, Any] | None = d["handoff"]["note"]
    return note


def _keep_evidence(n: int) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        cut = max(len(d["evidence"]) - n, 0)
        del d["evidence"][n:]
        return cut

    return step


def _drop_key(path: tuple[str, ...], key: str) -> Callable[[dict[str, Any]], int]:
    """Remove `key` from every item of the list at `path` (counts the items it cut from)."""

    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return 0
        n = 0
        for item in node:
            if item.get(key):
                item[key] = None if key in ("reason", "summary") else []
                n += 1
        return n

    return step


def _clear_note_list(name: str) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        note = _note(d)
        if note is None:
            return 0
        n = len(note[name])
        note[name] = []
        return n

    return step


def _clear(path: tuple[str, ...]) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path[:-1]:
            node = node[part]
        n = len(node[path[-1]])
        node[path[-1]] = []
        return n

    return step


def _truncate(path: tuple[str, ...], keep: int) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return 0
        value = node.get(path[-1])
        if not isinstance(value, str) or len(value) <= keep:
            return 0
        node[path[-1]] = value[: keep - 1].rstrip() + "…"
        return len(value) - keep

    return step


def _shorten_reinspect(d: dict[str, Any]) -> int:
    n = 0
    for item in d["reinspect"]:
        short = item["code"].replace("_", " ")
        if item["message"] != short:
            item["message"] = short
            n += 1
    return n


def _clear_gates_and_dependencies(d: dict[str, Any]) -> int:
    return _clear(("todo", "gates"))(d) + _clear(("todo", "dependencies"))(d)


def _drop_command(d: dict[str, Any]) -> int:
    if d["adoption"]["command"] is None:
        return 0
    d["adoption"]["command"] = None
    return 1


def _trim_acceptance(d: dict[str, Any]) -> int:
    n = len(d["goal"]["acceptance"])
    d["goal"]["acceptance"] = []
    return n


# Least important first. Each step returns how many items (or characters) it removed; the
# goal and todo identity, the next steps and the re-inspect codes are never removed.
BUDGET_STEPS: list[tuple[str, Callable[[dict[str, Any]], int]]] = [
    ("evidence items", _keep_evidence(5)),
    ("ready todos", _clear(("frontier", "todos"))),
    ("waiting items", _clear(("waiting", "items"))),
    ("evidence refs", _drop_key(("evidence",), "refs")),
    ("approach reasons", _drop_key(("handoff", "note", "approaches_tried"), "reason")),
    ("file summaries", _drop_key(("handoff", "note", "files_touched"), "summary")),
    ("source refs", _clear_note_list("source_refs")),
    ("evidence items", _keep_evidence(2)),
    ("acceptance criteria", _trim_acceptance),
    ("decisions", _clear_note_list("key_decisions")),
    ("evidence items", _keep_evidence(0)),
    ("approaches", _clear_note_list("approaches_tried")),
    ("questions", _clear_note_list("open_questions")),
    ("objective chars", _truncate(("goal", "objective"), 160)),
    ("todo acceptance chars", _truncate(("todo", "acceptance"), 160)),
    ("files", _clear_note_list("files_touched")),
    ("summary chars", _truncate(("handoff", "note", "work_summary"), 600)),
    ("gates/dependencies", _clear_gates_and_dependencies),
    ("adopt command", _drop_command),
    ("summary chars", _truncate(("handoff", "note", "work_summary"), 160)),
    ("objective chars", _truncate(("goal", "objective"), 60)),
    ("re-inspect details", _shorten_reinspect),
]


def fit_digest(
    digest: dict[str, Any], max_chars: int, render: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """A copy of `digest` whose `render` is at most `max_chars` characters long.

    Drops material step by step in `BUDGET_STEPS` order, recording each cut in `omissions`
    (reason `budget`). Raises `InvalidInput` (`budget_too_small`, with the smallest size
    that keeps the identity and next steps) when even the leanest digest does not fit.
    """
    if max_chars < 1:
        raise InvalidInput("--max-chars must be a positive number", code="invalid_budget")
    out = copy.deepcopy(digest)
    out["max_chars"] = max_chars
    if len(render(out)) <= max_chars:
        return out
    cut: dict[str, int] = {}
    for what, step in BUDGET_STEPS:
        removed = step(out)
        if not removed:
            continue
        cut[what] = cut.get(what, 0) + removed
        out["omissions"] = [o for o in out["omissions"] if o["reason"] != "budget"] + [
            {"reason": "budget", "what": name, "count": n} for name, n in cut.items()
        ]
        size = len(render(out))
        if size <= max_chars:
            return out
    while True:  # the smallest budget that works also names itself in the output
        out["max_chars"] = size
        needed = len(render(out))
        if needed <= size:
            break
        size = needed
    raise InvalidInput(
        f"--max-chars {max_chars} is too small: the leanest digest (goal, todo, next steps "
        f"and what was left out) takes {size} characters",
        code="budget_too_small",
        max_chars=max_chars,
        minimum=size,
    )
