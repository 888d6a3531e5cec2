"""`loopx review`: the review packet, and its Markdown through the render cache.

The packet is projected on every call (`projections.review`, no template engine); its
Markdown is the registry's `review.md` (`build.single.review`, Jinja2), reused from
`.loopx/cache/review/` while the packet, the template and the code that renders it are the
same (`build.rendercache`): a reviewer or agent asking again before anything changed gets
the stored text, and no Jinja2 import.
"""

from __future__ import annotations

from typing import Any

from loopx.build import rendercache
from loopx.privacy.audience import BlobReader, Lens
from loopx.projections.review import review_packet
from loopx.state.entities import GoalState

TEMPLATE = "markdown/review.md.j2"  # build.outputs.review.MARKDOWN (a test holds them equal)
# The code the Markdown is rendered with besides the template: the environment and its
# filters, the escaping, the change lines (`change_md`, `projections.diff.describe`), and
# the output that renders it and the registry that turns it into text.
CODE = (
    "build/outputs/review.py",
    "build/registry.py",
    "render/env.py",
    "render/md_context.py",
    "render/md_escape.py",
    "render/changes.py",
    "projections/diff.py",
)


def packet(
    state: GoalState,
    *,
    head: str | None,
    visible: set[str],
    audience: str,
    read_blob: BlobReader | None = None,
    todo_id: str | None = None,
    since: GoalState | None = None,
) -> dict[str, Any]:
    """The review packet, as `build.single.review` projects it."""
    lens = Lens(audience, read_blob)
    return review_packet(
        state, lens, head=head, visible_goals=visible, todo_id=todo_id, since=since
    )


def markdown(store: Any, state: GoalState, rp: dict[str, Any], **how: Any) -> str:
    """The Markdown of `rp` (the `packet` of `state` made `how`: head, visible, audience,
    read_blob, todo_id, since), rendered through the registry or reused from the cache."""

    def render() -> str:
        from loopx.build.single import review

        return review(state, **how)[1]

    todo_id = how.get("todo_id")
    name = f"todo.{todo_id}.md" if todo_id else "goal.md"
    path = rendercache.location(store, how["audience"], "review", state.goal_id, name)
    digest = rendercache.key("review", TEMPLATE, rendercache.code_sources(CODE), rp)
    digest = rendercache.here(store, digest)
    return rendercache.reuse(path, digest, render)
