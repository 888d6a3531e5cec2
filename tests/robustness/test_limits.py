"""Very large inputs are refused with a clear error or handled within the documented bounds,
without exhausting memory or recursion (README "Guarantees", section Limits).

Big ledgers are built directly with the store's own line codec (`stamp`), as loopx itself
would have written them, instead of through 100,000 governed writes.
"""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scratch import scratch

from loopx.engine.commands import AddNote, AddTodo, CompleteTodo, CreateGoal, UpdateTodo
from loopx.engine.core import load_state
from loopx.engine.goals import add_note, create_goal
from loopx.engine.todos import add_todo, complete_todo, update_todo
from loopx.model.errors import Conflict, LedgerDamage
from loopx.model.upgrade import EVENT_VERSION
from loopx.state.frontier import frontier, readiness
from loopx.store.filestore import FileStore
from loopx.store.ledger import MAX_DEPTH, digest, parse_line
from tests.conftest import T0, make_ctx, run_cli

GOAL = "big"


@pytest.fixture
def tmp_path(tmp_path: Path) -> Iterator[Path]:
    with scratch(tmp_path) as folder:
        yield folder


def new_store(tmp_path: Path) -> FileStore:
    store = FileStore(tmp_path / "proj")
    store.init()
    create_goal(
        make_ctx(store), CreateGoal(goal_id=GOAL, title="Big", objective="Stay within bounds")
    )
    return store


def bulk_todos(store: FileStore, todos: list[dict[str, Any]]) -> None:
    """Append `todo.added` events the way the store writes them (one buffer, one fsync)."""
    scan = store.read(GOAL)
    envelopes = [
        {
            "operation_id": f"bulk-{i}",
            "op_hash": digest(f"bulk-{i}".encode()),
            "type": "todo.added",
            "v": EVENT_VERSION,
            "goal_id": GOAL,
            "actor": {"agent_id": "agent-a", "session_id": "s1"},
            "recorded_at": T0,
            "visibility": "team",
            "data": {"role": "agent", "kind": "task", "priority": 2, "depends_on": [], **data},
        }
        for i, data in enumerate(todos)
    ]
    with store.writing(GOAL, scan.cursor) as writer:
        writer.append(envelopes)


# -- huge text ----------------------------------------------------------------------------


