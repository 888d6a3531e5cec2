"""The live handoff views: a todo's digest with facts observed in a checkout (`loopx handoff
inspect`, the MCP tool), rendered through a cache under `.loopx/`; and the notes still
waiting for an agent across goals (`loopx handoff list`).

Private text is read from the store's blobs through the audience lens (`read_blob`); this
module reads the store, the checkout and its own cache, and nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopx.build import rendercache
from loopx.engine import lookup
from loopx.engine.core import require_goal
from loopx.engine.goals_all import health_of, load_all
from loopx.engine.handoff import pick_handoff, workspace_facts
from loopx.model.errors import LoopxError
from loopx.privacy.audience import BlobReader, BlobText, note_body
from loopx.projections.handoff import handoff_digest, pending_handoffs
from loopx.projections.handoff_budget import fit_digest
from loopx.render.handoff import TEMPLATES, render_digest_json, render_digest_markdown


def inspect_handoff(
    store: Any,
    goal_id: str,
    todo_id: str,
    *,
    workspace: Path | None,
    audience: str = "private",
    now: str | None = None,
    reader: dict[str, str] | None = None,
    handoff_id: str | None = None,
) -> dict[str, Any]:
    """The digest of a todo's latest note, with facts observed in `workspace` (no budget)."""
    read_blob: BlobReader = store.get_blob
    state = require_goal(store, goal_id)
    lookup.todo(state, todo_id)
    found = pick_handoff(state, todo_id, handoff_id)  # refuses another todo's note
    facts = None
    if workspace is not None:
        paths: list[str] = []
        revision = None
        if found is not None:
            revision = found.git_revision
            paths = _note_paths(found.note, read_blob)
        facts = workspace_facts(workspace, revision, paths)
    return handoff_digest(
        state,
        todo_id,
        audience=audience,
        read_blob=read_blob,
        workspace_facts=facts,
        now=now,
        reader=reader,
        handoff_id=handoff_id,
    )


def _note_paths(note: Any, read_blob: BlobReader) -> list[str]:
    body = note_body(note, BlobText(read_blob))
    return [] if body is None else [f["path"] for f in body.get("files_touched", [])]


def render_inspected(store: Any, digest: dict[str, Any], fmt: str, max_chars: int | None) -> str:
    """The digest as `fmt`: `json` (compact when fitted into `max_chars`), else the text of
    the `digest`, `markdown` or `text` template, through the render cache."""
    if fmt != "json":
        return render_cached(store, digest, fmt, max_chars)
    if max_chars is not None:
        digest = fit_digest(digest, max_chars, render_digest_json)
    return render_digest_json(digest)


# The code a digest's Markdown is rendered with besides its template (`build.rendercache`:
# read from the files, so a call that reuses the cache imports no renderer): the renderer,
# the budget fitting it renders through, the environment and its filters, the escaping.
CODE = (
    "render/handoff.py",
    "projections/handoff_budget.py",
    "render/env.py",
    "render/md_escape.py",
    "render/md_context.py",
)


def render_cached(store: Any, digest: dict[str, Any], template: str, max_chars: int | None) -> str:
    """The digest as Markdown, reused from `.loopx/cache/` when this digest was rendered before.

    Rendering imports Jinja2, about a fifth of an inspect call; an agent that inspects the same
    note on every turn gets the stored text instead. One cache file per goal, todo, template
    and budget, holding its key: the digest (all but `now`, which no template shows; a test
    holds them to that), the budget, the template's source, the code that renders it (`CODE`,
    Jinja2 and markupsafe) and the loopx version.
    Private-audience output is cached under `.loopx/private/`, the partition that never
    leaves this host.
    """
    key = rendercache.here(store, _cache_key(digest, template, max_chars))
    path = _cache_path(store, digest, template, max_chars)
    return rendercache.reuse(
        path, key, lambda: render_digest_markdown(digest, max_chars, template=template)
    )


def _cache_key(digest: dict[str, Any], template: str, max_chars: int | None) -> str:
    keyed = {k: v for k, v in digest.items() if k != "now"}
    code = rendercache.code_sources(CODE)
    return rendercache.key("handoff", TEMPLATES[template], code, [max_chars, keyed])


def _cache_path(
    store: Any, digest: dict[str, Any], template: str, max_chars: int | None
) -> Path | None:
    """Where the rendering is cached (None for a store without a state folder). A
    private-audience digest may hold private text: it is kept in the private partition."""
    name = f"{digest['todo']['todo_id']}.{template}.{max_chars or 'full'}.md"
    goal_id = digest["source"]["goal_id"]
    return rendercache.location(store, digest["audience"], "handoff", goal_id, name)


def list_pending(store: Any, goal_id: str | None, now: str) -> dict[str, Any]:
    """Pending handoffs across goals (or one), newest first; damaged goals are reported."""
    items: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    if goal_id is not None:
        states = [require_goal(store, goal_id)]
    else:
        states = []
        for gid, loaded in load_all(store):
            if isinstance(loaded, LoopxError):
                problems.append(
                    {
                        "goal_id": gid,
                        "health": health_of(loaded),
                        "code": loaded.code,
                        "message": loaded.message,
                    }
                )
                continue
            if loaded.state is not None:
                states.append(loaded.state)
    for state in states:
        items.extend(pending_handoffs(state, audience="private", read_blob=store.get_blob, now=now))
    items.sort(key=lambda h: (h["prepared_at"], h["goal_id"], h["prepared_seq"]), reverse=True)
    return {"now": now, "handoffs": items, "total": len(items), "problems": problems}
