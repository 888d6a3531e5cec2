"""Child processes for the crash and race tests (run as a script, never collected by pytest).

    python worker.py zygote ROOT GOAL ACKS        fork crash children on request (see below)
    python worker.py MODE ROOT GOAL ID N GO       one racing process; waits for file GO

Race modes print one JSON line when done. The zygote imports loopx once and then, for each
`spawn N` line on stdin, forks a child that appends todos `op-N`, `op-N+1`, … to GOAL and
appends each operation id to the file ACKS only after its receipt came back; it answers with
the child's pid. The parent test SIGKILLs that child at a random moment.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from loopx.engine.clock import FixedClock
from loopx.engine.commands import AddTodo, ClaimTodo, SetQuota
from loopx.engine.core import Context, load_state
from loopx.engine.goals import set_quota
from loopx.engine.todos import add_todo, claim_todo
from loopx.model.errors import LoopxError
from loopx.store.filestore import FileStore

T0 = "2026-03-01T12:00:00Z"


def context(root: str, agent: str = "agent-a", session: str = "s1") -> Context:
    return Context(FileStore(root), FixedClock(T0, 0), agent_id=agent, session_id=session)


def crash_child(root: str, goal: str, acks: str, start: int) -> None:
    ctx = context(root)
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    n = start
    while True:
        op = f"op-{n}"
        add_todo(ctx, AddTodo(goal_id=goal, title=f"todo number {n}", operation_id=op))
        os.write(fd, f"{op}\n".encode())  # acknowledged: the receipt came back
        n += 1


def zygote(root: str, goal: str, acks: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            return
        start = int(cmd[1])
        pid = os.fork()
        if pid == 0:
            try:
                crash_child(root, goal, acks, start)
            finally:
                os._exit(1)  # only reached if an append raised: the parent sees it as a stop
        print(pid, flush=True)


def wait_for(go: str) -> None:
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.0005)


def race(mode: str, root: str, goal: str, ident: int, n: int, go: str) -> dict[str, Any]:
    # The same client retrying from several processes: one agent, one request.
    agent = "agent-shared" if mode == "same-op" else f"agent-{ident}"
    ctx = context(root, agent=agent, session=f"s{ident}")
    out: dict[str, Any] = {"applied": 0, "errors": []}
    wait_for(go)
    if mode == "append":
        # quota.set: the lightest event, so the cost measured is the store's, not the state's
        for i in range(n):
            result = set_quota(
                ctx, SetQuota(goal_id=goal, quota=ident * 1000 + i, operation_id=f"w{ident}-{i}")
            )
            out["applied"] += result.status == "applied"
    elif mode == "cas":
        out["seen"] = []
        for i in range(n):
            seen = load_state(ctx.store, goal).cursor.seq
            try:
                result = set_quota(
                    ctx,
                    SetQuota(
                        goal_id=goal,
                        quota=ident * 1000 + i,
                        operation_id=f"cas{ident}-{i}",
                        expected_revision=seen,
                    ),
                )
            except LoopxError as err:
                out["errors"].append([err.code, err.details.get("current_revision"), seen])
                continue
            out["applied"] += 1
            out["seen"].append([seen, result.receipt["revision"]])
    elif mode == "same-op":
        result = add_todo(
            ctx, AddTodo(goal_id=goal, title="the same request", operation_id="op-shared")
        )
        out["status"], out["receipt"] = result.status, result.receipt
    elif mode == "claim":
        out["won"] = []
        for i in range(n):
            try:
                claim_todo(
                    ctx,
                    ClaimTodo(
                        goal_id=goal, todo_id=f"todo-{i + 1}", operation_id=f"claim{ident}-{i}"
                    ),
                )
                out["won"].append(i + 1)
            except LoopxError as err:
                out["errors"].append(err.code)
    elif mode == "read":
        out["reads"] = 0
        store = FileStore(root)
        while not os.path.exists(go + ".stop"):
            report = store.verify(goal)
            loaded = load_state(store, goal)
            out["reads"] += 1
            if not report.ok or loaded.damage is not None:
                out["errors"].append(report.damage or loaded.damage)
            time.sleep(0.005)
    return out


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "zygote":
        zygote(*argv[1:4])
        return
    root, goal, ident, n, go = argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5]
    print(json.dumps(race(mode, root, goal, ident, n, go)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
