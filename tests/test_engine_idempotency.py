"""Idempotency and the revision guard.

The same operation id with the same payload returns the original receipt and appends
nothing — right away, after thousands of later events, with or without a snapshot, and from
another process. A different payload under that id is `operation_id_reused`. A write with
`expected_revision` that does not match is `revision_conflict`, carrying the current
revision, and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import gates, goals, todos
from loopx.engine.commands import (
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    ReleaseTodo,
    RenewTodo,
    ResolveGate,
    SetQuota,
    UpdateTodo,
)
from loopx.engine.core import load_state, require_goal
from loopx.model.errors import Conflict, LoopxError
from loopx.store.filestore import FileStore
from tests.conftest import T0, make_ctx

G = "launch"


@pytest.fixture
def goal(store: Any) -> Any:
    goals.create_goal(
        make_ctx(store), CreateGoal(goal_id=G, title="Launch", objective="Ship", operation_id="g-1")
    )
    return store


def bulk_notes(store: Any, count: int, start: int = 1) -> None:
    """Append `count` valid note events through the store's writer in one batch."""
    with store.writing(G) as writer:
        writer.append(
            [
                {
                    "operation_id": f"bulk-{i}",
                    "op_hash": hashlib.sha256(f"bulk-{i}".encode()).hexdigest(),
                    "type": "note.added",
                    "v": 1,
                    "goal_id": G,
                    "actor": {"agent_id": "agent-z", "session_id": "bulk"},
                    "recorded_at": T0,
                    "visibility": "team",
                    "data": {"note_id": f"bulk-{i}", "kind": "note", "text": f"note {i}"},
                }
                for i in range(start, start + count)
            ]
        )


def refused(store: Any, code: str, call: Any) -> LoopxError:
    before = store.raw(G)
    with pytest.raises(LoopxError) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert store.raw(G) == before
    return caught.value


# -- idempotency ----------------------------------------------------------------------------


def test_a_retry_returns_the_original_receipt_and_appends_nothing(goal: Any) -> None:
    ctx = make_ctx(goal)
    first = todos.add_todo(ctx, AddTodo(goal_id=G, title="Write docs", operation_id="add-docs"))
    before = goal.raw(G)
    again = todos.add_todo(ctx, AddTodo(goal_id=G, title="Write docs", operation_id="add-docs"))
    assert first.status == "applied" and again.status == "replayed"
    assert again.receipt == first.receipt
    assert goal.raw(G) == before
    assert sorted(require_goal(goal, G).todos) == ["todo-1"]


def test_a_different_payload_under_the_same_id_is_refused(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Write docs", operation_id="add-docs"))
    err = refused(
        goal,
        "operation_id_reused",
        lambda: todos.add_todo(
            ctx, AddTodo(goal_id=G, title="Write other docs", operation_id="add-docs")
        ),
    )
    assert isinstance(err, Conflict) and err.details["operation_id"] == "add-docs"
    # Another command, or another agent, under that id is a different request too.
    refused(
        goal,
        "operation_id_reused",
        lambda: todos.claim_todo(
            ctx, ClaimTodo(goal_id=G, todo_id="todo-1", operation_id="add-docs")
        ),
    )
    refused(
        goal,
        "operation_id_reused",
        lambda: todos.add_todo(
            make_ctx(goal, agent="agent-b"),
            AddTodo(goal_id=G, title="Write docs", operation_id="add-docs"),
        ),
    )


def test_a_replay_wins_over_later_preconditions(goal: Any) -> None:
    """The original receipt comes back even when the write would now be refused."""
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="A", todo_id="a"))
    claim = todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="a", operation_id="claim-a"))
    todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="a"))
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="achieved"))
    again = todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="a", operation_id="claim-a"))
    assert again.status == "replayed" and again.receipt == claim.receipt


