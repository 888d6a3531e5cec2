"""Render the session primer (`loopx.prime/v1`) as Markdown or canonical JSON within a
character budget, and the loopx block for `AGENTS.md` / `CLAUDE.md`."""

from __future__ import annotations

import re
from typing import Any

from loopx.projections.agents_md import BEGIN, END
from loopx.projections.prime import fit_primer, protocol
from loopx.render.env import render as render_template
from loopx.render.jsonout import dumps


def render_prime_markdown(primer: dict[str, Any]) -> str:
    text = render_template("prime/prime.md.j2", p=primer)
    return re.sub(r"\n{3,}", "\n\n", text)  # one blank line between blocks, however nested


def render_prime_json(primer: dict[str, Any]) -> str:
    return dumps(primer).decode("utf-8")


def render_prime(primer: dict[str, Any], fmt: str, max_chars: int) -> str:
    """The primer fitted into `max_chars` characters of its rendering in `fmt`."""
    render = render_prime_json if fmt == "json" else render_prime_markdown
    return render(fit_primer(primer, max_chars, render))


def agents_block(goal_id: str | None = None) -> str:
    """The marked block: what loopx is, `loopx prime`, and the protocol with its commands."""
    return render_template(
        "prime/agents.md.j2",
        begin=BEGIN,
        end=END,
        goal_id=goal_id,
        protocol=protocol(goal_id, None),
    )
