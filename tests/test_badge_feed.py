"""README badges (SVG + shields.io endpoint JSON) and Atom feeds of public status changes:
valid (jsonschema; feedparser), deterministic, stable entry ids, scanned like every public
byte, and only what the audience may see."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import feedparser
import pytest

from loopx.build.boundary import Forbidden, scan_public
from loopx.build.pipeline import make_site
from loopx.build.validate import problems
from tests.conftest import run_cli

T = "2026-04-01T10:00:00Z"


def ok(*args: str, now: str = T) -> dict:
    result = run_cli([*args, "--json"], env={"LOOPX_NOW": now})
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.json()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    r = ["--root", str(root)]
    ok("init", *r)
    (root / "loopx.toml").write_text(
        '[site]\ntitle = "Acme"\nbase_url = "https://acme.example.org/status/"\n'
    )
    ok("goal", "create", *r, "--goal-id", "ship", "--title", "Ship it", "--objective", "o",
       "--visibility", "public")  # fmt: skip
    for todo, vis in (("parser", "public"), ("secret-plan", "team"), ("docs", "public")):
        ok("todo", "add", *r, "--goal-id", "ship", "--todo-id", todo, "--title", f"Do {todo}",
           "--visibility", vis)  # fmt: skip
    ok("todo", "complete", *r, "--goal-id", "ship", "--todo-id", "parser", "--summary",
       "Parser landed", now="2026-04-02T09:00:00Z")  # fmt: skip
    ok("todo", "complete", *r, "--goal-id", "ship", "--todo-id", "secret-plan",
       now="2026-04-02T10:00:00Z")  # fmt: skip
    ok("gate", "open", *r, "--goal-id", "ship", "--gate-id", "go", "--question", "Go live?",
       "--authority", "lead", "--visibility", "public", now="2026-04-03T08:00:00Z")  # fmt: skip
    ok("gate", "resolve", *r, "--goal-id", "ship", "--gate-id", "go", "--agent-id", "lead",
       "--resolution", "approve",
       "--rationale", "yes", now="2026-04-03T09:00:00Z")  # fmt: skip
    return root


def build(root: Path) -> Path:
    ok("build", "--root", str(root), "--out", str(root / "site"), "--validate", "--head", "none")
    return root / "site"


def test_badges_are_valid_deterministic_and_say_the_state(root: Path) -> None:
    site = build(root)
    goal = json.loads((site / "public/goals/ship/badge.json").read_text())
    assert goal == {
        "schemaVersion": 1,
        "label": "ship",
        "message": "moving · 2/3 done",  # docs is ready; the done team todo counts, unnamed
        "color": "3259a8",
    }
    project = json.loads((site / "public/badge.json").read_text())
    assert project == {
        "schemaVersion": 1,
        "label": "Acme",
        "message": "1 active",
        "color": "3259a8",
    }
    for doc in (goal, project):
        assert problems("shields.endpoint/v1", doc) == []
    svg = ET.fromstring((site / "public/goals/ship/badge.svg").read_bytes())
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.tag == f"{ns}svg" and svg.get("aria-label") == "ship: moving · 2/3 done"
    assert svg.find(f"{ns}title").text == "ship: moving · 2/3 done"  # type: ignore[union-attr]
    manifest = json.loads((site / "manifest.json").read_text())
    assert manifest["files"]["public/badge.json"]["schema"] == "shields.endpoint/v1"
    assert "public/goals/ship/badge.svg" in manifest["files"]
    first = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    build(root)
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == first
    page = (site / "public/goals/ship/index.html").read_text()
    assert (
        "[![ship status](https://acme.example.org/status/goals/ship/badge.svg)]"
        "(https://acme.example.org/status/goals/ship/index.html)" in page
    )
    ok("todo", "complete", "--root", str(root), "--goal-id", "ship", "--todo-id", "docs")
    ok("goal", "close", "--root", str(root), "--goal-id", "ship", "--outcome", "achieved",
       "--reason", "done", now="2026-04-04T08:00:00Z")  # fmt: skip
    build(root)
    closed = json.loads((site / "public/goals/ship/badge.json").read_text())
    assert (closed["message"], closed["color"]) == ("achieved", "1e7a3c")


def feed(path: Path) -> feedparser.FeedParserDict:
    parsed = feedparser.parse(path.read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    return parsed


def entry_seqs(parsed: feedparser.FeedParserDict, goal: str = "ship") -> list[int]:
    """The ledger seq each entry was made from (`urn:loopx:<goal>:<seq>:<16 hex>`)."""
    seqs = []
    for e in parsed.entries:
        urn, loopx, g, seq, line_sum = e.id.split(":")
        assert (urn, loopx, g, len(line_sum)) == ("urn", "loopx", goal, 16)
        int(line_sum, 16)
        seqs.append(int(seq))
    return seqs


def seq_of(root: Path, event_type: str, n: int = 0, goal: str = "ship") -> int:
    """The seq of the `n`th event of `event_type` in the goal's ledger."""
    lines = (root / ".loopx/goals" / goal / "ledger.jsonl").read_text().splitlines()
    return [e["seq"] for e in map(json.loads, lines) if e["type"] == event_type][n]