def test_a_10_mb_note_is_refused_clearly_without_a_memory_blowup(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    ledger = store.ledger_path(GOAL).read_bytes()
    text = "n" * (10 << 20)
    root = str(store.root)
    tracemalloc.start()
    try:
        out = run_cli(["note", "add", "--root", root, "--goal-id", GOAL, "--text", text])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.exit_code == 2
    assert out.stderr.startswith("loopx: error [text_too_long]: text is 10485760 characters")
    assert len(out.stderr) < 200
    assert peak < 100 << 20, f"refusing a 10 MB note took {peak >> 20} MB"
    assert store.ledger_path(GOAL).read_bytes() == ledger
    # the same through the API, and for titles, and at the limit itself
    with pytest.raises(Exception) as caught:
        add_note(make_ctx(store), AddNote(goal_id=GOAL, text=text))
    assert getattr(caught.value, "code", None) == "text_too_long"
    assert add_note(make_ctx(store), AddNote(goal_id=GOAL, text="n" * 20_000)).status == "applied"
    out = run_cli(["todo", "add", "--root", root, "--goal-id", GOAL, "--title", "t" * 501])
    assert out.exit_code == 2 and "[text_too_long]" in out.stderr


def test_a_10_mb_evidence_file_is_refused_and_5_mb_is_kept_privately(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    root = str(store.root)
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (10 << 20))
    args = ["evidence", "add", "--root", root, "--goal-id", GOAL, "--kind", "log"]
    out = run_cli([*args, "--summary", "big log", "--file", str(big), "--format", "json"])
    assert out.exit_code == 2 and out.json()["error"]["code"] == "file_too_large"
    ok = tmp_path / "ok.log"
    ok.write_bytes(b"y" * (5 << 20))
    out = run_cli([*args, "--summary", "5 MiB log", "--file", str(ok)])
    assert out.exit_code == 0, out.stderr
    assert store.ledger_path(GOAL).stat().st_size < 10_000  # the body is a blob, not a line
    assert store.verify(GOAL).ok


# -- 100,000 todos ------------------------------------------------------------------------


def test_one_hundred_thousand_todos_in_one_goal(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    n = 100_000
    bulk_todos(store, [{"todo_id": f"t{i}", "title": f"todo {i}"} for i in range(n)])
    # one governed write on top of it: a full fold (no snapshot yet), then the snapshot
    result = add_todo(
        make_ctx(store), AddTodo(goal_id=GOAL, title="one more", operation_id="op-one-more")
    )
    assert result.status == "applied" and result.receipt["revision"] == n + 2
    state = load_state(store, GOAL).state  # from the snapshot the write left
    assert state is not None and len(state.todos) == n + 1
    assert len(frontier(state, T0)) == n + 1
    out = run_cli(["next", "--root", str(store.root), "--goal-id", GOAL, "--format", "json"])
    assert out.exit_code == 0
    assert out.json()["frontier_total"] == n + 1 and len(out.json()["frontier"]) == 20


# -- a 10,000-deep dependency chain -------------------------------------------------------


def test_a_10000_deep_dependency_chain(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    depth = 10_000
    chain = [
        {"todo_id": f"c{i}", "title": f"step {i}", "depends_on": [f"c{i - 1}"] if i else []}
        for i in range(depth)
    ]
    bulk_todos(store, chain)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # no code path may recurse along the chain
    try:
        state = load_state(store, GOAL, cache=False).state
        assert state is not None
        assert [t.todo_id for t in frontier(state, T0)] == ["c0"]
        waiting = [r for r in readiness(state, T0) if not r.ready]
        assert len(waiting) == depth - 1
        assert all(r.reasons[0]["code"] == "dependency_open" for r in waiting)
        ctx = make_ctx(store)
        # closing the loop at the bottom is a cycle through all 10,000 todos
        before = store.ledger_path(GOAL).read_bytes()
        with pytest.raises(Conflict) as caught:
            update_todo(ctx, UpdateTodo(goal_id=GOAL, todo_id="c0", depends_on=[f"c{depth - 1}"]))
        assert caught.value.code == "dependency_cycle"
        assert len(caught.value.message) < 1_000, "the refusal must stay readable"
        assert store.ledger_path(GOAL).read_bytes() == before
        # depending on the top is fine; completing the bottom frees the next one
        assert add_todo(
            ctx, AddTodo(goal_id=GOAL, title="after all", depends_on=[f"c{depth - 1}"])
        ).status
        assert complete_todo(ctx, CompleteTodo(goal_id=GOAL, todo_id="c0")).status == "applied"
        state = load_state(store, GOAL).state
        assert state is not None
        assert [t.todo_id for t in frontier(state, T0)] == ["c1"]
    finally:
        sys.setrecursionlimit(limit)
    root = str(store.root)
    for args in (
        ["next", "--goal-id", GOAL, "--explain", "--format", "json"],
        ["status", "--goal-id", GOAL, "--format", "json"],
        ["todo", "show", "--goal-id", GOAL, "--todo-id", f"c{depth - 1}"],
        ["graph", "--goal-id", GOAL, "--format", "json"],
        ["graph", "--goal-id", GOAL, "--format", "svg"],
    ):
        out = run_cli([*args, "--root", root])
        assert out.exit_code in (0, 2), (args, out.stdout[:500], out.stderr)
        assert "Traceback" not in out.stderr
    update = run_cli(
        ["todo", "update", "--root", root, "--goal-id", GOAL, "--todo-id", "c1"]
        + ["--depends-on", f"c{depth - 1}", "--format", "json"]
    )
    assert update.exit_code == 4
    error = update.json()["error"]
    assert error["code"] == "dependency_cycle" and len(update.stdout) < 2_000


# -- deep JSON ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 2_000 + b"1" + b"}" * 2_000,
        b'{"work_summary": ' + b"[" * 300 + b"1" + b"]" * 300 + b"}",
    ],
    ids=["list-100k", "object-2k", "field-300"],
)
def test_deep_json_from_context_is_refused_clearly(doc: bytes, tmp_path: Path) -> None:
    store = new_store(tmp_path)
    add_todo(make_ctx(store), AddTodo(goal_id=GOAL, title="hand me off", todo_id="h"))
    before = store.ledger_path(GOAL).read_bytes()
    context = tmp_path / "context.json"
    context.write_bytes(doc)
    out = run_cli(
        ["handoff", "prepare", "--root", str(store.root), "--goal-id", GOAL, "--todo-id", "h"]
        + ["--from-context", str(context), "--format", "json"]
    )
    assert out.exit_code == 2, out.stdout + out.stderr
    assert out.json()["error"]["code"] == "invalid_context"
    assert len(out.stdout) < 5_000
    assert store.ledger_path(GOAL).read_bytes() == before


def _line(body: bytes) -> bytes:
    """A ledger line with a valid checksum around `body` (a JSON object, built by hand so
    that no encoder's own depth limit gets in the way)."""
    return body[:-1] + b',"sum":"' + digest(body).encode() + b'"}'


def _nested(depth: int) -> bytes:
    """An envelope whose nesting, counting the envelope itself, is `depth`."""
    return b'{"data":' + b"[" * (depth - 1) + b"1" + b"]" * (depth - 1) + b',"seq":1}'


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 200, 1_000, 100_000])
def test_a_deeply_nested_ledger_line_is_damage_not_a_crash(depth: int) -> None:
    with pytest.raises(LedgerDamage) as caught:
        parse_line(_line(_nested(depth)), 0)
    assert caught.value.code == "ledger_corrupt"
    assert parse_line(_line(_nested(MAX_DEPTH)), 0)["seq"] == 1


