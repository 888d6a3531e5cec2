"""Real processes racing on one goal of a real FileStore.

Each test starts its workers (tests/robustness/worker.py), waits until all have imported
loopx and opened the store, then releases them at once through a "go" file.
The project lives on tmpfs when there is one (see scratch.py): these tests prove mutual
exclusion, not durability.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scratch import scratch

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.store.filestore import FileStore
from loopx.store.ledger import GENESIS
from tests.conftest import make_ctx

WORKER = Path(__file__).with_name("worker.py")
GOAL = "race"


@pytest.fixture
def tmp_path(tmp_path: Path) -> Iterator[Path]:
    with scratch(tmp_path) as folder:
        yield folder


def project(tmp_path: Path, todos: int = 0) -> Path:
    root = tmp_path / "proj"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    create_goal(
        ctx,
        CreateGoal(goal_id=GOAL, title="Race", objective="Stay consistent", operation_id="create"),
    )
    for i in range(todos):
        add_todo(ctx, AddTodo(goal_id=GOAL, title=f"contested {i}", operation_id=f"seed-{i}"))
    return root


def race(
    tmp_path: Path, mode: str, workers: int, n: int, *, readers: int = 0
) -> list[dict[str, Any]]:
    """Run `workers` processes of `mode` (and `readers` verify loops) released together."""
    root = tmp_path / "proj"
    go = tmp_path / "go"

    def start(kind: str, ident: int) -> subprocess.Popen[str]:
        args = [kind, str(root), GOAL, str(ident), str(n), str(go)]
        return subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, text=True
        )

    procs = [start(mode, i) for i in range(workers)]
    watchers = [start("read", 100 + i) for i in range(readers)]
    try:
        for proc in procs + watchers:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        go.touch()
        results = []
        for proc in procs:
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, out
            results.append(json.loads(out))
        Path(f"{go}.stop").touch()
        for proc in watchers:
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0, out
            results.append(json.loads(out))
    finally:
        for proc in procs + watchers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def check_chain(root: Path) -> list[dict[str, Any]]:
    store = FileStore(root)
    report = store.verify(GOAL)
    assert report.ok, report.damage
    scan = store.read(GOAL)
    assert scan.damage is None
    events = scan.events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    prev = GENESIS
    for event in events:
        assert event["prev"] == prev
        prev = event["sum"]
    assert report.head == prev and report.events == len(events)
    return events


def test_eight_processes_append_2000_events_with_no_gap_or_duplicate(tmp_path: Path) -> None:
    root = project(tmp_path)
    results = race(tmp_path, "append", 8, 250, readers=1)
    writers, readers = results[:8], results[8:]
    assert [r["applied"] for r in writers] == [250] * 8
    events = check_chain(root)
    assert len(events) == 2001  # goal.created + 8 × 250
    ops = [e["operation_id"] for e in events[1:]]
    assert {e["type"] for e in events[1:]} == {"quota.set"}
    assert len(set(ops)) == 2000
    assert set(ops) == {f"w{w}-{i}" for w in range(8) for i in range(250)}
    # each writer's own appends are in its own order
    for w in range(8):
        mine = [int(op.split("-")[1]) for op in ops if op.startswith(f"w{w}-")]
        assert mine == list(range(250))
    # a reader racing the writers never saw a write in flight as damage
    assert readers[0]["reads"] > 0
    assert readers[0]["errors"] == []


def test_compare_and_swap_succeeds_exactly_as_often_as_it_writes(tmp_path: Path) -> None:
    root = project(tmp_path)
    results = race(tmp_path, "cas", 8, 200)
    successes = sum(r["applied"] for r in results)
    failures = [e for r in results for e in r["errors"]]
    assert successes + len(failures) == 1600
    assert successes > 0 and failures, "no contention: the test proved nothing"
    assert {code for code, _, _ in failures} == {"revision_conflict"}
    # each refusal saw an older revision than the one it was told is current
    assert all(current > seen for _, current, seen in failures)
    events = check_chain(root)
    assert len(events) == 1 + successes  # every failure wrote nothing
    # each success landed exactly on top of the revision it expected
    landed = sorted(rev for r in results for seen, rev in r["seen"] if rev == seen + 1)
    assert landed == list(range(2, successes + 2))
    assert len({e["operation_id"] for e in events}) == len(events)


def test_one_operation_id_sent_by_eight_processes_is_applied_once(tmp_path: Path) -> None:
    root = project(tmp_path)
    results = race(tmp_path, "same-op", 8, 1)
    statuses = Counter(r["status"] for r in results)
    assert statuses == {"applied": 1, "replayed": 7}
    receipts = [json.dumps(r["receipt"], sort_keys=True) for r in results]
    assert len(set(receipts)) == 1, "replays must return the original receipt"
    events = check_chain(root)
    assert [e["operation_id"] for e in events].count("op-shared") == 1
    assert len(events) == 2


def test_two_processes_claiming_one_todo_exactly_one_wins(tmp_path: Path) -> None:
    todos = 25
    root = project(tmp_path, todos=todos)
    results = race(tmp_path, "claim", 2, todos)
    won = Counter(t for r in results for t in r["won"])
    assert sorted(won) == list(range(1, todos + 1))
    assert set(won.values()) == {1}, "a todo was claimed by both"
    errors = [e for r in results for e in r["errors"]]
    assert errors == ["claim_owner_mismatch"] * todos
    events = check_chain(root)
    claims = [e for e in events if e["type"] == "todo.claimed"]
    assert len(claims) == todos
    owners = {e["data"]["todo_id"]: e["data"]["agent_id"] for e in claims}
    for ident, result in enumerate(results):
        assert all(owners[f"todo-{t}"] == f"agent-{ident}" for t in result["won"])
