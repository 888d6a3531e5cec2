"""Zero blocked builds and zero alterations on 1,000+ realistic public strings (issue 13)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from benign_corpus import COMMON_WORD_IDS, ISSUE_CASES, ISSUE_IDS, OVERLAPS, corpus

from loopx.build.pipeline import build
from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import AddEvidence, AddTodo, CancelTodo, CloseGoal, CreateGoal, OpenGate
from loopx.privacy.redact import redact
from loopx.privacy.scanner import Scanner
from loopx.store import fsio
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx

CORPUS = corpus()
SCANNER = Scanner(machine=False)


def test_corpus_is_large_and_holds_the_issue_cases() -> None:
    assert len(CORPUS) >= 1000
    assert len(set(CORPUS)) == len(CORPUS)
    assert set(ISSUE_CASES) <= set(CORPUS)
    assert {public for _, public in OVERLAPS} <= set(CORPUS)


@pytest.mark.parametrize("form", ["plain", "html", "json"])
def test_every_string_passes_untouched(form: str) -> None:
    encode = {"plain": str, "html": html.escape, "json": json.dumps}[form]
    altered = [s for s in CORPUS if redact(encode(s)) != (encode(s), {})]
    found = [s for s in CORPUS if SCANNER.scan_text(encode(s))]
    assert altered == [] and found == []


class _NoSync(fsio.FileSystem):
    """Setting up 1,000+ todos through the engine: durability is not what is tested here."""

    def fsync(self, fd: int) -> None:
        pass


@pytest.fixture
def no_sync(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("loopx.engine.core.snapshot_due", lambda behind, revision: behind >= 64)
    previous = fsio.install(_NoSync())
    yield
    fsio.install(previous)


@pytest.mark.usefixtures("no_sync")
def test_corpus_builds_unblocked_and_unaltered(tmp_path: Path) -> None:
    """Every string as a public todo title, some as public gate questions and evidence
    summaries, beside team todos that overlap them and private todos named by common words;
    one goal closed. The public build passes and shows every string as it was written."""
    root = tmp_path / "p"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    chunks = [CORPUS[i : i + 400] for i in range(0, len(CORPUS), 400)]
    expected: dict[str, dict[str, str]] = {}
    for n, chunk in enumerate(chunks):
        goal = f"corpus-{n}"
        goals.create_goal(
            ctx,
            CreateGoal(goal_id=goal, title=f"Corpus {n}", objective="Ship", visibility="public"),
        )
        titles = expected.setdefault(goal, {})
        for i, text in enumerate(chunk):
            todos.add_todo(
                ctx, AddTodo(goal_id=goal, title=text, todo_id=f"c{i}", visibility="public")
            )
            titles[f"c{i}"] = text
    goal = "corpus-0"
    for todo_id, title in ISSUE_IDS:
        todos.add_todo(
            ctx, AddTodo(goal_id=goal, title=title, todo_id=todo_id, visibility="public")
        )
        expected[goal][todo_id] = title
    for team, _ in OVERLAPS:
        todos.add_todo(ctx, AddTodo(goal_id=goal, title=team, visibility="team"))
    for word in COMMON_WORD_IDS:
        todos.add_todo(
            ctx,
            AddTodo(
                goal_id=goal, title=f"Internal {word} work", todo_id=word, visibility="private"
            ),
        )
    for text in ISSUE_CASES:
        gates.open_gate(
            ctx, OpenGate(goal_id=goal, question=text, authority="maintainer", visibility="public")
        )
        evidence.add_evidence(
            ctx, AddEvidence(goal_id=goal, kind="note", summary=text, visibility="public")
        )
    last = f"corpus-{len(chunks) - 1}"
    for todo_id in expected[last]:
        todos.cancel_todo(ctx, CancelTodo(goal_id=last, todo_id=todo_id))
    goals.close_goal(ctx, CloseGoal(goal_id=last, outcome="abandoned"))

    out = tmp_path / "site"
    build(root, out, audiences=("public",), head=None)  # raises BoundaryViolation if blocked

    for goal_id, titles in expected.items():
        status = json.loads((out / f"public/goals/{goal_id}/status.json").read_text())
        shown = {t["todo_id"]: t["title"] for t in status["todos"]}
        assert shown == titles
        assert status["omissions"]["redacted"] == {}
    status = json.loads((out / "public/goals/corpus-0/status.json").read_text())
    assert [g["question"] for g in status["gates"]["items"]] == ISSUE_CASES
    summaries = {e["summary"] for e in status["evidence"]}
    assert summaries and summaries <= set(ISSUE_CASES)
    graph = (out / "public/goals/corpus-0/graph.html").read_text()
    assert (
        html.escape("api_key = settings.api_key") in graph or "api_key = settings.api_key" in graph
    )