def test_a_goal_creation_replays_too(store: Any) -> None:
    ctx = make_ctx(store)
    first = goals.create_goal(
        ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship", operation_id="create")
    )
    again = goals.create_goal(
        ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship", operation_id="create")
    )
    assert again.status == "replayed" and again.receipt == first.receipt
    refused(
        store,
        "operation_id_reused",
        lambda: goals.create_goal(
            ctx, CreateGoal(goal_id=G, title="Launch!", objective="Ship", operation_id="create")
        ),
    )
    refused(
        store,
        "goal_exists",
        lambda: goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="S")),
    )


@pytest.mark.parametrize("cache", ["snapshot", "no-snapshot", "stale-snapshot"])
def test_a_replay_after_2000_later_events(goal: Any, cache: str) -> None:
    ctx = make_ctx(goal)
    first = todos.add_todo(ctx, AddTodo(goal_id=G, title="Early", operation_id="early-op"))
    bulk_notes(goal, 2000)
    assert load_state(goal, G).state is not None  # folds the 2,000 and snapshots them
    if cache == "no-snapshot":
        goal.save_snapshot(G, b"")
    elif cache == "stale-snapshot":
        goal.save_snapshot(G, goal.load_snapshot(G).replace(b'"seq":2002', b'"seq":1999'))
    before = goal.raw(G)
    again = todos.add_todo(ctx, AddTodo(goal_id=G, title="Early", operation_id="early-op"))
    assert again.status == "replayed" and again.receipt == first.receipt
    assert goal.raw(G) == before
    refused(
        goal,
        "operation_id_reused",
        lambda: todos.add_todo(ctx, AddTodo(goal_id=G, title="Late", operation_id="early-op")),
    )
    # A bulk operation id (never seen by this process) replays from the index as well.
    state = require_goal(goal, G)
    assert state.operations.get("bulk-1500") is not None
    assert state.operations["bulk-1500"][1:3] == [1502, 1502]


def test_a_multi_event_operation_is_one_record() -> None:
    from loopx.state.entities import GoalState, OpIndex
    from loopx.state.fold import apply

    state = GoalState(goal_id=G)
    base = {
        "type": "note.added",
        "goal_id": G,
        "recorded_at": T0,
        "visibility": "team",
        "sum": "0" * 64,
        "actor": {"agent_id": "a", "session_id": "s"},
    }
    created = {**base, "type": "goal.created", "seq": 1, "operation_id": "op-a", "op_hash": "h1"}
    created["data"] = {"title": "T", "objective": "O"}
    state = apply(None, created)
    for seq, op in ((2, "op-b"), (3, "op-b"), (4, "op-b"), (5, "op-c")):
        event = {**base, "seq": seq, "operation_id": op, "op_hash": "h-" + op}
        event["data"] = {"note_id": f"n{seq}", "kind": "note", "text": "x"}
        apply(state, event)
    assert state.operations["op-b"] == ["h-op-b", 2, 4, "n2"]
    assert state.operations["op-a"] == ["h1", 1, 1, None]
    # The index survives its compact form.
    packed = OpIndex(state.operations.dump())
    assert packed == state.operations
    assert packed.get("op-b") == ["h-op-b", 2, 4, "n2"] and packed.last == "op-c"
    assert packed.get("op-") is None and packed.get("op-bb") is None
    assert "op-c" in packed and "zzz" not in packed and len(packed) == 3


def _cli_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LOOPX_NOW": T0, "LOOPX_ROOT": str(root)})
    env.pop("LOOPX_AGENT_ID", None)
    env.pop("LOOPX_SESSION_ID", None)
    return env


