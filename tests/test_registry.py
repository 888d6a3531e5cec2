"""The projection registry (`loopx.build.registry`): a projection declared in one place is
built, listed in the manifest, checked, scanned and carried over like every other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopx.build import registry, reuse
from loopx.build.pipeline import build, check
from loopx.build.registry import Output, Projection
from loopx.engine.demo import REV_NEW
from loopx.model.errors import BoundaryViolation
from loopx.resources import resource_dir


def _counts(ctx: Any) -> dict[str, Any]:
    """A tiny projection: the goal's title and how many todos this audience sees."""
    lens = ctx.lens()
    seen = [t for t in ctx.state.todos.values() if lens.sees(t.visibility)]
    return {"title": lens.text(ctx.state.title), "todos": len(seen)}


NOTES = Projection(
    "notes",
    "goal",
    _counts,
    (Output("notes.txt", lambda ctx, d: f"{d['title']}: {d['todos']} todo(s)\n"),),
    links=lambda d: [{"href": "notes.txt", "label": "Notes"}],
)
ROBOTS = Projection(
    "robots",
    "audience",
    lambda ctx: sorted(ctx.goals),
    (Output("robots.txt", lambda ctx, goals: "".join(f"Allow: /goals/{g}/\n" for g in goals)),),
    audiences=frozenset({"public"}),
)


def test_a_new_projection_is_built_listed_linked_and_checked(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    with registry.registered(NOTES), registry.registered(ROBOTS):
        result = build(demo, out, head=REV_NEW, validate=True)
        assert check(demo, out, head=REV_NEW).ok
        notes = out / "public/goals/launch/notes.txt"
        assert notes.read_text().endswith(" todo(s)\n")
        assert (out / "team/goals/docs/notes.txt").is_file()
        assert (out / "public/robots.txt").read_text() == (
            "Allow: /goals/launch/\nAllow: /goals/prototype/\n"
        )
        assert not (out / "team/robots.txt").exists()  # declared for public only
        manifest = json.loads((out / "manifest.json").read_text())
        meta = manifest["files"]["public/goals/launch/notes.txt"]
        assert meta["audience"] == "public" and meta["goal_id"] == "launch"
        assert 'href="notes.txt"' in (out / "public/goals/launch/index.html").read_text()
        notes.write_text("edited by hand\n")
        assert check(demo, out, head=REV_NEW).stale == ["public/goals/launch/notes.txt"]
    assert result.findings == []
    assert "public/robots.txt" in check(demo, out, head=REV_NEW).extra  # made no more
    after = build(demo, out, head=REV_NEW)
    assert after.report is not None and "public/robots.txt" in after.report.removed
    assert after.report.kept == ["public/goals/launch/notes.txt"]  # edited: never deleted
    assert not (out / "public/robots.txt").exists() and notes.exists()


def test_a_new_projection_is_scanned_before_anything_is_written(demo: Path, tmp_path: Path) -> None:
    def leak(ctx: Any) -> str:  # a bug that prints team text into public output
        return "\n".join(str(t.title) for t in ctx.state.todos.values()) + "\n"

    team_titles = Projection(
        "leak", "goal", lambda ctx: None, (Output("leak.txt", lambda ctx, _: leak(ctx)),)
    )
    out = tmp_path / "site"
    with registry.registered(team_titles), pytest.raises(BoundaryViolation) as err:
        build(demo, out, head=REV_NEW)
    paths = {f["path"] for f in err.value.details["findings"]}
    assert paths and all(p.endswith("/leak.txt") and p.startswith("public/") for p in paths)
    assert not out.exists()


def test_a_registered_projection_is_part_of_the_fingerprint(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    before = reuse.fingerprint()
    build(demo, out, head=REV_NEW, reuse=True)
    with registry.registered(NOTES):
        assert reuse.fingerprint() != before
        names = {name for name, _ in reuse.sources(registry.projections())}
        assert "registry/goal/notes" in names and f"extension/{Path(__file__)}" in names
        build(demo, out, head=REV_NEW, reuse=True)  # nothing carried over without its files
        assert (out / "public/goals/launch/notes.txt").is_file()
    assert reuse.fingerprint() == before


def test_a_projection_makes_only_the_files_it_declares(demo: Path, tmp_path: Path) -> None:
    stray = Projection(
        "stray",
        "goal",
        lambda ctx: {"a": "x", "b/c": "y"},
        (Output("stray/*.txt", lambda ctx, items: items),),
    )
    with registry.registered(stray), pytest.raises(ValueError, match="stray"):
        build(demo, tmp_path / "site", head=REV_NEW)
    with registry.registered(NOTES), pytest.raises(ValueError, match="exists"):
        registry.registered(NOTES).__enter__()


def test_every_declared_template_exists_and_every_path_is_distinct() -> None:
    templates = resource_dir("templates")
    seen: set[tuple[str, str]] = set()
    for p in registry.projections():
        for out in p.outputs:
            assert out.template is None or (templates / out.template).is_file(), out.template
            assert (p.scope, out.path) not in seen, out.path
            seen.add((p.scope, out.path))
    assert {"status", "graph", "workbench", "review", "handoffs", "todos", "goal"} <= {
        p.name for p in registry.projections("goal")
    }


def test_the_readme_example_of_a_new_projection_works(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module the README's development section shows, run as it is written, with a
    template beside the shipped ones."""
    import jinja2

    from loopx.render.env import environment

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    section = readme[readme.index("**Adding a projection**") :]
    code = section[section.index("```python\n") + 10 : section.index("\n```\n")]
    module: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), module)
    env = environment()
    page = "{% for g in data.gates %}<li>{{ g.question }}: {{ g.status }}</li>{% endfor %}\n"
    loader = jinja2.ChoiceLoader([jinja2.DictLoader({module["PAGE"]: page}), env.loader])
    monkeypatch.setattr(env, "loader", loader)
    out = tmp_path / "site"
    (decisions,) = module["PROJECTIONS"]
    with registry.registered(decisions):
        build(demo, out, head=REV_NEW)
        assert check(demo, out, head=REV_NEW).ok
    team = (out / "team/goals/launch/decisions.html").read_text()
    assert "<li>" in team and (out / "public/goals/launch/decisions.html").is_file()
    assert 'href="decisions.html"' in (out / "team/goals/launch/index.html").read_text()
