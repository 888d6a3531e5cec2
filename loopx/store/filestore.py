"""`FileStore`: the default store, one append-only JSONL ledger per goal under `.loopx/`.

All file access goes through `loopx.store.fsio` (the fault-injection seam), and every public
method maps `OSError` to `StorageError` (`io_error`) there. Writers hold the goal's exclusive
lock; readers take no lock, and re-read under a shared lock only when they see damage, so a
write in flight is never reported as a torn tail.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from loopx.model.errors import LedgerDamage
from loopx.model.ids import check_id
from loopx.store import fsio
from loopx.store.base import Repair, SnapshotStale, StampingWriter, read_tail
from loopx.store.blobs import BlobStore
from loopx.store.ledger import Cursor, Scan, cursor_holds, digest, scan
from loopx.store.snapshots import OPERATIONS, SnapshotCache
from loopx.store.verify import VerifyReport, verify_buffer

LEDGER = "ledger.jsonl"
LOCK = "lock"
QUARANTINE = "quarantine"
GITIGNORE = (
    "# loopx: private content, caches and quarantined ledger tails never leave this machine\n"
    "private/\ncache/\ngoals/*/quarantine/\n"
)
# Written into each quarantine folder too, so projects created before the line above was
# added never commit a quarantined tail (it may hold whatever the damaged bytes were).
QUARANTINE_IGNORE = b"# loopx: quarantined ledger tails stay on this machine\n*\n"


class FileWriter(StampingWriter):
    def __init__(self, store: FileStore, goal_id: str, tail: Scan, repair: Repair | None):
        super().__init__(goal_id, tail, repair)
        self._store = store

    def _write(self, data: bytes, stamped: list[dict[str, Any]], head: Cursor) -> None:
        """Append durably (write + fsync) or not at all: a failure cuts back what it wrote."""
        with fsio.guard("append to the ledger"):
            self._store._append(self._goal_id, data, self.cursor.offset)


class FileStore:
    """Ledgers in `<root>/.loopx/goals/<goal_id>/ledger.jsonl`, blobs and caches beside them."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.state_dir = self.root / ".loopx"
        fsio.confine(self.root)  # nothing under the project is reached through a link
        self.blobs = BlobStore(self.state_dir / "private" / "blobs")
        self._cache = SnapshotCache(self.state_dir / "cache")

    # -- layout -------------------------------------------------------------------------

    def init(self) -> bool:
        """Create the `.loopx/` layout; return False when it already existed."""
        fs = fsio.current()
        with fsio.guard("create the .loopx folder"):
            existed = self.state_dir.is_dir()
            for sub in ("goals", "private/blobs", "cache"):
                fs.makedirs(self.state_dir / sub, sync=True)
            ignore = self.state_dir / ".gitignore"
            if not ignore.exists():
                fs.write_atomic(ignore, GITIGNORE.encode(), sync=True)
        return not existed

    def goal_dir(self, goal_id: str) -> Path:
        return self.state_dir / "goals" / check_id(goal_id, "goal_id")

    def ledger_path(self, goal_id: str) -> Path:
        return self.goal_dir(goal_id) / LEDGER

    def quarantine_dir(self, goal_id: str) -> Path:
        return self.goal_dir(goal_id) / QUARANTINE

    def goal_ids(self) -> list[str]:
        """Every goal with a non-empty ledger. A goal folder or ledger that is a link or a
        special file is listed too (never followed), so reading it refuses it loudly."""
        goals = self.state_dir / "goals"
        fs = fsio.current()
        with fsio.guard("list the goals"):
            if not fs.existing_dir(goals):
                return []
            return [
                name
                for name, kind in fs.listdir(goals)
                if (kind == "dir" and self._listed(goals / name / LEDGER))
                or (kind in ("link", "other") and not name.startswith("."))
            ]

    def exists(self, goal_id: str) -> bool:
        with fsio.guard("read the ledger"):
            return self._listed(self.ledger_path(goal_id))

    @staticmethod
    def _listed(ledger: Path) -> bool:
        info = fsio.current().lstat(ledger)
        return info is not None and (not stat.S_ISREG(info.st_mode) or info.st_size > 0)

    # -- reading ------------------------------------------------------------------------

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        """Lock-free read; damage seen without the lock is confirmed under a shared lock,
        since it may be a write still in flight."""
        start = since or Cursor()
        try:
            result = scan(self._bytes(goal_id, start), start, goal_id=goal_id)
            if result.damage is None:
                return result
        except LedgerDamage:
            pass
        with self._shared(goal_id):
            return self._scan_locked(goal_id, since)

    def _bytes(self, goal_id: str, start: Cursor) -> bytes:
        """The ledger's bytes after `start` (SnapshotStale when `start` is not a line end)."""
        fs = fsio.current()
        path = self.ledger_path(goal_id)
        with fsio.guard("read the ledger"):
            try:
                fd = fs.open(path, os.O_RDONLY)
            except FileNotFoundError:
                if start.offset:
                    raise SnapshotStale() from None
                return b""
            try:
                if start.offset and not cursor_holds(
                    lambda at, size: fs.pread(fd, size, at), start
                ):
                    raise SnapshotStale()
                return fs.read_from(fd, start.offset)
            finally:
                fs.close(fd)

    def raw(self, goal_id: str) -> bytes:
        return self._bytes(goal_id, Cursor())

    @contextlib.contextmanager
    def reading(self, goal_id: str) -> Iterator[Callable[[memoryview, int], int]]:
        """The ledger's bytes, read without a lock as `raw` reads them, for a reader that
        takes them a window at a time into a buffer of its own (`loopx.store.bulk`):
        `read_at(into, offset)` fills `into` from `offset` and says how many it read."""
        fs = fsio.current()
        path = self.ledger_path(goal_id)
        with fsio.guard("read the ledger"):
            fd = None
            with contextlib.suppress(FileNotFoundError):
                fd = fs.open(path, os.O_RDONLY)
            if fd is None:  # no ledger: no bytes
                yield lambda into, offset: 0
                return
            try:
                fs.check_size(fd)
                yield lambda into, offset: fs.preadinto(fd, into, offset)
            finally:
                fs.close(fd)

    def verify(self, goal_id: str) -> VerifyReport:
        report = verify_buffer(goal_id, self.raw(goal_id))
        if report.ok:
            return report
        with self._shared(goal_id):
            return verify_buffer(goal_id, self.raw(goal_id))

    @contextlib.contextmanager
    def _shared(self, goal_id: str) -> Iterator[None]:
        """Wait out any writer in flight (readers only; writers already hold the lock)."""
        lock = self.goal_dir(goal_id) / LOCK
        if not lock.parent.is_dir():
            yield
            return
        with fsio.guard("lock the goal's ledger"), fsio.current().locked(lock, shared=True):
            yield

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, goal_id: str, since: Cursor | None = None) -> Iterator[FileWriter]:
        """Lock the goal, repair a damaged tail, and yield a writer positioned at the head.

        `since` is a cursor the caller already trusts (from its snapshot): only the bytes
        after it are re-read. The caller gets the tail's events as `writer.tail`.
        """
        goal_dir = self.goal_dir(goal_id)
        fs = fsio.current()
        with contextlib.ExitStack() as stack:
            with fsio.guard("lock the goal's ledger"):
                fs.makedirs(goal_dir, sync=True)
                stack.enter_context(fs.locked(goal_dir / LOCK))
            result = read_tail(lambda start: self._scan_locked(goal_id, start), since)
            repair = None
            if result.damage is not None:
                with fsio.guard("quarantine a damaged ledger tail"):
                    repair = self._quarantine(goal_id, result.cursor.offset, result.damage.reason)
            yield FileWriter(self, goal_id, result, repair)

    def _scan_locked(self, goal_id: str, since: Cursor | None) -> Scan:
        start = since or Cursor()
        return scan(self._bytes(goal_id, start), start, goal_id=goal_id)

    def _append(self, goal_id: str, data: bytes, offset: int) -> None:
        """Append `data` at `offset` (the locked head) and fsync; on failure cut it back."""
        fs = fsio.current()
        path = self.ledger_path(goal_id)
        fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fs.size(fd) != offset:
                raise LedgerDamage(
                    "the ledger changed under its lock (written by something other than loopx?)",
                    code="ledger_changed",
                    offset=offset,
                )
            try:
                fs.write_all(fd, data)
                fs.fsync(fd)
                if offset == 0:  # a new ledger file: make its directory entry durable too
                    fs.sync_dir(path.parent)
            except BaseException:
                # Never leave a partial append behind: cut back to the last acknowledged
                # byte. If even that fails, the next writer quarantines the torn tail.
                with contextlib.suppress(OSError):
                    fs.truncate(fd, offset)
                    fs.fsync(fd)
                raise
        finally:
            with contextlib.suppress(OSError):  # the data is durable (or already cut back)
                fs.close(fd)

    def _quarantine(self, goal_id: str, offset: int, reason: str) -> Repair:
        """Keep the damaged tail in `quarantine/` (durably), then cut it from the ledger."""
        fs = fsio.current()
        path = self.ledger_path(goal_id)
        damaged = fs.read_file(path, offset)
        qdir = self.quarantine_dir(goal_id)
        fs.makedirs(qdir, sync=True)
        if not fs.is_file(qdir / ".gitignore"):
            fs.write_atomic(qdir / ".gitignore", QUARANTINE_IGNORE, sync=True)
        # Named by offset and content: a repeat of the same repair (after a crash) rewrites
        # the same file; different bytes cut at the same offset never overwrite earlier ones.
        qpath = qdir / f"{offset:012d}-{digest(damaged)[:16]}.bin"
        fs.write_atomic(qpath, damaged, sync=True)
        fd = fs.open(path, os.O_WRONLY, 0o644)
        try:
            fs.truncate(fd, offset)
            fs.fsync(fd)
        finally:
            with contextlib.suppress(OSError):
                fs.close(fd)
        rel = qpath.relative_to(self.root).as_posix()
        return Repair(offset=offset, length=len(damaged), reason=reason, quarantine=rel)

    # -- cache and blobs ----------------------------------------------------------------

    def load_snapshot(self, goal_id: str) -> bytes | None:
        return self._cache.load(goal_id)

    def save_snapshot(self, goal_id: str, data: bytes) -> None:
        self._cache.save(goal_id, data)

    def load_index(self, goal_id: str) -> bytes | None:
        return self._cache.load(goal_id, OPERATIONS)

    def save_index(self, goal_id: str, data: bytes) -> None:
        self._cache.save(goal_id, data, OPERATIONS)

    def put_blob(self, data: bytes) -> str:
        with fsio.guard("store a private blob"):
            return self.blobs.put(data)

    def get_blob(self, digest: str) -> bytes | None:
        try:  # `fsio.guard`, without a context a call: a scan reads thousands
            return self.blobs.get(digest)
        except OSError as err:
            raise fsio.storage_error("read a private blob", err) from err

    def get_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        try:
            return self.blobs.get_many(digests)
        except OSError as err:
            raise fsio.storage_error("read a private blob", err) from err

    def reading_blobs(self) -> AbstractContextManager[None]:
        return self.blobs.reading()
