"""A goal's operations index file: the records of `OpIndex` up to a cursor of its ledger, kept
beside the snapshot (`Store.save_index`) and read only when a write needs them (issue 19).

Reads never need the index (only a write with an explicit operation id, or the importers,
look an operation up), and at 50,000 events it is 5 MB of the 7 MB a snapshot was: so the
snapshot holds only the records since the cursor the file covers (its `operations.base`),
and a load without a snapshot builds none. The file is a cache like the snapshot, never the
truth: it is used only when its header names the same cursor (seq, head and offset, so the
same chain of lines) and the same format, and its records hash to the sum it states;
otherwise the records are rebuilt from the ledger, every line checked again, and the file
rewritten.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import orjson

from loopx import __version__
from loopx.model.errors import LedgerDamage
from loopx.store.base import Store
from loopx.store.ledger import Cursor, scan

INDEX_FORMAT = f"loopx.operations/1+{__version__}"


def encode(cursor: Cursor, records: bytes) -> bytes:
    header = {
        "format": INDEX_FORMAT,
        "cursor": {"seq": cursor.seq, "head": cursor.head, "offset": cursor.offset},
        "sum": hashlib.sha256(records).hexdigest(),
    }
    return orjson.dumps(header) + b"\n" + records


def decode(raw: bytes | None, cursor: Cursor) -> bytes | None:
    """The records of an index file written for `cursor`, or None (missing, another cursor,
    another version, or damaged)."""
    if not raw:
        return None
    end = raw.find(b"\n")
    try:
        header = orjson.loads(raw[:end] if end >= 0 else raw)
        if (
            end < 0
            or type(header) is not dict
            or header.get("format") != INDEX_FORMAT
            or Cursor(**header["cursor"]) != cursor
        ):
            return None
    except (orjson.JSONDecodeError, TypeError, KeyError):
        return None
    records = raw[end + 1 :]
    return records if hashlib.sha256(records).hexdigest() == header.get("sum") else None


def loader(store: Store, goal_id: str, base: Cursor) -> Callable[[], bytes]:
    """What gives the records of `goal_id`'s ledger up to `base`: its index file when that is
    current, else rebuilt from the ledger (and the file written again)."""

    def load() -> bytes:
        records = decode(store.load_index(goal_id), base)
        if records is None:
            records = rebuild(store, goal_id, base)
            save(store, goal_id, base, records)
        return records

    return load


def save(store: Store, goal_id: str, cursor: Cursor, records: bytes) -> None:
    store.save_index(goal_id, encode(cursor, records))  # a cache: a failed write is not kept


def rebuild(store: Store, goal_id: str, base: Cursor) -> bytes:
    """The records of the ledger's events up to `base`, read again from its bytes: in bulk
    (`loopx.store.bulk`: every line's sum, chain, seq, goal and envelope checked) when the
    bulk read vouches for them, else the careful way (`scan` + `replay`), which reports
    altered history with its code and offset. `LedgerDamage` when the ledger no longer
    holds the line `base` names."""
    from loopx.state.bulkfold import index_of
    from loopx.state.fold import replay
    from loopx.store.bulk import BulkRead, Unchecked

    buf = store.raw(goal_id)
    read = BulkRead(buf[: base.offset], goal_id)
    try:
        records = index_of(read)
        if read.cursor == base:
            return records
    except Unchecked:
        pass
    found = scan(buf, Cursor(), goal_id=goal_id)
    events = [event for event in found.events if event["seq"] <= base.seq]
    if not events or events[-1]["seq"] != base.seq or events[-1]["sum"] != base.head:
        raise LedgerDamage(
            "the ledger no longer holds the line its snapshot was taken at",
            offset=base.offset,
        )
    state = replay(events)
    return state.operations.dump() if state is not None else b""
