"""Evidence (bound to the git revision it was observed at), runs, and private content: what is
private goes to the blob store, and the ledger's bytes never contain it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import (
    AddEvidence,
    AddNote,
    AddTodo,
    BlockTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    RecordRun,
    ReopenTodo,
    ResolveGate,
    UnblockTodo,
    UpdateTodo,
)
from loopx.engine.core import require_goal
from loopx.engine.git import head_and_dirty, head_revision, is_ancestor
from loopx.model.errors import InvalidInput, LoopxError, NotFound
from loopx.state.views import quota_view
from tests.conftest import make_ctx

G = "launch"
SECRET = "s3cr3t-canary-7f1e9a"


@pytest.fixture
def goal(store: Any) -> Any:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship", quota=3))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Build", todo_id="build"))
    return store


def refused(store: Any, code: str, call: Any, kind: type = LoopxError) -> Any:
    before = store.raw(G)
    with pytest.raises(kind) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert store.raw(G) == before
    return caught.value


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "checkout"
    path.mkdir()
    git(path, "init", "-q")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


# -- evidence -------------------------------------------------------------------------------


def test_evidence_is_bound_to_the_checkout_head(goal: Any, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    result = evidence.add_evidence(
        make_ctx(goal),
        AddEvidence(goal_id=G, kind="test", summary="212 passed", workspace=repo, todo_id="build"),
    )
    ev = require_goal(goal, G).evidence[result.receipt["subject"]]
    assert ev.revision == head and len(head) == 40
    assert ev.todo_id == "build" and ev.kind == "test"
    # A later commit: new evidence binds to the new HEAD, the old keeps its revision.
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second")
    newer = evidence.add_evidence(
        make_ctx(goal), AddEvidence(goal_id=G, kind="ci", summary="green", workspace=repo)
    )
    state = require_goal(goal, G)
    assert state.evidence[newer.receipt["subject"]].revision == git(repo, "rev-parse", "HEAD")
    assert state.evidence[result.receipt["subject"]].revision == head
    assert is_ancestor(repo, head, git(repo, "rev-parse", "HEAD")) is True


def test_revision_overrides_the_checkout(goal: Any, repo: Path) -> None:
    result = evidence.add_evidence(
        make_ctx(goal),
        AddEvidence(goal_id=G, kind="pr", summary="PR merged", revision="abc1234", workspace=repo),
    )
    assert require_goal(goal, G).evidence[result.receipt["subject"]].revision == "abc1234"


def test_outside_a_checkout_evidence_is_unbound(goal: Any, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert head_revision(plain) is None and head_and_dirty(plain) == (None, None)
    result = evidence.add_evidence(
        make_ctx(goal), AddEvidence(goal_id=G, kind="log", summary="x", workspace=plain)
    )
    assert require_goal(goal, G).evidence[result.receipt["subject"]].revision is None


def test_head_and_dirty_sees_uncommitted_changes(repo: Path) -> None:
    head = head_revision(repo)
    assert head is not None and head_and_dirty(repo) == (head, False)
    (repo / "a.txt").write_text("changed\n")
    assert head_and_dirty(repo) == (head, True)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"kind": "Test Run"}, "invalid_kind"),
        ({"kind": ""}, "invalid_kind"),
        ({"summary": ""}, "empty_text"),
        ({"summary": "s" * 501}, "text_too_long"),
        ({"revision": "not-a-sha"}, "invalid_revision"),
        ({"revision": "abc"}, "invalid_revision"),
        ({"refs": ["ok", ""]}, "empty_text"),
        ({"refs": ["r" * 2001]}, "text_too_long"),
        ({"todo_id": "ghost"}, "todo_not_found"),
        ({"evidence_id": "Bad Id"}, "invalid_id"),
        ({"visibility": "world"}, "invalid_visibility"),
        ({"body": b"x" * (5 * 1024 * 1024 + 1)}, "file_too_large"),
    ],
)
def test_evidence_refusals(goal: Any, kwargs: dict[str, Any], code: str) -> None:
    args: dict[str, Any] = {"kind": "test", "summary": "ok", **kwargs}
    refused(
        goal, code, lambda: evidence.add_evidence(make_ctx(goal), AddEvidence(goal_id=G, **args))
    )


def test_evidence_ids_are_unique(goal: Any) -> None:
    ctx = make_ctx(goal)
    evidence.add_evidence(ctx, AddEvidence(goal_id=G, kind="test", summary="a", evidence_id="ev-a"))
    refused(
        goal,
        "evidence_exists",
        lambda: evidence.add_evidence(
            ctx, AddEvidence(goal_id=G, kind="test", summary="b", evidence_id="ev-a")
        ),
    )


def test_read_body_limits_and_missing_files(tmp_path: Path) -> None:
    small = tmp_path / "log.txt"
    small.write_bytes(b"log\n")
    assert evidence.read_body(small) == b"log\n"
    with pytest.raises(NotFound) as missing:
        evidence.read_body(tmp_path / "nope.txt")
    assert missing.value.code == "file_not_found"
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(evidence.MAX_BODY_BYTES + 1)
    with pytest.raises(InvalidInput) as large:
        evidence.read_body(big)
    assert large.value.code == "file_too_large"


# -- private content ------------------------------------------------------------------------


def test_private_text_goes_to_the_blob_store_and_never_into_the_ledger(store: Any) -> None:
    ctx = make_ctx(store)
    s = SECRET
    goals.create_goal(
        ctx,
        CreateGoal(
            goal_id=G,
            title=f"Goal {s}",
            objective=f"Objective {s}",
            acceptance=[f"A {s}"],
            visibility="private",
        ),
    )
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id=G, title=f"Todo {s}", todo_id="t", acceptance=f"Acc {s}", visibility="private"
        ),
    )
    todos.update_todo(ctx, UpdateTodo(goal_id=G, todo_id="t", title=f"Renamed {s}"))
    ev = evidence.add_evidence(
        ctx, AddEvidence(goal_id=G, kind="log", summary=f"Summary {s}", body=f"Body {s}".encode())
    )
    gates.open_gate(
        ctx, OpenGate(goal_id=G, question=f"Q {s}?", authority="agent-a", visibility="private")
    )
    gates.resolve_gate(
        ctx, ResolveGate(goal_id=G, gate_id="gate-1", resolution="approve", rationale=f"Why {s}")
    )
    goals.add_note(ctx, AddNote(goal_id=G, text=f"Note {s}"))
    evidence.record_run(
        ctx,
        RecordRun(
            goal_id=G, outcome="waiting", summary=f"Run {s}", wait=f"Wait {s}", visibility="private"
        ),
    )
    todos.block_todo(ctx, BlockTodo(goal_id=G, todo_id="t", reason=f"Blocked {s}"))
    todos.unblock_todo(ctx, UnblockTodo(goal_id=G, todo_id="t", reason=f"Unblocked {s}"))
    todos.complete_todo(
        ctx,
        CompleteTodo(
            goal_id=G, todo_id="t", summary=f"Done {s}", evidence_ids=[ev.receipt["subject"]]
        ),
    )
    todos.reopen_todo(ctx, ReopenTodo(goal_id=G, todo_id="t", reason=f"Reopened {s}"))
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="abandoned", reason=f"Closed {s}"))
    data = store.raw(G)
    assert s.encode() not in data
    assert len(store.read(G).events) == 13
    # Each text is in the blob store, by the hash the ledger holds.
    state = require_goal(store, G)
    for value in (
        state.title,
        state.objective,
        state.todos["t"].reason,
        state.notes["note-1"].text,
    ):
        assert isinstance(value, dict)
        blob = store.get_blob(value["blob"])
        assert blob is not None and s.encode() in blob
    body = state.evidence[ev.receipt["subject"]].body
    assert body is not None and store.get_blob(body["blob"]) == f"Body {s}".encode()


def test_team_evidence_keeps_its_summary_inline_but_the_body_private(goal: Any) -> None:
    ctx = make_ctx(goal)
    result = evidence.add_evidence(
        ctx,
        AddEvidence(
            goal_id=G,
            kind="test",
            summary="Suite green",
            body=f"log {SECRET}".encode(),
            visibility="team",
        ),
    )
    ev = require_goal(goal, G).evidence[result.receipt["subject"]]
    assert ev.summary == "Suite green" and ev.visibility == "team"
    assert ev.body is not None and ev.body_bytes == len(f"log {SECRET}")
    assert SECRET.encode() not in goal.raw(G)


def test_evidence_and_notes_default_to_private(goal: Any) -> None:
    ctx = make_ctx(goal)
    ev = evidence.add_evidence(ctx, AddEvidence(goal_id=G, kind="test", summary=f"x {SECRET}"))
    assert require_goal(goal, G).evidence[ev.receipt["subject"]].visibility == "private"
    assert require_goal(goal, G).visibility == "team"
    assert require_goal(goal, G).todos["build"].visibility == "team"
    assert SECRET.encode() not in goal.raw(G)


# -- runs and quota -------------------------------------------------------------------------


def test_record_run_and_spend_quota(goal: Any) -> None:
    ctx = make_ctx(goal, agent="agent-a", session="s9")
    ev = evidence.add_evidence(
        ctx, AddEvidence(goal_id=G, kind="test", summary="ok", visibility="team")
    )
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Next", todo_id="next"))
    result = evidence.record_run(
        ctx,
        RecordRun(
            goal_id=G,
            outcome="completed",
            todo_id="build",
            summary="Built it",
            evidence_ids=[ev.receipt["subject"]],
            successor="next",
            quota_spent=2,
        ),
    )
    run = require_goal(goal, G).runs[result.receipt["subject"]]
    assert (run.agent_id, run.session_id, run.outcome) == ("agent-a", "s9", "completed")
    assert run.evidence_ids == ["ev-1"] and run.successor == "next" and run.quota_spent == 2
    evidence.record_run(
        ctx,
        RecordRun(goal_id=G, outcome="no_op", quota_spent=1, agent_id="agent-b", session_id="t"),
    )
    state = require_goal(goal, G)
    assert state.runs["run-2"].agent_id == "agent-b"
    assert quota_view(state) == {
        "budget": 3,
        "spent": 3,
        "unit": "runs",
        "remaining": 0,
        "exhausted": True,
    }


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"outcome": "great"}, "invalid_outcome"),
        ({"quota_spent": -1}, "invalid_quota"),
        ({"todo_id": "ghost"}, "todo_not_found"),
        ({"successor": "ghost"}, "todo_not_found"),
        ({"evidence_ids": ["ev-404"]}, "evidence_not_found"),
        ({"agent_id": "Not OK"}, "invalid_id"),
        ({"summary": "s" * 20_001}, "text_too_long"),
        ({"run_id": "r", "outcome": "progress"}, None),
    ],
)
def test_run_refusals(goal: Any, kwargs: dict[str, Any], code: str | None) -> None:
    args: dict[str, Any] = {"outcome": "progress", **kwargs}
    if code is None:
        evidence.record_run(make_ctx(goal), RecordRun(goal_id=G, **args))
        refused(
            goal,
            "run_exists",
            lambda: evidence.record_run(make_ctx(goal), RecordRun(goal_id=G, **args)),
        )
        return
    refused(goal, code, lambda: evidence.record_run(make_ctx(goal), RecordRun(goal_id=G, **args)))


def test_private_evidence_refs_live_in_the_blob_store(file_store: Any) -> None:
    from loopx.engine.core import load_state

    ctx = make_ctx(file_store)
    goals.create_goal(ctx, CreateGoal(goal_id="g", title="Goal", objective="Objective"))
    ref = "https://internal.example.net/incident/4711?token-free"
    evidence.add_evidence(
        ctx,
        AddEvidence(
            goal_id="g", kind="log", summary="Incident log", refs=[ref], evidence_id="ev-private"
        ),
    )
    evidence.add_evidence(
        ctx,
        AddEvidence(
            goal_id="g",
            kind="pr",
            summary="Team PR",
            refs=[ref + "-pr"],
            visibility="team",
            evidence_id="ev-team",
        ),
    )
    ledger = file_store.ledger_path("g").read_bytes()
    assert ref.encode() not in ledger.replace((ref + "-pr").encode(), b"")
    state = load_state(file_store, "g").state
    stored = state.evidence["ev-private"].refs[0]
    assert isinstance(stored, dict) and file_store.get_blob(stored["blob"]) == ref.encode()
    assert state.evidence["ev-team"].refs == [ref + "-pr"]


def test_evidence_files_are_read_with_a_bound_not_trusting_their_size(tmp_path: Path) -> None:
    from loopx.engine.evidence import MAX_BODY_BYTES, read_body

    with pytest.raises(LoopxError) as err:
        read_body(Path("/dev/zero"))  # reports size 0, never ends: not a regular file
    assert err.value.code == "unsafe_path"
    proc = read_body(Path("/proc/self/status"))  # a regular file that reports size 0
    assert proc.startswith(b"Name:")
    huge = tmp_path / "huge"
    with huge.open("wb") as fh:
        fh.truncate(MAX_BODY_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(LoopxError) as err:
        read_body(huge)
    assert err.value.code == "file_too_large"
    afile = tmp_path / "f"
    afile.write_text("x")
    with pytest.raises(NotFound):
        read_body(afile / "x")  # a path through a file: NotADirectoryError
    body = tmp_path / "ok.log"
    body.write_bytes(b"y" * 100)
    assert read_body(body) == b"y" * 100
    assert MAX_BODY_BYTES >= 1024 * 1024
