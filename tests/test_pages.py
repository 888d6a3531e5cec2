"""The pages a maintainer links from a README: named by the project configuration, dated
from ledger time, linked to the repository and its commits, attention in plain words ranked
so a held todo does not hide ready work, and todo pages that say who, when and what."""

from __future__ import annotations

import json
import re
from pathlib import Path

import hypothesis
import pytest
from hypothesis import strategies as st

from tests.conftest import run_cli

REV = "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"
CONFIG = """
[site]
title = "Acme & Co status"
description = "What the agents do on Acme"

[repository]
url = "https://github.com/acme/app"
commit_url = "https://git.acme.example/app/-/commit/{commit}"
"""


def ok(*args: str, now: str = "2026-03-01T12:00:00Z") -> dict:
    result = run_cli([*args, "--json"], env={"LOOPX_NOW": now})
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.json()


@pytest.fixture
def built(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    r = ["--root", str(root)]
    ok("init", *r)
    (root / "loopx.toml").write_text(CONFIG)
    ok("goal", "create", *r, "--goal-id", "ship", "--title", "Ship it", "--objective", "o",
       "--visibility", "public")  # fmt: skip
    for todo, title, extra in (
        ("parser", "Write the parser", []),
        ("docs", "Write the docs", ["--depends-on", "parser"]),
        ("bench", "Measure the speed", []),
        ("sign", "Sign the release", ["--role", "user", "--depends-on", "docs"]),
    ):
        ok("todo", "add", *r, "--goal-id", "ship", "--todo-id", todo, "--title", title,
           "--visibility", "public", *extra)  # fmt: skip
    ok("todo", "claim", *r, "--goal-id", "ship", "--todo-id", "parser", "--agent-id", "agent-a")
    ok("evidence", "add", *r, "--goal-id", "ship", "--todo-id", "parser", "--kind", "test",
       "--summary", "parser tests pass", "--visibility", "public", "--revision", REV,
       "--evidence-id", "ev-1", "--agent-id", "agent-a")  # fmt: skip
    ok("todo", "complete", *r, "--goal-id", "ship", "--todo-id", "parser", "--agent-id",
       "agent-a", "--summary", "Parser done, 40 tests", now="2026-03-02T08:30:00Z")  # fmt: skip
    # A team gate holds one todo: docs stays ready work, and the public page must not say
    # "needs user" with nothing shown.
    ok("gate", "open", *r, "--goal-id", "ship", "--question", "Ship the docs?", "--blocks",
       "docs", "--authority", "lead", now="2026-03-03T09:15:00Z")  # fmt: skip
    ok("build", *r, "--out", str(root / "site"), "--head", "none")
    return root / "site"


def test_attention_carries_every_reason_ranked_ready_work_first(built: Path) -> None:
    status = json.loads((built / "public/goals/ship/status.json").read_text())
    reasons = status["attention"]["reasons"]
    assert reasons == [
        {"state": "ready_for_agent", "count": 1},  # bench (docs is held by the gate)
        {"state": "needs_user", "count": 1},  # the pending gate
        {"state": "blocked", "count": 2},  # docs (held) and sign (waits on docs)
    ]
    index = json.loads((built / "public/index.json").read_text())
    assert index["goals"][0]["reasons"] == reasons
    page = (built / "public/index.html").read_text()
    assert '<span class="badge a-ready_for_agent">Moving</span>' in page
    assert "1 ready to work on; 1 waiting for a person's decision or action; " in page
    assert "needs user" not in page and "needs_user<" not in page
    assert status["attention"]["state"] == "ready_for_agent"  # the first reason, everywhere


def test_the_cli_says_the_same_attention_as_status_json(built: Path) -> None:
    """One computation: `loopx status` and `next` state what status.json and the pages do."""
    root = ["--root", str(built.parent), "--goal-id", "ship"]
    status = json.loads((built / "team/goals/ship/status.json").read_text())["attention"]
    cli = ok("status", *root, now="2026-03-03T09:15:00Z")["goals"][0]["attention"]
    assert (cli["state"], cli["reason"], cli["reasons"]) == (
        status["state"],
        status["reason"],
        status["reasons"],
    )
    assert cli["todo_ids"] == ["bench"]
    text = run_cli(["status", *root], env={"LOOPX_NOW": "2026-03-03T09:15:00Z"}).stdout
    assert "  attention: ready_for_agent (work is ready; also 1 needs_user, 2 blocked)\n" in text
    public = json.loads((built / "public/goals/ship/status.json").read_text())["attention"]
    assert public == status


def test_every_page_names_the_project_and_links_the_repository(built: Path) -> None:
    pages = sorted(built.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        html = page.read_text()
        assert re.search(r"<title>[^<]* · Acme &amp; Co status</title>", html), page
        assert '<a class="brand" href="' in html and ">Acme &amp; Co status</a>" in html, page
        assert '<a class="repo" href="https://github.com/acme/app">Repository</a>' in html, page
        assert '<meta name="description" content="What the agents do on Acme">' in html, page
    index = (built / "public/index.html").read_text()
    assert "<h1>Acme &amp; Co status</h1>" in index
    assert '<p class="lede">What the agents do on Acme</p>' in index


def test_last_changed_comes_from_ledger_time(built: Path) -> None:
    stamp = '<time datetime="2026-03-03T09:15:00Z">2026-03-03 09:15 UTC</time>'
    for page in ("public/index.html", "public/goals/ship/index.html", "team/index.html"):
        html = (built / page).read_text()
        assert f"Last changed {stamp}" in html or f"last changed {stamp}" in html, page
    # A todo page dates what it shows: the todo, and the gates and evidence on it.
    docs = (built / "team/goals/ship/todos/docs.html").read_text()
    assert f"Last changed {stamp}" in docs  # the gate on it, opened then
    assert "this todo at revision 3." in docs
    bench = (built / "public/goals/ship/todos/bench.html").read_text()
    opened = '<time datetime="2026-03-01T12:00:00Z">2026-03-01 12:00 UTC</time>'
    assert f"Last changed {opened}" in bench


def test_one_event_rewrites_only_the_pages_of_what_it_touched(built: Path) -> None:
    """A todo page holds no fact of the whole goal (its last change, its revision), so an
    event on one todo changes that todo's page and the goal's own files, not every page."""
    root = built.parent
    before = {p: p.read_bytes() for p in built.rglob("*") if p.is_file()}
    ok("todo", "claim", "--root", str(root), "--goal-id", "ship", "--todo-id", "bench",
       "--agent-id", "agent-b", now="2026-03-04T10:00:00Z")  # fmt: skip
    ok("build", "--root", str(root), "--out", str(built), "--head", "none")
    after = {p: p.read_bytes() for p in built.rglob("*") if p.is_file()}
    changed = {p.relative_to(built).as_posix() for p in after if before.get(p) != after[p]}
    todo_pages = {p for p in changed if "/todos/" in p}
    assert todo_pages == {"public/goals/ship/todos/bench.html", "team/goals/ship/todos/bench.html"}
    assert "public/goals/ship/status.json" in changed


def test_evidence_revisions_link_to_commits_through_the_template(built: Path) -> None:
    link = f'<a href="https://git.acme.example/app/-/commit/{REV}"><code>{REV[:10]}</code></a>'
    assert link in (built / "public/goals/ship/index.html").read_text()
    assert link in (built / "public/goals/ship/todos/parser.html").read_text()


def test_a_todo_page_says_who_when_what_and_names_its_dependencies(built: Path) -> None:
    parser = (built / "public/goals/ship/todos/parser.html").read_text()
    assert "<dt>Done by</dt><dd>an agent</dd>" in parser  # public: no agent names
    assert '<dt>Opened</dt><dd><time datetime="2026-03-01T12:00:00Z">' in parser
    assert '<dt>Finished</dt><dd><time datetime="2026-03-02T08:30:00Z">' in parser
    assert "<h2>Summary</h2><p>Parser done, 40 tests</p>" in parser
    assert '<a href="docs.html">Write the docs</a> <code>docs</code>' in parser  # needed by
    sign = (built / "public/goals/ship/todos/sign.html").read_text()
    assert "<dt>Done by</dt><dd>a person</dd>" in sign
    assert '<li><a href="docs.html">Write the docs</a> <code>docs</code></li>' in sign
    assert '<dt>Part of</dt><dd><a href="../index.html">Ship it</a></dd>' in sign


def test_a_changed_title_renders_the_pages_again_and_builds_are_deterministic(
    built: Path, tmp_path: Path
) -> None:
    root = built.parent
    first = {p: p.read_bytes() for p in built.rglob("*") if p.is_file()}
    ok("build", "--root", str(root), "--out", str(built), "--head", "none")
    assert {p: p.read_bytes() for p in built.rglob("*") if p.is_file()} == first
    (root / "loopx.toml").write_text(CONFIG.replace("Acme &", "Acme and"))
    ok("build", "--root", str(root), "--out", str(built), "--head", "none")  # carries over?
    html = (built / "public/goals/ship/todos/bench.html").read_text()
    assert "Acme and Co status" in html and "Acme &amp; Co" not in html
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["project"]["title"] == "Acme and Co status"


def test_without_a_configuration_the_goal_repository_is_linked(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    r = ["--root", str(root)]
    ok("init", *r)
    ok("goal", "create", *r, "--goal-id", "g", "--title", "G", "--objective", "o",
       "--visibility", "public", "--repository", "https://codeberg.org/o/r")  # fmt: skip
    ok("todo", "add", *r, "--goal-id", "g", "--todo-id", "t", "--title", "T",
       "--visibility", "public")  # fmt: skip
    ok("evidence", "add", *r, "--goal-id", "g", "--todo-id", "t", "--summary", "s", "--kind", "ci",
       "--visibility", "public", "--revision", REV)  # fmt: skip
    ok("build", *r, "--out", str(root / "site"), "--head", "none")
    goal = (root / "site/public/goals/g/index.html").read_text()
    assert '<a class="repo" href="https://codeberg.org/o/r">Repository</a>' in goal
    assert f'href="https://codeberg.org/o/r/commit/{REV}"' in goal
    assert "<title>G · loopx</title>" in goal


def test_the_workbench_page_uses_the_sites_components(built: Path) -> None:
    html = (built / "team/goals/ship/workbench.html").read_text()
    assert "<h1>Workbench: Ship it</h1>" in html
    assert '<span class="badge a-ready_for_agent">Moving</span>' in html
    assert "needs_user" not in html and "Do not edit" not in html  # no banner, no jargon
    assert '<a href="todos/bench.html">Measure the speed</a> <code>bench</code>' in html
    assert '<a href="todos/docs.html"><code>docs</code></a>' in html  # the gate holds docs
    link = f'<a href="https://git.acme.example/app/-/commit/{REV}"><code>{REV[:10]}</code></a>'
    assert link in html
    assert '<a href="workbench.md">The same workbench as Markdown</a>' in html
    public = (built / "public/goals/ship/workbench.html").read_text()
    assert "Ship the docs?" not in public  # the team gate stays out of public pages


def test_evidence_says_its_freshness_in_words_and_the_workbench_its_reasons(
    built: Path,
) -> None:
    page = (built / "public/goals/ship/index.html").read_text()
    # no --head: the build names the commit each item was observed at
    assert '<th scope="col">Evidence</th><th scope="col">Observed at</th>' in page
    words = '<span class="badge f-bound" title="Observed at the commit shown; no checkout was '
    assert words + 'compared">at its commit</span>' in page
    assert ">bound<" not in page
    todo = (built / "public/goals/ship/todos/parser.html").read_text()
    assert ">at its commit</span>" in todo
    html = (built / "team/goals/ship/workbench.html").read_text()
    assert "<p>1 ready to work on; 1 waiting for a person's decision or action; " in html
    assert ">at its commit</span>" in html


def test_a_closed_goal_says_when_and_how_it_closed(built: Path) -> None:
    root = ["--root", str(built.parent)]
    ok("goal", "create", *root, "--goal-id", "old", "--title", "Old", "--objective", "o",
       "--visibility", "public")  # fmt: skip
    ok("todo", "add", *root, "--goal-id", "old", "--todo-id", "t", "--title", "T")  # team
    ok("goal", "close", *root, "--goal-id", "old", "--outcome", "abandoned", "--reason", "moot",
       now="2026-03-04T10:00:00Z")  # fmt: skip
    ok("build", *root, "--out", str(built), "--head", "none")
    page = (built / "public/goals/old/index.html").read_text()
    assert '<p>Closed as abandoned on <time datetime="2026-03-04T10:00:00Z">' in page
    assert "<p>Nothing: the goal is closed.</p>" in page
    assert "<p>Its one todo is not shown to this audience.</p>" in page
    assert "<caption>0 shown" not in page  # no empty table
    index = (built / "public/index.html").read_text()
    assert "<p>The goal is closed.</p>" in index


def test_a_todo_page_looks_its_fields_up_as_items(built: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The todo page (one per todo: thousands in a build) reads its dictionaries with
    `d["key"]`: Jinja2's `d.key` first asks the dict for an attribute, which costs an
    exception per field (a sixth of the page's render time)."""
    from loopx.build.outputs import todo_pages
    from loopx.build.pipeline import make_site
    from loopx.render.env import environment

    env = environment()
    template = env.get_template("html/todo.html")
    inputs: list[dict] = []
    made = todo_pages.PAGES.render
    monkeypatch.setattr(todo_pages.PAGES, "render", lambda e, k: (inputs.append(k), made(e, k))[1])
    make_site(built.parent, ("public", "team"), None)
    render = template.render
    assert len(inputs) >= 8
    asked: list[tuple[object, str]] = []
    lookup = env.getattr
    monkeypatch.setattr(
        env, "getattr", lambda obj, name: (asked.append((obj, name)), lookup(obj, name))[1]
    )
    pages = [render(**k) for k in inputs]
    # (a dict's own methods, as `FRESHNESS.get` in parts.html, are attributes)
    assert not [n for o, n in asked if isinstance(o, dict) and not hasattr(dict, n)]
    assert any("Parser done, 40 tests" in p for p in pages)


def test_pages_take_the_shared_components_without_an_import_each(built: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`parts` (html/parts.html) is one module made once for the environment: a page that
    imported it would look for new globals on every render (Jinja2's `_get_default_module`,
    ~25 us a page, thousands of pages a build). The pages still use its components."""
    import jinja2

    from loopx.build.pipeline import make_site

    imported: list[str] = []
    made = jinja2.Template._get_default_module

    def counted(self, ctx=None):  # type: ignore[no-untyped-def]
        imported.append(self.name)
        return made(self, ctx)

    monkeypatch.setattr(jinja2.Template, "_get_default_module", counted)
    site, _ = make_site(built.parent, ("public", "team"), None)
    assert imported == []
    page = site.artifacts["public/goals/ship/todos/parser.html"].data.decode()
    assert '<time datetime="2026-03-02T08:30:00Z">2026-03-02 08:30 UTC</time>' in page


def test_todo_pages_are_the_whole_template_with_the_base_page_rendered_once_a_goal(
    built: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A todo page is its goal's frame (the base page, the repository link: rendered once
    per goal and audience, not once per todo, and the first page once more whole) with its
    own blocks in it, byte for byte what rendering `todo.html` whole gives, for every
    audience."""
    from loopx.build.outputs import todo_pages
    from loopx.build.pipeline import make_site
    from loopx.render.env import environment

    env = environment()
    base = env.get_template("html/base.html")
    bases: list[str] = []
    root = base.root_render_func

    def counted(ctx):  # type: ignore[no-untyped-def]
        bases.append(ctx.name)
        return root(ctx)

    monkeypatch.setattr(base, "root_render_func", counted)
    inputs: list[dict] = []
    made = todo_pages.PAGES.render
    monkeypatch.setattr(todo_pages.PAGES, "render", lambda e, k: (inputs.append(k), made(e, k))[1])
    site, _ = make_site(built.parent, ("public", "team", "private"), None)
    pages = {(k["audience"], k["t"]["todo_id"]): k for k in inputs}
    # Per goal and audience (three here): the frame, and the first page whole, held to it.
    assert len(pages) == len(inputs) >= 12 and bases.count("html/todo.html") == 6
    bases.clear()
    for (audience, todo), given in pages.items():
        page = site.artifacts[f"{audience}/goals/ship/todos/{todo}.html"].data.decode()
        assert page == env.get_template("html/todo.html").render(**given)
    assert bases.count("html/todo.html") == len(pages)


def test_the_todo_pages_read_each_title_through_the_lens_once(built: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A todo's title is read through the audience's lens (for the public, a scan of the
    text) once, for its card; the pages that link to it take the card's."""
    from loopx.build.outputs import todo_pages
    from loopx.build.pipeline import gather
    from loopx.build.registry import GoalContext
    from loopx.model.config import ProjectConfig
    from loopx.privacy.audience import Lens
    from loopx.store.filestore import FileStore

    (state,) = gather(FileStore(built.parent)).values()
    ctx = GoalContext(
        audience="public", head=None, project=ProjectConfig(), state=state, visible_goals={"ship"}
    )
    read: list[object] = []
    text = Lens.text
    monkeypatch.setattr(Lens, "text", lambda self, v: (read.append(v), text(self, v))[1])
    data = todo_pages._project(ctx)
    titles = sorted(t.title for t in state.todos.values())
    assert sorted(v for v in read if v in titles) == titles
    assert data["titles"]["docs"] == data["pages"]["docs"]["t"]["title"] == "Write the docs"


def test_todo_pages_write_dates_as_the_shared_component_does(built: Path) -> None:
    """todo.html writes out the dates every page shows (a macro call costs a page as much as
    a dozen fields): each is what `parts.when` makes of the same time."""
    from loopx.render.env import environment

    when = environment().globals["parts"].when
    pages = list(built.glob("*/goals/*/todos/*.html"))
    times = [
        m for p in pages for m in re.finditer(r'<time datetime="([^"]*)">.*?</time>', p.read_text())
    ]
    assert len(pages) >= 8 and len(times) >= 2 * len(pages)
    assert all(m.group(0) == str(when(m.group(1))) for m in times)
    assert str(when(None)) == "–"  # the page's own fallback for a missing date


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    st.one_of(st.text(), st.sampled_from(["2026-03-01T12:00:00Z", "2026-03-01T1\"<&>'x"]))
)
def test_a_date_is_escaped_as_markup_formatting_escapes_it(value: str) -> None:
    """The `time` filter writes its element as `Markup.format` would, every text escaped."""
    from markupsafe import Markup

    from loopx.render.env import _time, _when

    class Shown:  # an object that says how it reads in HTML
        def __html__(self) -> str:
            return value

    for given_value in (value, Markup(value), Shown()):
        expected = (
            Markup('<time datetime="{}">{}</time>').format(given_value, _when(given_value))
            if given_value
            else Markup("–")
        )
        assert _time(given_value) == expected and type(_time(given_value)) is Markup
