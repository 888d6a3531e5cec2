"""SIGKILL at random moments: no acknowledged operation is lost or duplicated.

A child process appends todos in a loop and records each operation id only after its receipt
came back; the test kills it with SIGKILL after a random few milliseconds, 100 times
(`LOOPX_CRASH_ROUNDS` for more; more rounds, after longer waits, while no more than that many
appends were acknowledged). Each new child first retries the operation the last one had
in flight, with the same operation id, as a careful client would. Afterwards every
acknowledged operation is in the ledger exactly once, the ledger verifies, and 10 more
appends succeed.

Children are forked from one "zygote" process that imported loopx once, so a round costs
milliseconds instead of an interpreter start; each child is still a separate process that
dies by SIGKILL, with its lock dropped by the kernel.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx

WORKER = Path(__file__).with_name("worker.py")
ROUNDS = int(os.environ.get("LOOPX_CRASH_ROUNDS", "100"))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while not _gone(pid):
        assert time.monotonic() < deadline, "a killed child did not die"
        time.sleep(0.0005)


def _acked(acks: Path) -> list[int]:
    if not acks.exists():
        return []
    return [int(line[3:]) for line in acks.read_text().splitlines() if line]


def test_sigkill_never_loses_or_duplicates_an_acknowledged_operation(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    store = FileStore(root)
    store.init()
    create_goal(
        make_ctx(store),
        CreateGoal(
            goal_id="crash", title="Crash", objective="Survive SIGKILL", operation_id="create"
        ),
    )
    acks = tmp_path / "acks"
    in_flight_written = torn = 0  # kills after the write but before the receipt; torn tails
    rng = random.Random(int(os.environ.get("LOOPX_CRASH_SEED", "7")))
    with subprocess.Popen(
        [sys.executable, str(WORKER), "zygote", str(root), "crash", str(acks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as zygote:
        assert zygote.stdin is not None and zygote.stdout is not None
        try:
            assert zygote.stdout.readline().strip() == "ready"
            next_op = 1
            rounds = 0
            # ROUNDS kills, and more (up to four times as many, each after a longer wait) while
            # too few appends were acknowledged to mean anything: on a loaded machine a child
            # can spend a short wait just starting up.
            while rounds < ROUNDS or (len(_acked(acks)) <= ROUNDS and rounds < 4 * ROUNDS):
                extra = rounds >= ROUNDS
                rounds += 1
                zygote.stdin.write(f"spawn {next_op}\n")
                zygote.stdin.flush()
                pid = int(zygote.stdout.readline())
                # Mostly a few appends in, sometimes at once (while it locks and reads).
                if extra:
                    time.sleep(rng.uniform(0.05, 0.2))
                else:
                    time.sleep(rng.choice((0.0, rng.uniform(0.001, 0.1))))
                assert not _gone(pid), "the child stopped on its own (an append raised)"
                _kill(pid)
                acked = _acked(acks)
                next_op = (max(acked) if acked else 0) + 1
                tail = FileStore(root).read("crash")
                in_flight_written += tail.events[-1]["operation_id"] == f"op-{next_op}"
                torn += tail.damage is not None
            zygote.stdin.write("quit\n")
            zygote.stdin.flush()
            assert zygote.wait(timeout=10) == 0
        finally:
            if zygote.poll() is None:
                zygote.kill()

    print(f"{rounds} kills: {in_flight_written} after an unacknowledged write, {torn} torn tails")
    acked = _acked(acks)
    assert len(acked) > ROUNDS, "too few appends were acknowledged to mean anything"
    assert len(set(acked)) == len(acked), "an operation was acknowledged twice"

    report = FileStore(root).verify("crash")
    # A kill in the middle of a write may leave a torn tail: repairable, reported as tail.
    assert report.ok or [d["kind"] for d in report.damage] == ["tail"], report.damage

    ctx = make_ctx(FileStore(root))
    for i in range(10):
        assert add_todo(
            ctx, AddTodo(goal_id="crash", title=f"after {i}", operation_id=f"after-{i}")
        ).status == ("applied")
    store = FileStore(root)
    report = store.verify("crash")
    assert report.ok, report.damage
    ops = [e["operation_id"] for e in store.read("crash").events]
    assert len(ops) == len(set(ops)), "an operation was applied twice"
    numbered = [int(op[3:]) for op in ops if op.startswith("op-")]
    # Acknowledged ops are all there, exactly once, in order; at most one unacknowledged op
    # (the one in flight at the last kill) was written after them.
    assert numbered == list(range(1, len(numbered) + 1))
    assert set(acked) <= set(numbered)
    assert len(numbered) - max(acked) in (0, 1)
    assert ops[-10:] == [f"after-{i}" for i in range(10)]
    assert [e["seq"] for e in store.read("crash").events] == list(range(1, len(ops) + 1))
