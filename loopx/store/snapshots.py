"""The snapshot cache on this host: `goals/<goal_id>/state.json` under a cache folder, and
beside it `operations` (the goal's operations index up to a cursor: `loopx.engine.opindex`).

A snapshot is an optimisation, never the truth: one that cannot be read is replayed from the
ledger instead, and one that cannot be written is simply not kept.
"""

from __future__ import annotations

from pathlib import Path

from loopx.model.ids import check_id
from loopx.store import fsio

STATE, OPERATIONS = "state.json", "operations"


class SnapshotCache:
    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, goal_id: str, name: str = STATE) -> Path:
        return self.folder / "goals" / check_id(goal_id, "goal_id") / name

    def load(self, goal_id: str, name: str = STATE) -> bytes | None:
        try:
            return fsio.current().read_file(self.path(goal_id, name))
        except OSError:
            return None  # the ledger is replayed instead

    def save(self, goal_id: str, data: bytes, name: str = STATE) -> None:
        path = self.path(goal_id, name)
        fs = fsio.current()
        try:
            fs.makedirs(path.parent)
            fs.write_atomic(path, data)
        except OSError:
            pass  # a failure to write the cache is never an error