def test_the_feed_is_valid_atom_with_public_changes_only(root: Path) -> None:
    site = build(root)
    parsed = feed(site / "public/feed.xml")
    assert parsed.feed.title == "Acme"
    # newest first; the team todo's completion is not there
    assert entry_seqs(parsed) == [seq_of(root, "gate.resolved"), seq_of(root, "todo.completed")]
    assert [e.updated for e in parsed.entries] == ["2026-04-03T09:00:00Z", "2026-04-02T09:00:00Z"]
    assert parsed.entries[0].title == "Ship it: decision approved: Go live?"
    assert parsed.entries[1].summary == "Parser landed"
    assert parsed.entries[1].link == "https://acme.example.org/status/goals/ship/todos/parser.html"
    assert parsed.feed.updated == "2026-04-03T09:00:00Z"
    # the team todo's completion is counted, never listed (the omission note)
    assert parsed.feed.subtitle == "1 change to items this audience does not see is not listed."
    assert b"secret-plan" not in (site / "public/feed.xml").read_bytes()
    team = feed(site / "team/feed.xml")
    assert len(team.entries) == 3
    assert "subtitle" not in team.feed  # nothing left out for the team
    assert team.entries[0].link == "goals/ship/index.html"  # no base_url outside public
    goal = feed(site / "public/goals/ship/feed.xml")
    assert [e.id for e in goal.entries] == [e.id for e in parsed.entries]
    assert goal.entries[1].link == "https://acme.example.org/status/goals/ship/todos/parser.html"
    # the same event is the same entry in every audience's feed
    assert {e.id for e in parsed.entries} < {e.id for e in team.entries}


def test_done_reopened_and_done_again_is_three_entries_with_stable_ids(root: Path) -> None:
    site = build(root)
    before = [e.id for e in feed(site / "public/feed.xml").entries]
    r = ("--root", str(root), "--goal-id", "ship")
    ok("todo", "add", *r, "--todo-id", "later", "--title", "Later", "--visibility", "public")
    build(root)  # the CLI carries unchanged goals over (build memo): this one changed
    assert [e.id for e in feed(site / "public/feed.xml").entries] == before
    ok("todo", "reopen", *r, "--todo-id", "parser", "--reason", "regression",
       now="2026-04-05T08:00:00Z")  # fmt: skip
    build(root)
    reopened = feed(site / "public/goals/ship/feed.xml")
    assert [e.id for e in reopened.entries][1:] == before
    assert reopened.entries[0].title == "Ship it: reopened: Do parser"
    assert reopened.entries[0].updated == "2026-04-05T08:00:00Z"
    ok("todo", "complete", *r, "--todo-id", "parser", "--summary", "Parser fixed",
       now="2026-04-05T09:00:00Z")  # fmt: skip
    build(root)
    for path in ("public/feed.xml", "public/goals/ship/feed.xml"):
        parsed = feed(site / path)
        assert [e.id for e in parsed.entries][2:] == before  # the first completion stays
        assert entry_seqs(parsed)[:2] == [
            seq_of(root, "todo.completed", 2),  # the third completion: parser again
            seq_of(root, "todo.reopened"),
        ]
        assert [e.title for e in parsed.entries] == [
            "Ship it: done: Do parser",
            "Ship it: reopened: Do parser",
            "Ship it: decision approved: Go live?",
            "Ship it: done: Do parser",
        ]
        # the fold keeps the latest completion's summary: the first one says only "Done."
        assert [e.summary for e in parsed.entries][::3] == ["Parser fixed", "Done."]
        assert parsed.feed.updated == "2026-04-05T09:00:00Z"


