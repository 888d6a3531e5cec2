"""One simulated host: `python tests/pg_worker.py ROOT GOAL AGENT COUNT`.

Opens the project at ROOT (its own folder) through the same `open_store` the CLI uses,
waits for ROOT/go, then makes COUNT separate appends to GOAL, each under the goal's lock
with its own operation id (the store's write path without the engine's folding, so the
race is between writers, not between snapshot encoders); prints how many it appended.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

from loopx.store.select import close, open_store


def envelope(goal: str, agent: str, n: int) -> dict[str, object]:
    op = f"{agent}-{n}"
    return {
        "operation_id": op,
        "op_hash": hashlib.sha256(op.encode()).hexdigest(),
        "type": "note.added",
        "v": 1,
        "goal_id": goal,
        "actor": {"agent_id": agent, "session_id": agent},
        "recorded_at": "2026-03-01T12:00:00Z",
        "visibility": "team",
        "data": {"note_id": op, "kind": "note", "text": f"{agent} note {n}"},
    }


def main(root: str, goal: str, agent: str, count: int) -> None:
    store = open_store(Path(root))
    store.goal_ids()  # connect before the start line
    go = Path(root) / "go"
    while not go.exists():
        time.sleep(0.005)
    appended, cursor = 0, None
    try:
        for n in range(count):
            # From the last head this host saw, as the engine does with its snapshot: only
            # the other hosts' events since then are read under the lock.
            with store.writing(goal, cursor) as writer:
                appended += len(writer.append([envelope(goal, agent, n)]))
                cursor = writer.cursor
    finally:
        close(store)
    print(appended)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
