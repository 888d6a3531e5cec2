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

The ledger is read a window at a time into one buffer of the reader's own (`ReadAt`: the
file store reads its file straight into it), not as one bytes object of its whole size: the
28 MB of a 50,000-event ledger would be as many fresh pages, each faulted in once (~7,000
page faults, ~10 ms of a cold `status`), while the window stays in the cache. The buffer
being its own, each line's `,` before `"sum"` is overwritten with the `}` that ends the
canonical body once the line is decoded, so the body is hashed in one call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

from loopx.model.envelope import DATA_DEPTH, DECODER, DecodeFailed, TypedEnvelope
from loopx.model.upgrade import EVENT_VERSION
from loopx.store.fsio import MAX_READ
from loopx.store.ledger import _SUFFIX_LEN, _SUM_PREFIX, GENESIS, MAX_DEPTH, Cursor

if DATA_DEPTH + 1 > MAX_DEPTH:  # pragma: no cover - a constant: tests/test_bulk_read.py
    raise ImportError("a TypedEnvelope must not nest deeper than a ledger line may")

# `read_at(into, offset)`: the ledger's bytes from `offset` copied into the start of `into`,
# as many as fit and are there; how many (0 at its end).
ReadAt = Callable[[memoryview, int], int]
WINDOW = 1 << 18  # the reader's buffer: grown for a line longer than it
_BRACE = ord("}")


class Unchecked(Exception):
    """A line the bulk read does not vouch for: read the ledger with `scan` instead."""


def bytes_at(buf: bytes) -> ReadAt:
    """`read_at` of a ledger already in memory (`Store.raw`)."""
    source = memoryview(buf)

    def read_at(into: memoryview, offset: int) -> int:
        chunk = source[offset : offset + len(into)]
        into[: len(chunk)] = chunk
        return len(chunk)

    return read_at


class BulkRead:
    """The events of a whole ledger of `goal_id` from its first byte (`source`: its bytes, or
    a `ReadAt` of them), checked line by line and yielded one at a time; `cursor` is set
    once all are read."""

    def __init__(self, source: bytes | ReadAt, goal_id: str, *, window: int = WINDOW):
        self.read_at = bytes_at(source) if isinstance(source, bytes) else source
        self.goal_id, self.window = goal_id, window
        self.cursor: Cursor | None = None

    def __iter__(self) -> Iterator[TypedEnvelope]:
        read_at, goal_id = self.read_at, self.goal_id
        decode, sha256 = DECODER.decode, hashlib.sha256
        prefix, suffix, plen, brace = _SUM_PREFIX, _SUFFIX_LEN, len(_SUM_PREFIX), _BRACE
        seq, head, more = 0, GENESIS, None
        buf = bytearray(self.window)
        view = memoryview(buf)  # slices of a view copy nothing: each line is read in place
        base = filled = 0  # the ledger offset of buf[0]; how many bytes of buf hold data
        while True:
            got = read_at(view[filled:], base + filled)
            if not got:
                break
            filled += got
            if base + filled > MAX_READ:  # the careful read refuses it (file_too_large)
                raise Unchecked()
            pos, find = 0, buf.find
            while True:
                end = find(b"\n", pos, filled)
                if end < 0:
                    break
                cut = end - suffix  # where `,"sum":"` starts
                if cut <= pos or buf[cut : cut + plen] != prefix or buf[end - 2 : end] != b'"}':
                    raise Unchecked()
                try:
                    event = decode(view[pos:end])
                except DecodeFailed:
                    raise Unchecked() from None
                buf[cut] = brace  # the canonical body: the line up to `,"sum"`, then `}`
                if (
                    # The decoded `sum` is the 64 characters at the line's end (the last key
                    # wins, and an escape there would make it shorter): the raw-bytes check.
                    event.sum != sha256(view[pos : cut + 1]).hexdigest()
                    or event.seq != seq + 1
                    or event.prev != head
                    or event.goal_id != goal_id
                    or event.v != EVENT_VERSION
                ):
                    raise Unchecked()
                yield event
                seq, head, pos, more = event.seq, event.sum, end + 1, event.more
            # The part of a line the window ends in moves to its start (or, when one line
            # fills the whole window, the window doubles).
            rest = filled - pos
            if rest == len(buf):
                if rest > MAX_READ:  # no line of a ledger the careful read takes is longer
                    raise Unchecked()
                view.release()
                buf += bytes(len(buf))
                view = memoryview(buf)
            else:
                view[:rest] = view[pos:filled]
            base, filled = base + pos, rest
        if filled:  # bytes after the last line end: a torn tail, or a line still written
            raise Unchecked()
        if more is True:  # the last operation is incomplete: `scan` cuts it as a torn tail
            raise Unchecked()
        self.cursor = Cursor(seq=seq, head=head, offset=base)
