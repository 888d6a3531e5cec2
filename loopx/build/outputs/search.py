"""Search over the goals an audience may see, a piece per goal: `goals/<goal>/search.json`
(`loopx.search/v1`: the goal and the todos the audience may see), the same as a script
(`search-index.js`, so search works from file://, where there is no fetch), and the
audience's script that searches them (`search.js`). The index page loads the pieces
(`loopx.projections.search.loaded`, the audience projection's data) and then the script.

A piece per goal, not one index of the whole site: one event rewrites the pieces of the
goals it changed (with their units), so a rebuild scans those and not an index of every
goal's todos (on the 10,000-todo benchmark root, two whole-site files of 261 KB each were
63% of the public bytes a one-event rebuild scanned)."""

from __future__ import annotations

from functools import partial
from typing import Any

from loopx.build.registry import AudienceContext, GoalContext, Output, Projection
from loopx.projections.search import item_count, loaded, search_index, search_items
from loopx.render.jsonout import dumps
from loopx.resources import resource_dir


def _piece(ctx: GoalContext) -> dict[str, Any]:
    return search_index(search_items(ctx.state, ctx.lens()), ctx.audience)


def _script_data(ctx: GoalContext, data: dict[str, Any]) -> str:
    """`data` as a script adding it to `window.loopxSearch` (a list of pieces, in the order
    the page loads them); `<`, `>`, `&` and the two line separators JSON allows but old
    JavaScript did not are written as escapes."""
    text = dumps(data).decode("utf-8").rstrip("\n")
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return f"(window.loopxSearch = window.loopxSearch || []).push({text});\n"


def _loaded(ctx: AudienceContext) -> list[str]:
    """The goals whose pieces the index page loads (what each holds is counted once per goal
    and carried with its unit, `AudienceContext.part`)."""
    counts = [
        (g, ctx.part(g, "search", partial(item_count, ctx.goals[g], ctx.lens())))
        for g in sorted(ctx.goals)
    ]
    return loaded(counts)


PROJECTIONS = (
    Projection(
        "search",
        "goal",
        _piece,
        (Output("search.json", lambda ctx, piece: piece), Output("search-index.js", _script_data)),
    ),
    Projection(
        "search",
        "audience",
        _loaded,
        (
            Output(
                "search.js",
                lambda ctx, _: (resource_dir("templates") / "search.js").read_bytes(),
                template="search.js",
            ),
        ),
    ),
)