def test_the_feed_keeps_hidden_and_redacted_text_out(root: Path) -> None:
    r = ("--root", str(root), "--goal-id", "ship")
    ok("gate", "open", *r, "--gate-id", "budget", "--question", "Spend the budget?",
       "--authority", "lead", "--visibility", "team")  # fmt: skip
    ok("gate", "resolve", *r, "--gate-id", "budget", "--agent-id", "lead",
       "--resolution", "reject", "--rationale", "no", now="2026-04-06T08:00:00Z")  # fmt: skip
    ok("redact", "field", *r, "--entity", "todo", "--entity-id", "parser", "--field",
       "summary", "--reason", "leaked a host name", "--agent-id", "lead")  # fmt: skip
    site = build(root)
    public = (site / "public/feed.xml").read_bytes()
    assert b"Spend the budget" not in public and b"Parser landed" not in public
    parsed = feed(site / "public/feed.xml")
    assert len(parsed.entries) == 2 and parsed.entries[1].summary == "[redacted]"
    team = feed(site / "team/feed.xml")
    assert team.entries[0].title == "Ship it: decision rejected: Spend the budget?"
    assert b"Parser landed" not in (site / "team/feed.xml").read_bytes()


def test_a_long_history_keeps_the_newest_entries_and_says_how_many_are_left_out(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopx.projections import feed as feed_mod

    monkeypatch.setattr(feed_mod, "FEED_LIMIT", 1)
    site, _ = make_site(root, ("public", "team"), None)
    hidden = " 1 change to items this audience does not see is not listed."
    for path, left_out, unseen in (("public/feed.xml", 1, hidden), ("team/feed.xml", 2, "")):
        parsed = feedparser.parse(site.artifacts[path].data)
        assert not parsed.bozo and len(parsed.entries) == 1
        assert parsed.entries[0].title == "Ship it: decision approved: Go live?"
        older = "1 older one is" if left_out == 1 else f"{left_out} older ones are"
        assert parsed.feed.subtitle == f"The most recent change; {older} left out.{unseen}"


def test_badges_and_feeds_are_scanned_like_every_public_byte(root: Path) -> None:
    (root / "loopx.toml").write_text('[site]\ntitle = "Acme canary 7f3a"\n')
    site, _ = make_site(root, ("public",), None)
    findings = scan_public(site, Forbidden(frozenset({"Acme canary 7f3a"}), frozenset()))
    found = {f["path"] for f in findings}
    for path in ("public/badge.svg", "public/badge.json", "public/feed.xml"):
        assert path in found, sorted(found)
    assert "public/goals/ship/feed.xml" in found


def test_the_search_index_lists_what_the_audience_sees(root: Path) -> None:
    r = ("--root", str(root), "--goal-id", "ship")
    ok("todo", "add", *r, "--todo-id", "tag", "--title", "Fix </script><b>&", "--visibility",
       "public")  # fmt: skip
    site = build(root)
    public = json.loads((site / "public/goals/ship/search.json").read_text())
    assert problems("loopx.search/v1", public) == []
    hrefs = [i["href"] for i in public["items"]]
    assert hrefs == [
        "goals/ship/index.html",
        "goals/ship/todos/parser.html",
        "goals/ship/todos/docs.html",
        "goals/ship/todos/tag.html",
    ]  # the team todo is not there
    team = json.loads((site / "team/goals/ship/search.json").read_text())
    assert "goals/ship/todos/secret-plan.html" in [i["href"] for i in team["items"]]
    script = (site / "public/goals/ship/search-index.js").read_text()
    start = "(window.loopxSearch = window.loopxSearch || []).push("
    assert script.startswith(start + "{") and script.endswith("});\n")
    assert "</script>" not in script and "\\u003c/script\\u003e\\u003cb\\u003e\\u0026" in script
    assert json.loads(script[len(start) : -3]) == public
    assert not (site / "public/search.json").exists()  # no index of the whole site
    index = (site / "public/index.html").read_text()
    assert '<div id="search" class="search" role="search" hidden>' in index
    piece = '<script src="goals/ship/search-index.js" defer></script>\n'
    loads = piece + '<script src="search.js" defer>'
    assert loads in index  # the pieces first: deferred scripts run in order


def test_the_index_page_loads_the_pieces_of_the_first_goals_within_the_limit(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each goal's piece holds at most ITEM_LIMIT items (the rest counted), and the index
    page loads the first goals' pieces while they hold at most ITEM_LIMIT between them."""
    from loopx.projections import search

    r = ("--root", str(root))
    for goal in ("alpha", "zulu"):
        ok("goal", "create", *r, "--goal-id", goal, "--title", goal, "--objective", "o",
           "--visibility", "public")  # fmt: skip
    ok("todo", "add", *r, "--goal-id", "alpha", "--todo-id", "one", "--title", "One",
       "--visibility", "public")  # fmt: skip

    def built(limit: int) -> tuple[list[str], dict[str, Any]]:
        """The goals the index page loads and the ship goal's piece, at `limit`."""
        monkeypatch.setattr(search, "ITEM_LIMIT", limit)
        site, _ = make_site(root, ("public",), None, validate=True)
        index = site.artifacts["public/index.html"].data.decode()
        loaded = [g for g in ("alpha", "ship", "zulu") if f"goals/{g}/search-index.js" in index]
        return loaded, json.loads(site.artifacts["public/goals/ship/search.json"].data)

    loaded, piece = built(3)
    assert loaded == ["alpha"]  # alpha holds 2 items, ship 3 (its team todo not counted)
    assert len(piece["items"]) == 3 and piece["truncated"] == 0
    loaded, piece = built(2)
    assert loaded == ["alpha"]
    assert len(piece["items"]) == 2 and piece["truncated"] == 1
    loaded, _ = built(6)
    assert loaded == ["alpha", "ship", "zulu"]


def test_the_demo_readme_shows_badges_that_its_build_writes(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    assert run_cli(["demo", str(demo)]).exit_code == 0
    readme = (demo / "README.md").read_text("utf-8")
    assert run_cli(["build", "--root", str(demo), "--out", str(demo / "site")]).exit_code == 0
    badges = [line for line in readme.splitlines() if line.startswith("[![")]
    assert len(badges) == 2
    for line in badges:
        image, page = line.split("](", 1)[1].split(")", 1)[0], line.rsplit("(", 1)[1][:-1]
        assert (demo / image).is_file() and (demo / image).read_bytes().startswith(b"<svg")
        assert (demo / page).is_file()
    # A second run and a user's own files: nothing of theirs is replaced.
    (demo / "README.md").write_text("# my notes\n")
    (demo / "loopx.toml").unlink()
    (demo / "loopx.toml").symlink_to(tmp_path / "elsewhere.toml")
    assert run_cli(["demo", str(demo)]).exit_code == 0
    assert (demo / "README.md").read_text() == "# my notes\n"
    assert (demo / "loopx.toml").is_symlink() and not (tmp_path / "elsewhere.toml").exists()


def test_a_feed_without_changes_is_dated_from_when_its_goal_began(root: Path) -> None:
    ok("goal", "create", "--root", str(root), "--goal-id", "quiet", "--title", "Quiet",
       "--objective", "o", "--visibility", "public", now="2026-04-07T07:00:00Z")  # fmt: skip
    site = build(root)
    quiet = feed(site / "public/goals/quiet/feed.xml")
    assert quiet.entries == [] and quiet.feed.updated == "2026-04-07T07:00:00Z"
    # the project's feed: its newest entry (here the approved gate)
    assert feed(site / "public/feed.xml").feed.updated == "2026-04-03T09:00:00Z"
