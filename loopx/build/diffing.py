"""`loopx diff`: what changed between two builds, or two revisions of one goal's ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from loopx.model.errors import InvalidInput, NotFound
from loopx.model.ids import visible_to
from loopx.privacy.audience import Lens
from loopx.projections.diff import (
    describe,
    diff_facts,
    facts_from_artifacts,
    facts_from_state,
    summarize,
)
from loopx.state.fold import replay
from loopx.store import fsio
from loopx.store.select import open_store

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


def _read_json(path: Path) -> Any:
    """A build's JSON file, read through the store's file rules (no link, regular, capped)."""
    try:
        with fsio.guard("read a build file"):
            return orjson.loads(fsio.current().read_file(path, limit=MAX_ARTIFACT_BYTES))
    except FileNotFoundError:
        raise NotFound(f"{path.name} not found in the build", code="build_not_found") from None
    except orjson.JSONDecodeError:
        raise InvalidInput(f"{path.name} is not valid JSON", code="invalid_build") from None


def _build_facts(folder: Path, audience: str) -> dict[str, Any]:
    fs = fsio.current()
    with fsio.guard("read a build folder"):
        if not fs.is_file(folder / "manifest.json"):
            raise NotFound(
                "not a loopx build folder (no manifest.json)",
                code="build_not_found",
                folder=str(folder),
            )
        goals_dir = folder / audience / "goals"
        names = (
            [n for n, kind in fs.listdir(goals_dir) if kind == "dir"]
            if fs.is_dir(goals_dir)
            else []
        )
    facts = {}
    for name in names:
        status = _read_json(goals_dir / name / "status.json")
        graph = _read_json(goals_dir / name / "graph.json")
        try:
            facts[name] = facts_from_artifacts(status, graph)
        except (KeyError, TypeError, AttributeError, IndexError, ValueError):
            # A build folder is untrusted input: `{}`, `[]` or `null` is not an artifact, nor
            # a status.json of no schema loopx reads (v1 is read as v2: status_upgrade).
            raise InvalidInput(
                f"goal {name} of the build has a status.json or graph.json that is not a "
                "loopx artifact",
                code="invalid_build",
            ) from None
    return facts


def _finish(changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"changes": [{**c, "text": describe(c)} for c in changes], "summary": summarize(changes)}


def diff_builds(old: Path, new: Path, audience: str) -> dict[str, Any]:
    a, b = _build_facts(old, audience), _build_facts(new, audience)
    changes: list[dict[str, Any]] = []
    for goal in sorted(a.keys() | b.keys()):
        changes += diff_facts(a.get(goal), b.get(goal))
    return _finish(changes)


def _revision(value: str, head: int) -> int:
    try:
        rev = int(value)
    except ValueError:
        raise InvalidInput(
            "ledger revisions must be whole numbers", code="invalid_revision"
        ) from None
    if not 1 <= rev <= head:
        raise InvalidInput(f"revision must be between 1 and {head}", code="invalid_revision")
    return rev


def diff_revisions(root: Path, goal_id: str, old: str, new: str, audience: str) -> dict[str, Any]:
    store = open_store(root)
    if not store.exists(goal_id):
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    events = store.read(goal_id).events
    if not visible_to(events[0]["visibility"], audience):
        raise NotFound(f"goal has no {audience} view", code="goal_not_found", goal_id=goal_id)
    a, b = _revision(old, len(events)), _revision(new, len(events))
    read = store.get_blob if audience == "private" else None
    before = replay(events[:a])
    after = replay(events[:b])
    assert before is not None and after is not None
    return _finish(
        diff_facts(
            facts_from_state(before, Lens(audience, read)),
            facts_from_state(after, Lens(audience, read)),
        )
    )


def render_text(result: dict[str, Any]) -> str:
    if not result["changes"]:
        return "no changes"
    return "\n".join(c["text"] for c in result["changes"])


def render_markdown(result: dict[str, Any], old: str, new: str) -> str:
    """A pull-request comment."""
    from loopx.render.env import render

    return render("markdown/diff.md.j2", result=result, old=old, new=new)