def test_a_deeply_nested_last_line_is_quarantined_and_a_corrupt_cache_ignored(
    tmp_path: Path,
) -> None:
    store = new_store(tmp_path)
    add_todo(make_ctx(store), AddTodo(goal_id=GOAL, title="before"))
    intact = store.raw(GOAL)
    line = _line(b'{"data":' + b'{"d":' * 500 + b"1" + b"}" * 500 + b',"seq":3}') + b"\n"
    store.ledger_path(GOAL).write_bytes(intact + line)
    # a hostile snapshot cache: deep JSON, then garbage; both are ignored (replayed instead)
    cache = store.state_dir / "cache" / "goals" / GOAL / "state.json"
    for junk in (b"[" * 100_000, b'{"format": 1, "cursor": [], "state": 5}', b"\xff" * 100):
        cache.write_bytes(junk)
        loaded = load_state(store, GOAL)
        assert loaded.state is not None and loaded.state.revision == 2
        assert loaded.damage is not None and loaded.damage["offset"] == len(intact)
    result = add_todo(make_ctx(store), AddTodo(goal_id=GOAL, title="after"))
    assert result.repair is not None and result.repair["length"] == len(line)
    assert store.verify(GOAL).ok


def test_a_huge_ledger_line_count_does_not_recurse(tmp_path: Path) -> None:
    """Scanning is iterative: 200,000 tiny bad lines before a good one are one error."""
    store = new_store(tmp_path)
    good = store.raw(GOAL)
    store.ledger_path(GOAL).write_bytes(b"x\n" * 200_000 + good)
    with pytest.raises(LedgerDamage) as caught:
        store.read(GOAL)
    assert caught.value.details["offset"] == 0
    report = store.verify(GOAL)
    assert not report.ok and report.damage[0]["offset"] == 0
