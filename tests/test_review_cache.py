"""`loopx review` renders its Markdown through the registry, and reuses it from the render
cache while the packet, the template and the rendering code are the same (issue 19)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

GOAL = "launch"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("review") / "d"
    assert run_cli(["demo", str(root)]).exit_code == 0
    return root


def _fresh(root: Path, audience: str = "team", **how: Any) -> tuple[dict[str, Any], str]:
    """The packet and Markdown as the registry makes them, with no cache in the way."""
    from loopx.build.single import review
    from loopx.engine.core import require_goal
    from loopx.model.ids import visible_goals
    from loopx.state.fold import replay
    from loopx.state.turns import goal_truth
    from loopx.store.filestore import FileStore

    store = FileStore(root)
    state = goal_truth(require_goal(store, GOAL))  # as committed artifacts see it
    since = how.get("since")
    before = replay(store.read(GOAL).events[:since]) if since else None
    goals = {GOAL: state.visibility}
    if state.predecessor:
        goals[state.predecessor] = require_goal(store, state.predecessor).visibility
    return review(
        state,
        head=None,
        visible=visible_goals(goals, audience),
        audience=audience,
        read_blob=store.get_blob if audience == "private" else None,
        todo_id=how.get("todo_id"),
        since=before,
    )


def _review(root: Path, *args: str) -> str:
    done = run_cli(["review", "--goal-id", GOAL, "--root", str(root), *args])
    assert done.exit_code == 0, done.stderr
    return done.stdout


def _todo(root: Path) -> str:
    from loopx.engine.core import require_goal
    from loopx.store.filestore import FileStore

    return sorted(require_goal(FileStore(root), GOAL).todos)[0]


def test_the_cache_renders_the_registry_template() -> None:
    from loopx.build import review
    from loopx.build.outputs.review import MARKDOWN

    assert review.TEMPLATE == MARKDOWN


def test_review_markdown_is_the_registry_rendering_and_is_reused(demo: Path) -> None:
    todo = _todo(demo)
    cases: list[tuple[tuple[str, ...], dict[str, Any], Path]] = [
        ((), {}, Path(".loopx/cache/review/launch/goal.md")),
        (
            ("--todo-id", todo),
            {"todo_id": todo},
            Path(f".loopx/cache/review/launch/todo.{todo}.md"),
        ),
        (("--since", "3"), {"since": 3}, Path(".loopx/cache/review/launch/goal.md")),
        (
            ("--audience", "private"),
            {"audience": "private"},
            Path(".loopx/private/cache/review/launch/goal.md"),
        ),
    ]
    for args, how, cached in cases:
        rp, markdown = _fresh(demo, **how)
        assert _review(demo, *args) == markdown  # rendered, then cached
        assert (demo / cached).read_text().split("\n", 1)[1] == markdown
        assert _review(demo, *args) == markdown  # reused
        asked = ["review", "--goal-id", GOAL, "--root", str(demo), *args, "--format", "json"]
        assert run_cli(asked).json() == rp


def test_a_forged_or_outdated_cache_is_rendered_afresh(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopx.build import rendercache

    _, markdown = _fresh(demo)
    cached = demo / ".loopx" / "cache" / "review" / GOAL / "goal.md"
    _review(demo)
    cached.write_text("0" * 64 + "\nforged\n")  # a key that does not match: ignored
    assert _review(demo) == markdown
    key = cached.read_text().split("\n", 1)[0]
    monkeypatch.setattr(rendercache, "code_sources", lambda modules: b"an upgraded filter")
    assert _review(demo) == markdown
    assert cached.read_text().split("\n", 1)[0] != key  # rendered again, under a new key
    monkeypatch.undo()
    added = run_cli(
        [*("todo", "add", "--goal-id", GOAL, "--title", "A new todo"), "--root", str(demo)]
    )
    assert added.exit_code == 0
    _, changed = _fresh(demo)
    assert changed != markdown and _review(demo) == changed  # a new revision: a new packet


def test_the_key_covers_the_template_the_code_and_the_packet() -> None:
    from loopx.build import rendercache, review

    code = rendercache.code_sources(review.CODE)
    base = rendercache.key("review", review.TEMPLATE, code, {"a": 1})
    assert rendercache.key("review", review.TEMPLATE, code, {"a": 2}) != base
    assert rendercache.key("review", review.TEMPLATE, code + b"x", {"a": 1}) != base
    assert rendercache.key("review", "markdown/workbench.md.j2", code, {"a": 1}) != base
    assert rendercache.key("review", review.TEMPLATE, code, {"a": 1}) == base
