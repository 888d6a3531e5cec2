"""One page per todo the audience may see: `todos/<todo>.html`, with who does it, what it
depends on and what depends on it, the gates that hold it and its evidence.

A page shows that todo and its neighbours only, never a fact of the whole goal (its last
change, its revision): one event then rewrites the pages of the todos it touched, not every
page of the goal."""

from __future__ import annotations

from typing import Any

from loopx.build.registry import GoalContext, Output, Projection, per_item
from loopx.privacy.audience import Lens
from loopx.projections.base import GENERATOR, evidence_item, ordered_todos, todo_card
from loopx.projections.waiting import monitor_item
from loopx.render.env import environment
from loopx.render.frame import Framed
from loopx.state.entities import GoalState

PAGE = "html/todo.html"
# What every todo page of one goal (and audience) is given alike (`shared` in `_inputs`).
GOAL_KEYS = ("goal_id", "goal_title", "repository", "root", "generator", "audience", "project")
# The page around the blocks that differ from todo to todo is rendered once per goal (the
# base page, the repository link): thousands of pages a build, it was a fifth of each.
PAGES = Framed(PAGE, GOAL_KEYS, holes=("title", "crumbs", "main", "changed", "source"))


def _project(ctx: GoalContext) -> dict[str, Any]:
    state, lens = ctx.state, ctx.lens()
    todos = [t for t in ordered_todos(state) if lens.sees(t.visibility)]
    visible = {t.todo_id for t in todos}
    dependents: dict[str, list[str]] = {}
    for t in todos:
        for d in t.depends_on:
            if d in visible:
                dependents.setdefault(d, []).append(t.todo_id)
    evidence: dict[str, list[Any]] = {}
    for e in sorted(state.evidence.values(), key=lambda e: e.created_seq):
        if e.todo_id is not None and e.todo_id in visible and lens.sees(e.visibility):
            evidence.setdefault(e.todo_id, []).append(e)
    gates = _gates(state, lens)
    cards = {t.todo_id: todo_card(t, lens, state) for t in todos}
    titles = {todo: card["title"] for todo, card in cards.items()}  # the lens's text, once
    pages = {}
    for t in todos:
        held, shown = gates.get(t.todo_id, []), evidence.get(t.todo_id, [])
        facts = _facts(t, lens)
        # The page's last change: the todo's, or a gate's or evidence item's it shows.
        facts["changed_at"] = max(
            [t.updated_at, *(g.resolved_at or g.opened_at for g in held)]
            + [e.recorded_at for e in shown]
        )
        pages[t.todo_id] = {
            "t": cards[t.todo_id],
            "facts": facts,
            "dependents": dependents.get(t.todo_id, []),
            "gates": [{"status": g.status, "question": lens.text(g.question)} for g in held],
            "evidence": [evidence_item(e, lens, ctx.head) for e in shown],
            # The todo's own time, never the goal's: `due` is not shown on the page.
            "monitor": monitor_item(t, lens, t.updated_at) if t.monitor is not None else None,
        }
    return {"titles": titles, "pages": pages}


def _gates(state: GoalState, lens: Lens) -> dict[str, list[Any]]:
    """The gates this audience may see, by the todo they hold."""
    gates: dict[str, list[Any]] = {}
    for g in sorted(state.gates.values(), key=lambda g: g.created_seq):
        if lens.sees(g.visibility):
            for held in g.blocks:
                gates.setdefault(held, []).append(g)
    return gates


def _facts(todo: Any, lens: Lens) -> dict[str, Any]:
    """Who does a todo and when it was opened, closed and last changed, from ledger time; the
    completion summary follows the todo's own visibility (the lens decides, as for its title).
    Who holds it is named only below the public audience."""
    facts: dict[str, Any] = {
        "who": "a person" if todo.role == "user" else "an agent",
        "created_at": todo.created_at,
        "closed_at": todo.closed_at,
        "summary": lens.text(todo.summary) if todo.summary is not None else None,
        "holder": None,
        "revision": todo.revision,
    }
    if not lens.is_public and todo.claim is not None:
        facts["holder"] = todo.claim["agent_id"]
    return facts


def _inputs(ctx: GoalContext, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Everything each page is made of: its todo's card and facts, the goal's title and
    repository, and the titles of only the todos it links to (so a renamed todo changes the
    pages of its neighbours, not every page of the goal)."""
    st = ctx["status"]
    titles = data["titles"]
    shared = {
        "goal_id": ctx.state.goal_id,
        "goal_title": st["goal"]["title"],
        "repository": st["goal"]["repository"],
        "root": "../../../",
        "generator": GENERATOR,
        "audience": ctx.audience,
        "project": ctx.project,
    }
    pages = {}
    for todo, page in data["pages"].items():
        linked = [*page["t"].get("depends_on", ()), *page["dependents"]]
        pages[todo] = {
            **page,
            **shared,
            "titles": {d: titles[d] for d in linked if d in titles},
        }
    return pages


def _page(inputs: dict[str, Any]) -> str:
    return PAGES.render(environment(), inputs)


PROJECTIONS = (
    Projection(
        "todos",
        "goal",
        _project,
        (Output("todos/*.html", per_item(_inputs, _page), PAGE, inputs=_inputs, make=_page),),
    ),
)
