"""The snapshot cache on this host: `goals/<goal_id>/<mark>.state.json` under a cache folder,
and beside it `<mark>.operations` (the goal's operations index up to a cursor:
`loopx.engine.opindex`).

A snapshot is an optimisation, never the truth: one that cannot be read is replayed from the
ledger instead, and one that cannot be written is simply not kept. It is trusted as it is
once its cursor matches the ledger's, and a cursor can be worked out from a ledger; so a
snapshot counts only on the host that wrote it: `<mark>` is a digest of the identity
(device, inode, change time) of the cache folder's `host` file, made on first use, which a
checkout or copy of the folder (a `.loopx/cache/` committed with a forged state) cannot
reproduce, so such a snapshot is never read.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from loopx.model.ids import check_id
from loopx.store import fsio

STATE, OPERATIONS = "state.json", "operations"
HOST = "host"


class SnapshotCache:
    def __init__(self, folder: Path):
        self.folder = folder
        self._mark: str | None = None

    def path(self, goal_id: str, name: str = STATE) -> Path | None:
        """Where this host keeps the goal's `name`; None when the cache has no host mark."""
        if self._mark is None:
            self._mark = host_mark(self.folder)
        if not self._mark:
            return None
        return self.folder / "goals" / check_id(goal_id, "goal_id") / f"{self._mark}.{name}"

    def load(self, goal_id: str, name: str = STATE) -> bytes | None:
        try:
            path = self.path(goal_id, name)
            return None if path is None else fsio.current().read_file(path)
        except OSError:
            return None  # the ledger is replayed instead

    def save(self, goal_id: str, data: bytes, name: str = STATE) -> None:
        fs = fsio.current()
        try:
            path = self.path(goal_id, name)
            if path is None:
                return
            fs.makedirs(path.parent)
            fs.write_atomic(path, data)
        except OSError:
            pass  # a failure to write the cache is never an error


def host_mark(folder: Path, *, create: bool = True) -> str:
    """A digest of the identity of the cache folder `folder`'s `host` file (made when
    missing and `create`), or '' when there is none to be had (a read-only folder: nothing
    is cached). Every cache whose key a checkout could work out is bound to it."""
    fs, path = fsio.current(), folder / HOST
    for _ in range(2):
        try:
            st = fs.lstat(path)
            if st is None:
                if not create:
                    return ""
                fs.makedirs(folder)
                # Made empty, in the one call that creates it: a write after the create
                # changed its ctime, so a process that read it in between took another mark
                # and its caches counted for nothing (a cold build's fold workers raced so).
                fsio.write_new(path, b"")
                continue
        except FileExistsError:
            continue  # another process made it: read its identity
        except OSError:
            return ""
        if not stat.S_ISREG(st.st_mode):
            return ""
        identity = f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}".encode()
        return hashlib.sha256(identity).hexdigest()[:16]
    return ""
