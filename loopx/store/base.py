"""The `Store` protocol: what the engine needs from any ledger backend.

Both `FileStore` (the default, JSONL on disk) and `MemoryStore` (its in-memory twin for tests)
implement it, and one contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from loopx.store.ledger import Cursor, Scan


@dataclass
class Repair:
    """What a writer cut from a damaged tail, and where the cut bytes were kept."""

    offset: int
    length: int
    reason: str
    quarantine: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VerifyReport:
    goal_id: str
    events: int
    size: int
    head: str
    ok: bool
    damage: list[dict[str, Any]] = field(default_factory=list)

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

    def writing(self, goal_id: str, since: Cursor | None = None) -> AbstractContextManager[Writer]:
        """Lock the goal, repair a damaged tail, and read the events after `since`."""
        ...

    def verify(self, goal_id: str) -> VerifyReport: ...

    def load_snapshot(self, goal_id: str) -> bytes | None: ...

    def save_snapshot(self, goal_id: str, data: bytes) -> None: ...

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, digest: str) -> bytes | None: ...


class SnapshotStale(Exception):
    """A cached cursor no longer matches the ledger (internal: triggers a full replay)."""


def read_tail(read: Callable[[Cursor | None], Scan], since: Cursor | None) -> Scan:
    """`read(since)`, or the whole ledger when `since` no longer names one of its lines (a
    stale snapshot's cursor)."""
    try:
        return read(since)
    except SnapshotStale:
        return read(None)


def verify_buffer(goal_id: str, buf: bytes) -> VerifyReport:
    """Walk a whole ledger buffer and report every problem; never raises for damage."""
    from loopx.model.errors import LedgerDamage
    from loopx.store.ledger import scan

    try:
        result = scan(buf, Cursor(), goal_id=goal_id)
    except LedgerDamage as err:
        return VerifyReport(
            goal_id=goal_id,
            events=0,
            size=len(buf),
            head="",
            ok=False,
            damage=[
                {"kind": "corrupt", "offset": err.details.get("offset"), "reason": err.message}
            ],
        )
    damage: list[dict[str, Any]] = _data_problems(result.events, buf)
    if result.damage is not None:
        damage.append({"kind": "tail", **result.damage.to_dict()})
    return VerifyReport(
        goal_id=goal_id,
        events=len(result.events),
        size=len(buf),
        head=result.cursor.head,
        ok=not damage,
        damage=damage,
    )


def _data_problems(events: list[dict[str, Any]], buf: bytes) -> list[dict[str, Any]]:
    """Events whose data does not match their type's schema.

    The checksum and chain prove a line was not damaged, not that loopx wrote it: a
    hand-made line can be intact and still carry data no write path would accept. Reads
    do not re-validate every event (a replay must stay cheap); `verify` does.
    """
    from loopx.model.jsoncheck import DataError, check_data

    problems: list[dict[str, Any]] = []
    offset = 0
    for i, event in enumerate(events):
        start, offset = offset, buf.index(b"\n", offset) + 1
        event_type = event["type"]
        if event.get("more") is True and (
            i + 1 == len(events) or events[i + 1]["operation_id"] != event["operation_id"]
        ):
            problems.append(
                {
                    "kind": "invalid",
                    "offset": start,
                    "seq": event["seq"],
                    "reason": "an operation's events stop before its last one",
                }
            )
        try:
            if check_data(event_type, event["data"]) is None:
                from loopx.model.events import EVENT_MODELS, validate_data

                if event_type in EVENT_MODELS:  # unknown types (a newer loopx) are carried
                    validate_data(event_type, event["data"])
        except ValueError as err:  # DataError names the field; pydantic's would echo values
            where = f": {err}" if isinstance(err, DataError) else ""
            problems.append(
                {
                    "kind": "invalid",
                    "offset": start,
                    "seq": event["seq"],
                    "reason": f"{event_type} data does not match its schema{where}",
                }
            )
            if len(problems) == 20:
                break
    return problems


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
