"""The `Store` protocol: what the engine needs from any ledger backend.

Both `FileStore` (the default, JSONL on disk) and `MemoryStore` (its in-memory twin for tests)
implement it, and one contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from loopx.model.records import Mutable
from loopx.store.ledger import Cursor, Scan
from loopx.store.verify import VerifyReport


@dataclass(repr=False, eq=False)
class Repair(Mutable):
    """What a writer cut from a damaged tail, and where the cut bytes were kept."""

    offset: int
    length: int
    reason: str
    quarantine: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Writer(Protocol):
    """A goal held under its write lock, with any damaged tail already repaired."""

    cursor: Cursor
    repair: Repair | None
    tail: Scan | None  # the intact events read under the lock, after the caller's cursor

    def append(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stamp seq/prev/sum on `envelopes`, append them durably, and return them stamped."""
        ...


class StampingWriter:
    """A `Writer` at the end of `tail` (the events read under the lock), whose append stamps
    the envelopes after its cursor and hands the bytes to `_write`, which makes them durable
    or raises (the cursor then stays put)."""

    def __init__(self, goal_id: str, tail: Scan, repair: Repair | None):
        self._goal_id = goal_id
        self.cursor = tail.cursor
        self.repair = repair
        self.tail: Scan | None = tail

    def append(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data, stamped, cursor = stamp(envelopes, self.cursor)
        self._write(data, stamped, cursor)
        self.cursor = cursor
        return stamped

    def _write(self, data: bytes, stamped: list[dict[str, Any]], head: Cursor) -> None:
        """Append `data` (the lines of `stamped`) after `self.cursor`, leaving `head`."""
        raise NotImplementedError


class Store(Protocol):
    def goal_ids(self) -> list[str]: ...

    def exists(self, goal_id: str) -> bool: ...

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        """The intact events after `since` (from the start when None), and any tail damage.

        Raises `SnapshotStale` when `since` no longer names a line of this ledger.
        """
        ...

    def raw(self, goal_id: str) -> bytes:
        """Every byte of the ledger (b"" when there is none), read without a lock: it may
        end inside a write in flight."""
        ...

    def writing(self, goal_id: str, since: Cursor | None = None) -> AbstractContextManager[Writer]:
        """Lock the goal, repair a damaged tail, and read the events after `since`."""
        ...

    def verify(self, goal_id: str) -> VerifyReport: ...

    def load_snapshot(self, goal_id: str) -> bytes | None: ...

    def save_snapshot(self, goal_id: str, data: bytes) -> None: ...

    def load_index(self, goal_id: str) -> bytes | None:
        """The goal's operations index file (a cache beside the snapshot), or None."""
        ...

    def save_index(self, goal_id: str, data: bytes) -> None: ...

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, digest: str) -> bytes | None: ...

    def get_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        """`get_blob` of each of `digests` (by the digest as given), at once: what a store can
        read together it does (the file store reads its pack once, PostgreSQL one query)."""
        ...

    def reading_blobs(self) -> AbstractContextManager[None]:
        """A block in which many blobs are read (`get_blob`), which a store may make cheaper
        per blob (the file store opens each shard folder once); the same answers either way."""
        ...


class SnapshotStale(Exception):
    """A cached cursor no longer matches the ledger (internal: triggers a full replay)."""


def read_tail(read: Callable[[Cursor | None], Scan], since: Cursor | None) -> Scan:
    """`read(since)`, or the whole ledger when `since` no longer names one of its lines (a
    stale snapshot's cursor)."""
    try:
        return read(since)
    except SnapshotStale:
        return read(None)


def stamp(
    envelopes: list[dict[str, Any]], cursor: Cursor
) -> tuple[bytes, list[dict[str, Any]], Cursor]:
    """Give each envelope its seq, event id and chain link; return the encoded bytes.

    An event followed by another of the same operation is marked `more`, so a ledger cut
    between them (a power cut mid-write) reads as a torn tail, not as half an operation.
    """
    from loopx.store.ledger import encode_line, event_id

    seq, head, offset = cursor.seq, cursor.head, cursor.offset
    chunks: list[bytes] = []
    stamped: list[dict[str, Any]] = []
    following = [e.get("operation_id") for e in envelopes[1:]] + [None]
    for env, next_op in zip(envelopes, following, strict=False):
        seq += 1
        env = dict(env, seq=seq, prev=head)
        if next_op is not None and next_op == env.get("operation_id"):
            env["more"] = True
        else:
            env.pop("more", None)
        env["event_id"] = event_id(env["goal_id"], seq)
        line, head = encode_line(env)
        env["sum"] = head
        offset += len(line)
        chunks.append(line)
        stamped.append(env)
    return b"".join(chunks), stamped, Cursor(seq=seq, head=head, offset=offset)
