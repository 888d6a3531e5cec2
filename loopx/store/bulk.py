"""The bulk read of a whole ledger: every line checked as `scan` checks it, streamed as typed
envelopes into a fold, none of them kept (issue 19: a cold `status` of 50,000 events).

Each line's checks are `scan`'s: its layout (`,"sum":"<hex>"}` at its end), its sha256 over
its canonical body, the chain (`seq` one more than the line before, `prev` its sum), its
goal, its envelope (every field of its type: the typed decode of `TypedEnvelope`) and the depth
limit (a `TypedEnvelope` nests at most `DATA_DEPTH` + 1 deep). The bulk read only vouches for
the common case, a whole ledger of intact, current (`v` 1) lines that ends at a line end
after a complete operation: at any other line it raises `Unchecked`, and the caller reads
the ledger the careful way (`scan`), which says what is wrong, repairs what can be
repaired, or accepts what this reader does not know.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from loopx.model.envelope import DATA_DEPTH, DECODER, DecodeFailed, TypedEnvelope
from loopx.model.upgrade import EVENT_VERSION
from loopx.store.ledger import _SUFFIX_LEN, _SUM_PREFIX, GENESIS, MAX_DEPTH, Cursor

if DATA_DEPTH + 1 > MAX_DEPTH:  # pragma: no cover - a constant: tests/test_bulk_read.py
    raise ImportError("a TypedEnvelope must not nest deeper than a ledger line may")


class Unchecked(Exception):
    """A line the bulk read does not vouch for: read the ledger with `scan` instead."""


class BulkRead:
    """The events of `buf`, a whole ledger of `goal_id` from its first byte, checked line by
    line and yielded one at a time; `cursor` is set once all are read."""

    def __init__(self, buf: bytes, goal_id: str):
        self.buf, self.goal_id = buf, goal_id
        self.cursor: Cursor | None = None

    def __iter__(self) -> Iterator[TypedEnvelope]:
        buf, goal_id = self.buf, self.goal_id
        decode, sha256, find = DECODER.decode, hashlib.sha256, buf.find
        prefix, suffix, plen, n = _SUM_PREFIX, _SUFFIX_LEN, len(_SUM_PREFIX), len(buf)
        seq, head, pos, more = 0, GENESIS, 0, None
        view = memoryview(buf)  # slices of a view copy nothing: each line is read in place
        while pos < n:
            end = find(b"\n", pos)
            cut = end - suffix  # where `,"sum":"` starts
            if (
                end < 0
                or cut <= pos
                or buf[cut : cut + plen] != prefix
                or buf[end - 2 : end] != b'"}'
            ):
                raise Unchecked()
            try:
                event = decode(view[pos:end])
            except DecodeFailed:
                raise Unchecked() from None
            hasher = sha256(view[pos:cut])
            hasher.update(b"}")
            if (
                # The decoded `sum` is the 64 characters at the line's end (the last key wins,
                # and an escape there would make it shorter), so this is the raw-bytes check.
                event.sum != hasher.hexdigest()
                or event.seq != seq + 1
                or event.prev != head
                or event.goal_id != goal_id
                or event.v != EVENT_VERSION
            ):
                raise Unchecked()
            yield event
            seq, head, pos, more = event.seq, event.sum, end + 1, event.more
        if more is True:  # the last operation is incomplete: `scan` cuts it as a torn tail
            raise Unchecked()
        self.cursor = Cursor(seq=seq, head=head, offset=pos)
