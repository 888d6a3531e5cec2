"""`review.html` shows what `review.md` shows once rendered.

The page is made from the review packet by its own template (a build runs no Markdown
renderer), so it is held to the Markdown: for goals written with hostile and generated text in
every field, the page's article and markdown-it's rendering of the Markdown (the parser the
round-trip tests trust) must be the same elements with the same text, attributes and nesting.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build.single import _context
from loopx.engine.core import require_goal
from loopx.projections.review import review_packet
from loopx.state.fold import replay
from tests.conftest import run_cli
from tests.markdown_oracle import BUILD
from tests.test_markdown_roundtrip import IDS, TEXT, Corpus, _write
from tests.test_md_escape import HOSTILE

Event = tuple[str, ...]


class _Elements(HTMLParser):
    """An HTML fragment as (start, tag, attributes) / (end, tag) / (text, data) events, the
    text unescaped and joined."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[Event] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, repr(sorted(attrs))))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, repr(sorted(attrs))))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_data(self, data: str) -> None:
        if self.events and self.events[-1][0] == "text":
            data = self.events.pop()[1] + data
        self.events.append(("text", data))


def elements(html: str) -> list[Event]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    kept, inside = [], 0
    for event in parser.events:  # whitespace-only text is layout, except in a <pre>
        if event[:2] == ("start", "pre"):
            inside += 1
        elif event[:2] == ("end", "pre"):
            inside -= 1
        if event[0] != "text" or event[1].strip() or inside:
            kept.append(event)
    return kept


def article(page: str) -> str:
    start = page.index('<article class="markdown">') + len('<article class="markdown">')
    return page[start : page.index("</article>", start)]


def _pages(corpus: Corpus) -> list[tuple[str, str]]:
    """(review.md, review.html) of the goal, and of its todo with what changed since the
    first event: every section of the template has something to show."""
    written = _write(corpus)
    state = require_goal(written.store, "demo")
    before = replay(written.store.read("demo").events[:1])
    out = []
    for todo_id, since in ((None, None), (IDS["todo"], before)):
        ctx = _context(state, "team", None, {"demo"}, None)
        ctx.projected["review"] = review_packet(
            state, ctx.lens(), head=None, visible_goals={"demo"}, todo_id=todo_id, since=since
        )
        out.append((ctx.text("review", "review.md"), ctx.text("review", "review.html")))
    return out


def _odd_names(written_store: object) -> None:
    """Evidence of a kind, and a gate for an authority, that Markdown would read as emphasis
    if written raw (both are valid: `[a-z][a-z0-9_-]*`, an id)."""
    from loopx.engine import evidence, gates
    from loopx.engine.clock import FixedClock
    from loopx.engine.commands import AddEvidence, OpenGate
    from loopx.engine.core import Context

    ctx = Context(
        written_store, FixedClock("2026-03-02T12:00:00Z", 60), agent_id="m", session_id="s"
    )
    evidence.add_evidence(
        ctx, AddEvidence(goal_id="demo", kind="a-_b_", summary="odd kind", visibility="team")
    )
    gates.open_gate(
        ctx, OpenGate(goal_id="demo", gate_id="g_2", authority="x-_lead_", question="Odd?")
    )


def test_kinds_and_authorities_show_as_in_the_markdown() -> None:
    written = _write(Corpus(prose=["Plain words"], paths=["src/a.py"], refs=["https://x.example"]))
    _odd_names(written.store)
    state = require_goal(written.store, "demo")
    ctx = _context(state, "team", None, {"demo"}, None)
    markdown, page = ctx.text("review", "review.md"), ctx.text("review", "review.html")
    _same(markdown, page)
    shown = elements(article(page))
    assert ("text", "a-_b_") in shown and ("text", " (pending, for x-_lead_)") in shown


def _same(markdown: str, page: str) -> None:
    want = elements(BUILD.render(markdown))
    got = elements(article(page))
    assert got == want


def test_the_page_shows_every_section_the_markdown_shows() -> None:
    corpus = Corpus(prose=["Plain words"], paths=["src/a.py"], refs=["https://x.example/a"])
    (goal_md, goal_page), (todo_md, todo_page) = _pages(corpus)
    for markdown, page in ((goal_md, goal_page), (todo_md, todo_page)):
        _same(markdown, page)
    shown = elements(article(todo_page))
    assert ("text", "The todo") in shown and ("start", "table", "[]") in shown
    assert ("start", "code", "[('class', 'language-sh')]") in shown  # a gate's commands
    assert ("text", " opened: Plain words") in shown  # what changed since revision 1
    assert "No base revision given" in goal_page and "--since" in goal_page


def test_hostile_text_shows_as_in_the_markdown() -> None:
    corpus = Corpus(prose=HOSTILE, paths=["src/a_b.py"], refs=["https://x.example/a_b"])
    for markdown, page in _pages(corpus):
        _same(markdown, page)
        assert "<script>" not in page


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, min_size=3, max_size=8))
def test_generated_text_shows_as_in_the_markdown(prose: list[str]) -> None:
    corpus = Corpus(prose=prose, paths=["src/a.py"], refs=["https://x.example/a"])
    for markdown, page in _pages(corpus):
        _same(markdown, page)


def test_a_build_writes_the_page_beside_its_markdown(tmp_path: Path) -> None:
    root = tmp_path / "project"
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    goal = ["--root", str(root), "--goal-id", "demo"]
    made = run_cli(
        ["goal", "create", *goal, "--title", "Ship *it* <now> | today", "--objective", "It ships."]
    )
    assert made.exit_code == 0, made.stderr
    built = run_cli(["build", "--root", str(root), "--out", str(tmp_path / "site")])
    assert built.exit_code == 0, built.stderr
    folder = tmp_path / "site" / "team" / "goals" / "demo"
    page = (folder / "review.html").read_text()
    _same((folder / "review.md").read_text(), page)
    assert "<title>Review packet · Ship *it* &lt;now&gt; | today · " in page
    assert '<a href="review.md">Markdown source</a>' in page
