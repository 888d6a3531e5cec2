"""The feed projection: the status changes of goals a visitor follows (goal closed, todo done
or reopened, decision made) as Atom entries, newest first.

Each entry is one ledger event, read from the goal's folded history (`GoalState.history`, in
ledger order), so a todo done, reopened and done again is three entries. Its id names the
goal, the event's seq and the start of the event line's checksum: the same change keeps the
same id in every build, audience and store, and no two changes share one. Its time is the
time the ledger recorded. Only what the audience's lens sees is an entry, and every text is
read through the lens (redactions honoured); the changes it may not see are counted, never
listed (the feed's omission note)."""

from __future__ import annotations

from typing import Any

from loopx.privacy.audience import Lens
from loopx.state.entities import GoalState, Todo

FEED_LIMIT = 50
Entry = dict[str, Any]


def goal_entries(state: GoalState, lens: Lens, href: str) -> dict[str, Any]:
    """The changes of one goal this audience may see, in ledger order (`entries`), and how
    many it may not (`hidden`); `href` is the goal page's folder (relative to the feed)."""
    title = lens.text(state.title)
    latest = {
        entity_id: seq
        for seq, _, kind, entity_id, what, _ in state.history
        if kind == "todo" and what == "done"
    }
    out: list[Entry] = []
    hidden = 0
    for seq, at, kind, entity_id, what, line_sum in state.history:
        if kind == "goal":
            entry = _goal_entry(title, what, href)
        elif kind == "todo":
            todo = state.todos[entity_id]
            if not lens.sees(todo.visibility):
                hidden += 1
                continue
            entry = _todo_entry(lens, title, todo, what, latest.get(entity_id) == seq, href)
        else:
            gate = state.gates[entity_id]
            if not lens.sees(gate.visibility):
                hidden += 1
                continue
            question = lens.field(gate, "question")
            entry = {
                "title": f"{title}: decision {what}: {question}",
                "href": f"{href}index.html",
                "summary": f"The decision was {what}.",
            }
        entry.update(
            id=f"urn:loopx:{state.goal_id}:{seq}:{line_sum}",
            updated=at,
            order=(at, state.goal_id, seq),
        )
        out.append(entry)
    return {"entries": out, "hidden": hidden}


def _goal_entry(title: str, what: str, href: str) -> Entry:
    return {
        "title": f"{title}: goal {what}",
        "href": f"{href}index.html",
        "summary": f"The goal was closed as {what}.",
    }


def _todo_entry(lens: Lens, title: str, todo: Todo, what: str, latest: bool, href: str) -> Entry:
    """A completion shows the todo's summary when it is the latest one (the fold keeps the
    summary of the latest completion only); a reopening says so."""
    if what == "reopened":
        summary = "The todo was reopened."
    else:
        summary = (lens.field(todo, "summary") if latest else None) or "Done."
    return {
        "title": f"{title}: {what}: {lens.field(todo, 'title')}",
        "href": f"{href}todos/{todo.todo_id}.html",
        "summary": summary,
    }


EPOCH = "1970-01-01T00:00:00Z"


def feed(
    changes: dict[str, Any], *, feed_id: str, title: str, since: str = EPOCH
) -> dict[str, Any]:
    """The newest `FEED_LIMIT` entries of `changes`, how many older ones are left out, and
    how many this audience may not see (`count` in `changes`: how many entries there are,
    when it holds only the newest); the feed is as new as its newest entry (without one:
    `since`, when what it follows began)."""
    ordered = sorted(changes["entries"], key=lambda e: e["order"], reverse=True)
    kept = ordered[:FEED_LIMIT]
    return {
        "id": feed_id,
        "title": title,
        "updated": kept[0]["updated"] if kept else since,
        "entries": kept,
        "left_out": changes.get("count", len(ordered)) - len(kept),
        "hidden": changes["hidden"],
    }