def _loopx(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args],
        env=_cli_env(root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_replay_from_another_process_gives_the_byte_identical_receipt(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.init()
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship"))
    first = todos.add_todo(
        ctx, AddTodo(goal_id=G, title="Docs", todo_id="docs", operation_id="op-docs")
    )
    bulk_notes(store, 2000)
    before = store.raw(G)
    args = ["todo", "add", "--goal-id", G, "--title", "Docs", "--todo-id", "docs"]
    args += ["--operation-id", "op-docs", "--agent-id", "agent-a", "--session-id", "s1"]
    proc = _loopx(tmp_path, *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "replayed"
    assert json.dumps(out["receipt"], sort_keys=True) == json.dumps(first.receipt, sort_keys=True)
    assert store.raw(G) == before
    # Twice more, each a fresh process, one without any cache: the same bytes each time.
    again = _loopx(tmp_path, *args, "--format", "json")
    shutil.rmtree(tmp_path / ".loopx" / "cache")
    cold = _loopx(tmp_path, *args, "--format", "json")
    assert again.stdout == proc.stdout == cold.stdout
    reused = _loopx(
        tmp_path, *args[:-4], "--agent-id", "agent-b", "--session-id", "s1", "--format", "json"
    )
    assert reused.returncode == 4
    assert json.loads(reused.stdout)["error"]["code"] == "operation_id_reused"
    assert store.raw(G) == before


# -- the revision guard -----------------------------------------------------------------------


def test_a_goal_level_write_checks_the_goal_revision(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="A", expected_revision=1))
    err = refused(
        goal,
        "revision_conflict",
        lambda: todos.add_todo(ctx, AddTodo(goal_id=G, title="B", expected_revision=1)),
    )
    assert err.details == {"expected_revision": 1, "current_revision": 2}
    assert err.exit_code == 4
    refused(
        goal,
        "revision_conflict",
        lambda: gates.open_gate(
            ctx, OpenGate(goal_id=G, question="Q?", authority="m", expected_revision=7)
        ),
    )
    refused(
        goal,
        "revision_conflict",
        lambda: goals.set_quota(ctx, SetQuota(goal_id=G, quota=1, expected_revision=0)),
    )
    refused(
        goal,
        "revision_conflict",
        lambda: goals.close_goal(
            ctx, CloseGoal(goal_id=G, outcome="abandoned", expected_revision=1)
        ),
    )
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="abandoned", expected_revision=2))


def test_an_entity_write_checks_the_entity_revision(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="A", todo_id="a"))  # seq 2: a's revision
    todos.add_todo(
        ctx, AddTodo(goal_id=G, title="B", todo_id="b")
    )  # seq 3: the goal moves on, a does not
    todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="a", expected_revision=2))  # seq 4
    err = refused(
        goal,
        "revision_conflict",
        lambda: todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="a", expected_revision=2)),
    )
    assert err.details["current_revision"] == 4
    for call in (
        lambda: todos.update_todo(
            ctx, UpdateTodo(goal_id=G, todo_id="a", priority=1, expected_revision=3)
        ),
        lambda: todos.renew_todo(ctx, RenewTodo(goal_id=G, todo_id="a", expected_revision=3)),
        lambda: todos.release_todo(ctx, ReleaseTodo(goal_id=G, todo_id="a", expected_revision=3)),
        lambda: todos.block_todo(
            ctx, BlockTodo(goal_id=G, todo_id="a", reason="r", expected_revision=3)
        ),
        lambda: todos.cancel_todo(ctx, CancelTodo(goal_id=G, todo_id="a", expected_revision=3)),
    ):
        refused(goal, "revision_conflict", call)
    todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="a", expected_revision=4))
    gates.open_gate(
        ctx, OpenGate(goal_id=G, question="Q?", authority="agent-a", gate_id="g")
    )  # seq 6
    todos.add_todo(ctx, AddTodo(goal_id=G, title="C"))  # seq 7
    refused(
        goal,
        "revision_conflict",
        lambda: gates.resolve_gate(
            ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve", expected_revision=7)
        ),
    )
    gates.resolve_gate(
        ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve", expected_revision=6)
    )


def test_the_revision_guard_is_checked_before_preconditions(goal: Any) -> None:
    ctx = make_ctx(goal)
    err = refused(
        goal,
        "revision_conflict",
        lambda: todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="a", expected_revision=5)),
    )
    assert err.details["current_revision"] == 0  # an unknown todo has no revision yet
