"""Search over the goals an audience may see: `search.json` (`loopx.search/v1`), the same as a
script (`search-index.js`, so search works from file://, where there is no fetch) and the
script that searches (`search.js`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from loopx.build.registry import AudienceContext, Output, Projection
from loopx.projections.search import search_index, search_items
from loopx.render.jsonout import dumps
from loopx.resources import resource_dir


def _project(ctx: AudienceContext) -> dict[str, Any]:
    lens = ctx.lens()
    items = [
        i
        for g in sorted(ctx.goals)
        for i in ctx.part(g, "search", partial(search_items, ctx.goals[g], lens))
    ]
    return search_index(items, ctx.audience)


def _script_data(ctx: AudienceContext, data: dict[str, Any]) -> str:
    """`data` as a script assigning `window.loopxSearch`; `<`, `>`, `&` and the two line
    separators JSON allows but old JavaScript did not are written as escapes."""
    text = dumps(data).decode("utf-8").rstrip("\n")
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return f"window.loopxSearch = {text};\n"


PROJECTIONS = (
    Projection(
        "search",
        "audience",
        _project,
        (
            Output("search.json", lambda ctx, found: found),
            Output("search-index.js", _script_data),
            Output(
                "search.js",
                lambda ctx, _: (resource_dir("templates") / "search.js").read_bytes(),
                template="search.js",
            ),
        ),
    ),
)
