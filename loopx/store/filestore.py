"""`FileStore`: the default store, one append-only JSONL ledger per goal under `.loopx/`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loopx.model.ids import check_id
from loopx.store import fsio
from loopx.store.base import Repair, SnapshotStale, VerifyReport, stamp, verify_buffer
from loopx.store.blobs import BlobStore
from loopx.store.ledger import Cursor, Scan, scan

LEDGER = "ledger.jsonl"
GITIGNORE = "# loopx: private content and caches never leave this machine\nprivate/\ncache/\n"


class FileWriter:
    def __init__(self, store: FileStore, goal_id: str, cursor: Cursor, repair: Repair | None):
        self._store = store
        self._goal_id = goal_id
        self.cursor = cursor
        self.repair = repair
        self.tail: Scan | None = None

    def append(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data, stamped, cursor = stamp(envelopes, self.cursor)
        fs = fsio.current()
        path = self._store.ledger_path(self._goal_id)
        fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            try:
                fs.write_all(fd, data)
                fs.fsync(fd)
            except BaseException:
                # Never leave a partial append behind: cut back to the last acknowledged byte.
                try:
                    fs.truncate(fd, self.cursor.offset)
                    fs.fsync(fd)
                except OSError:
                    pass  # the next writer quarantines the torn tail instead
                raise
        finally:
            fs.close(fd)
        self.cursor = cursor
        return stamped


class FileStore:
    """Ledgers in `<root>/.loopx/goals/<goal_id>/ledger.jsonl`, blobs and caches beside them."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.state_dir = self.root / ".loopx"
        self.blobs = BlobStore(self.state_dir / "private" / "blobs")

    # -- layout -------------------------------------------------------------------------

    def init(self) -> bool:
        """Create the `.loopx/` layout; return False when it already existed."""
        existed = self.state_dir.is_dir()
        for sub in ("goals", "private/blobs", "cache"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        ignore = self.state_dir / ".gitignore"
        if not ignore.exists():
            fsio.current().write_atomic(ignore, GITIGNORE.encode(), sync=True)
        return not existed

    def goal_dir(self, goal_id: str) -> Path:
        return self.state_dir / "goals" / check_id(goal_id, "goal_id")

    def ledger_path(self, goal_id: str) -> Path:
        return self.goal_dir(goal_id) / LEDGER

    def goal_ids(self) -> list[str]:
        goals = self.state_dir / "goals"
        if not goals.is_dir():
            return []
        return sorted(
            p.name for p in goals.iterdir() if (p / LEDGER).is_file() and p.stat().st_size
        )

    def exists(self, goal_id: str) -> bool:
        path = self.ledger_path(goal_id)
        return path.is_file() and path.stat().st_size > 0

    # -- reading ------------------------------------------------------------------------

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        start = since or Cursor()
        path = self.ledger_path(goal_id)
        try:
            with open(path, "rb") as fh:
                if start.offset:
                    _check_cursor(fh, start)
                    fh.seek(start.offset)
                buf = fh.read()
        except FileNotFoundError:
            if start.offset:
                raise SnapshotStale() from None
            buf = b""
        return scan(buf, start, goal_id=goal_id)

    def raw(self, goal_id: str) -> bytes:
        try:
            return self.ledger_path(goal_id).read_bytes()
        except FileNotFoundError:
            return b""

    def verify(self, goal_id: str) -> VerifyReport:
        return verify_buffer(goal_id, self.raw(goal_id))

    # -- writing ------------------------------------------------------------------------

    @contextmanager
    def writing(self, goal_id: str, since: Cursor | None = None) -> Iterator[FileWriter]:
        """Lock the goal, repair a damaged tail, and yield a writer positioned at the head.

        `since` is a cursor the caller already trusts (from its snapshot): only the bytes
        after it are re-read. The caller gets the tail's events as `writer.tail`.
        """
        goal_dir = self.goal_dir(goal_id)
        goal_dir.mkdir(parents=True, exist_ok=True)
        fs = fsio.current()
        with fs.locked(goal_dir / "lock"):
            try:
                result = self.read(goal_id, since)
            except SnapshotStale:
                result = self.read(goal_id, None)
            repair = None
            if result.damage is not None:
                repair = self._quarantine(goal_id, result.cursor.offset, result.damage.reason)
            writer = FileWriter(self, goal_id, result.cursor, repair)
            writer.tail = result
            yield writer

    def _quarantine(self, goal_id: str, offset: int, reason: str) -> Repair:
        fs = fsio.current()
        path = self.ledger_path(goal_id)
        with open(path, "rb") as fh:
            fh.seek(offset)
            damaged = fh.read()
        qdir = self.goal_dir(goal_id) / "quarantine"
        qdir.mkdir(exist_ok=True)
        qpath = qdir / f"{offset:012d}.bin"
        fs.write_atomic(qpath, damaged, sync=True)
        fd = fs.open(path, os.O_WRONLY, 0o644)
        try:
            fs.truncate(fd, offset)
            fs.fsync(fd)
        finally:
            fs.close(fd)
        rel = qpath.relative_to(self.root).as_posix()
        return Repair(offset=offset, length=len(damaged), reason=reason, quarantine=rel)

    # -- cache and blobs ----------------------------------------------------------------

    def _snapshot_path(self, goal_id: str) -> Path:
        return self.state_dir / "cache" / "goals" / check_id(goal_id, "goal_id") / "state.json"

    def load_snapshot(self, goal_id: str) -> bytes | None:
        try:
            return self._snapshot_path(goal_id).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def save_snapshot(self, goal_id: str, data: bytes) -> None:
        path = self._snapshot_path(goal_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fsio.current().write_atomic(path, data)
        except OSError:
            pass  # the cache is an optimisation; a failure to write it is never an error

    def put_blob(self, data: bytes) -> str:
        return self.blobs.put(data)

    def get_blob(self, digest: str) -> bytes | None:
        return self.blobs.get(digest)


def _check_cursor(fh: Any, cursor: Cursor) -> None:
    """Confirm the line ending at `cursor.offset` carries `cursor.head`, else SnapshotStale."""
    if cursor.offset < 67:
        raise SnapshotStale()
    fh.seek(cursor.offset - 67)
    tail = fh.read(67)
    if len(tail) != 67 or tail[-1:] != b"\n" or tail[:-3].decode("ascii", "replace") != cursor.head:
        raise SnapshotStale()
