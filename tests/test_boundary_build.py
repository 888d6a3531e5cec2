"""The public boundary, end to end: canaries planted in every text field, at every visibility,
in every encoding, never reach a byte of the public build; public-marked fields are redacted;
and for random states no non-public string reaches the public partition."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build.pipeline import build
from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import (
    AddEvidence,
    AddNote,
    AddTodo,
    BlockTodo,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    RecordRun,
    ResolveGate,
    UnblockTodo,
)
from loopx.engine.core import Context
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx
from tests.privacy.privacy_canaries import all_canaries

CANARIES = all_canaries()
ENCODINGS = {
    "plain": lambda s: s,
    "json": lambda s: json.dumps(s)[1:-1],
    "html": html.escape,
    "url": lambda s: quote(s, safe=""),
}
VISIBILITIES = ("public", "team", "private")


def _long_texts(encoding: str) -> list[str]:
    """All canaries in one encoding, in texts that fit the 20,000-character limit."""
    encode = ENCODINGS[encoding]
    parts = [f"[{i}] {encode(c.text)}" for i, c in enumerate(CANARIES)]
    half = len(parts) // 2
    return ["\n".join(parts[:half]), "\n".join(parts[half:])]


def _plant(ctx: Context, goal: str, tag: str) -> None:
    """Every long text field of every kind of entity, at every visibility, in every encoding."""
    n = 0
    for vis in VISIBILITIES:
        for encoding in ENCODINGS:
            for text in _long_texts(encoding):
                n += 1
                tid = f"{tag}-t{n}"
                todos.add_todo(
                    ctx,
                    AddTodo(
                        goal_id=goal,
                        title=f"Carrier {n}",
                        todo_id=tid,
                        visibility=vis,
                        acceptance=text,
                    ),
                )
                todos.block_todo(ctx, BlockTodo(goal_id=goal, todo_id=tid, reason=text))
                todos.unblock_todo(ctx, UnblockTodo(goal_id=goal, todo_id=tid))
                ev = evidence.add_evidence(
                    ctx,
                    AddEvidence(
                        goal_id=goal,
                        kind="log",
                        summary=f"Log {n}",
                        refs=[text[:2000]],
                        body=text.encode(),
                        todo_id=tid,
                        visibility=vis,
                        evidence_id=f"{tag}-e{n}",
                    ),
                ).receipt["subject"]
                todos.complete_todo(
                    ctx, CompleteTodo(goal_id=goal, todo_id=tid, summary=text, evidence_ids=[ev])
                )
                gid = f"{tag}-g{n}"
                gates.open_gate(
                    ctx,
                    OpenGate(
                        goal_id=goal,
                        question=f"Decide {n}?",
                        authority="maintainer",
                        gate_id=gid,
                        visibility=vis,
                        blocks=[tid],
                    ),
                )
                gates.resolve_gate(
                    ctx,
                    ResolveGate(goal_id=goal, gate_id=gid, resolution="approve", rationale=text),
                )
                goals.add_note(ctx, AddNote(goal_id=goal, kind="lesson", text=text, visibility=vis))
                evidence.record_run(
                    ctx,
                    RecordRun(
                        goal_id=goal,
                        outcome="waiting",
                        summary=text,
                        wait=text,
                        todo_id=tid,
                        visibility=vis,
                    ),
                )


def _plant_titles(ctx: Context, goal: str) -> None:
    """Every canary (plain) in every short text field, at every visibility."""
    for vis in VISIBILITIES:
        for i, canary in enumerate(CANARIES):
            text = f"Item {i}: {canary.text}"
            tid = f"title-{vis}-{i}"
            todos.add_todo(ctx, AddTodo(goal_id=goal, title=text, todo_id=tid, visibility=vis))
            gates.open_gate(
                ctx,
                OpenGate(
                    goal_id=goal,
                    question=text,
                    authority="maintainer",
                    gate_id=f"q-{vis}-{i}",
                    visibility=vis,
                    blocks=[tid],
                ),
            )
            evidence.add_evidence(
                ctx,
                AddEvidence(
                    goal_id=goal,
                    kind="note",
                    summary=text,
                    todo_id=tid,
                    visibility=vis,
                    evidence_id=f"s-{vis}-{i}",
                ),
            )


def _forms(secret: str) -> set[str]:
    return {
        secret,
        json.dumps(secret)[1:-1],
        html.escape(secret),
        quote(secret, safe=""),
        quote(secret, safe="/"),
    }


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("canaries") / "proj"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer", step=1)
    objective = _long_texts("plain")[0]
    for vis in VISIBILITIES:
        goals.create_goal(
            ctx,
            CreateGoal(
                goal_id=f"{vis}-goal",
                title=f"Goal {CANARIES[0].text}",
                objective=objective,
                acceptance=_long_texts("url"),
                visibility=vis,
            ),
        )
        _plant(ctx, f"{vis}-goal", vis)
    _plant_titles(ctx, "public-goal")
    out = root.parent / "site"
    build(root, out, audiences=("public", "team", "private"), head=None)
    return out


def _public_bytes(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted((out / "public").rglob("*"))
        if p.is_file()
    }


def test_no_canary_reaches_a_public_byte(planted: Path) -> None:
    public = _public_bytes(planted)
    assert len(public) > 100  # status, graph, todo pages of the public goal
    leaks = []
    for canary in CANARIES:
        for form in _forms(canary.secret):
            needle = form.encode()
            for path, data in public.items():
                if needle in data:
                    leaks.append((canary.kind, path))
    assert leaks == []


def test_public_marked_fields_come_out_redacted(planted: Path) -> None:
    status = json.loads((planted / "public/goals/public-goal/status.json").read_text())
    redacted = status["omissions"]["redacted"]
    assert sum(redacted.values()) >= len(CANARIES)
    assert len(redacted) >= 30  # at least 30 kinds were recognised and redacted
    titles = [t["title"] for t in status["todos"] if t["todo_id"].startswith("title-public-")]
    assert titles and all("[redacted:" in t for t in titles)
    assert "[redacted:" in status["goal"]["title"]


def test_non_public_goals_and_items_are_absent_from_public_output(planted: Path) -> None:
    public = _public_bytes(planted)
    paths = "\n".join(public)
    assert "team-goal" not in paths and "private-goal" not in paths
    assert not any(b"title-private-" in d or b"title-team-" in d for d in public.values())
    index = json.loads((planted / "public/index.json").read_text())
    assert [g["goal_id"] for g in index["goals"]] == ["public-goal"]
    assert index["omissions"]["omitted"] == {"private goals": 1, "team goals": 1}
    status = json.loads((planted / "public/goals/public-goal/status.json").read_text())
    omitted = status["omissions"]["omitted"]
    assert omitted["team todos"] > 0 and omitted["private todos"] > 0


def test_team_and_private_builds_keep_what_they_may_see(planted: Path) -> None:
    team = (planted / "team/goals/team-goal/workbench.md").read_text()
    assert "Carrier 1" in team
    private_review = json.loads((planted / "private/goals/private-goal/review.json").read_text())
    assert private_review["evidence"]


# -- random states, random visibilities ------------------------------------------------------

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9)
ITEM = st.tuples(st.sampled_from(VISIBILITIES), st.lists(WORDS, min_size=2, max_size=4))


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    goal_vis=st.sampled_from(VISIBILITIES),
    items=st.lists(ITEM, min_size=1, max_size=8),
    kinds=st.lists(
        st.sampled_from(["todo", "gate", "evidence", "note", "run"]), min_size=8, max_size=8
    ),
)
def test_random_states_never_leak_non_public_text(
    tmp_path_factory: Any, goal_vis: str, items: list[tuple[str, list[str]]], kinds: list[str]
) -> None:
    root = tmp_path_factory.mktemp("prop") / "p"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx,
        CreateGoal(
            goal_id="g", title="Shared goal", objective="Objective text here", visibility=goal_vis
        ),
    )
    secrets: list[str] = []
    for i, (vis, words) in enumerate(items):
        text = "zq " + " ".join(words) + f" marker{i}"
        kind = kinds[i % len(kinds)]
        if kind == "todo":
            todos.add_todo(ctx, AddTodo(goal_id="g", title=text, visibility=vis, todo_id=f"t{i}"))
        elif kind == "gate":
            gates.open_gate(
                ctx,
                OpenGate(
                    goal_id="g",
                    question=text,
                    authority="maintainer",
                    visibility=vis,
                    gate_id=f"q{i}",
                ),
            )
        elif kind == "evidence":
            evidence.add_evidence(
                ctx, AddEvidence(goal_id="g", kind="note", summary=text, visibility=vis)
            )
        elif kind == "note":
            goals.add_note(ctx, AddNote(goal_id="g", text=text, kind="decision", visibility=vis))
        else:
            evidence.record_run(
                ctx, RecordRun(goal_id="g", outcome="progress", summary=text, visibility=vis)
            )
        if vis != "public" or goal_vis != "public":
            secrets.append(text)
    out = root.parent / "site"
    build(root, out, audiences=("public", "team"), head=None)
    public = b"".join(p.read_bytes() for p in (out / "public").rglob("*") if p.is_file())
    for secret in secrets:
        assert secret.encode() not in public
