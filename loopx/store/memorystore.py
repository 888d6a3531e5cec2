"""`MemoryStore`: the in-memory twin of `FileStore`, same bytes and rules, no files."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from loopx.model.ids import check_id
from loopx.store.base import Repair, SnapshotStale, StampingWriter, read_tail
from loopx.store.blobs import blob_ref
from loopx.store.ledger import Cursor, Scan, cursor_holds, scan
from loopx.store.verify import VerifyReport, verify_buffer


class MemoryWriter(StampingWriter):
    def __init__(self, store: MemoryStore, goal_id: str, tail: Scan, repair: Repair | None):
        super().__init__(goal_id, tail, repair)
        self._store = store

    def _write(self, data: bytes, stamped: list[dict[str, Any]], head: Cursor) -> None:
        self._store.ledgers[self._goal_id] += data


class MemoryStore:
    def __init__(self) -> None:
        self.ledgers: dict[str, bytearray] = defaultdict(bytearray)
        self.quarantined: dict[str, list[bytes]] = defaultdict(list)
        self.snapshots: dict[str, bytes] = {}
        self.indexes: dict[str, bytes] = {}  # each goal's operations index file
        self.blobs: dict[str, bytes] = {}
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)

    def goal_ids(self) -> list[str]:
        return sorted(g for g, buf in self.ledgers.items() if buf)

    def exists(self, goal_id: str) -> bool:
        return bool(self.ledgers.get(check_id(goal_id, "goal_id")))

    def raw(self, goal_id: str) -> bytes:
        return bytes(self.ledgers.get(goal_id, b""))

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        start = since or Cursor()
        buf = self.raw(check_id(goal_id, "goal_id"))
        if start.offset and not cursor_holds(lambda at, size: buf[at : at + size], start):
            raise SnapshotStale()
        return scan(buf[start.offset :], start, goal_id=goal_id)

    @contextmanager
    def writing(self, goal_id: str, since: Cursor | None = None) -> Iterator[MemoryWriter]:
        check_id(goal_id, "goal_id")
        with self._locks[goal_id]:
            result = read_tail(lambda start: self.read(goal_id, start), since)
            repair = None
            if result.damage is not None:
                offset = result.cursor.offset
                buf = self.ledgers[goal_id]
                self.quarantined[goal_id].append(bytes(buf[offset:]))
                del buf[offset:]
                repair = Repair(
                    offset=offset,
                    length=result.damage.length,
                    reason=result.damage.reason,
                    quarantine=f"memory:{goal_id}/{offset}",
                )
            yield MemoryWriter(self, goal_id, result, repair)

    def verify(self, goal_id: str) -> VerifyReport:
        return verify_buffer(goal_id, self.raw(goal_id))

    def load_snapshot(self, goal_id: str) -> bytes | None:
        return self.snapshots.get(goal_id)

    def save_snapshot(self, goal_id: str, data: bytes) -> None:
        self.snapshots[goal_id] = data

    def load_index(self, goal_id: str) -> bytes | None:
        return self.indexes.get(goal_id)

    def save_index(self, goal_id: str, data: bytes) -> None:
        self.indexes[goal_id] = data

    def put_blob(self, data: bytes) -> str:
        ref = blob_ref(data)
        self.blobs[ref] = data
        return ref

    def get_blob(self, digest: str) -> bytes | None:
        return self.blobs.get(digest if digest.startswith("sha256:") else "sha256:" + digest)

    def get_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        return {digest: self.get_blob(digest) for digest in digests}

    def reading_blobs(self) -> AbstractContextManager[None]:
        return nullcontext()
