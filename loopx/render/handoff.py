"""Render a handoff digest (`loopx.handoff/v1`): canonical JSON, or text through the
`handoff/` templates — a paste-ready Markdown digest, the full Markdown report, or the digest
as plain text — within a character budget (`projections.handoff_budget.fit_digest` decides what
to drop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from loopx.projections.handoff_budget import fit_digest
from loopx.render.jsonout import dumps

TEMPLATES = {
    "digest": "handoff/digest.md.j2",  # compact Markdown to paste into any agent
    "markdown": "handoff/handoff.md.j2",  # the full report, with provenance and tables
    "text": "handoff/digest.txt.j2",  # the digest as plain text, for plain prompts
}


def render_digest_json(digest: dict[str, Any]) -> str:
    """Canonical artifact JSON (sorted keys, two-space indent, trailing newline); compact
    (no indentation) when the digest was fitted into a character budget."""
    if digest.get("max_chars") is not None:
        return orjson.dumps(digest, option=orjson.OPT_SORT_KEYS).decode("utf-8") + "\n"
    return dumps(digest).decode("utf-8")


def _markdown_renderer(template: str) -> Callable[[dict[str, Any]], str]:
    # Jinja2 loads with the first rendering, not with this module: a cached `handoff
    # inspect` (loopx.build.handoff) reads the text back without it.
    from loopx.render.env import render as render_template

    def render(digest: dict[str, Any]) -> str:
        return render_template(template, d=digest, **_render_context(digest))

    return render


def _render_context(digest: dict[str, Any]) -> dict[str, Any]:
    budget = [o for o in digest["omissions"] if o["reason"] == "budget"]
    audience = [o for o in digest["omissions"] if o["reason"] == "audience"]
    return {
        "budget_line": ", ".join(f"{o['count']} {o['what']}" for o in budget),
        "audience_line": ", ".join(f"{o['count']} {o['what']}" for o in audience),
        "note": digest["handoff"]["note"],
    }


def render_digest_markdown(
    digest: dict[str, Any], max_chars: int | None = None, *, template: str = "digest"
) -> str:
    """The digest as Markdown, at most `max_chars` characters when a budget is given.

    `template` is `digest` (compact, to paste into any agent), `markdown` (the full
    report, with provenance and tables) or `text` (the digest without Markdown syntax).
    """
    render = _markdown_renderer(TEMPLATES[template])
    if max_chars is None:
        return render(digest)
    return render(fit_digest(digest, max_chars, render))


def render_digest_text(digest: dict[str, Any], max_chars: int | None = None) -> str:
    """The digest as plain text (no Markdown syntax, values verbatim), within `max_chars`."""
    return render_digest_markdown(digest, max_chars, template="text")
