"""The ledger line format: one canonical JSON event per line, chained and checksummed.

A line is the canonical JSON of the event envelope without `sum`, with `,"sum":"<hex>"`
spliced in before its closing brace; `sum` is the sha256 of that canonical body, and each
event's `prev` is the previous line's `sum` (a run of zeros for the first). So a checksum is
checked without re-serialising, and any changed byte breaks either a line's own sum or the
next line's `prev`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from loopx.model.errors import LedgerDamage
from loopx.model.records import Mutable, Value

GENESIS = "0" * 64
_SUM_PREFIX = b',"sum":"'
_SUFFIX_LEN = len(_SUM_PREFIX) + 64 + 2  # ,"sum":"<64 hex>"}
_HEX = frozenset(b"0123456789abcdef")
# No event loopx writes nests deeper than 5; a line nested deeper than this is refused as
# damage (it could never have been written by loopx, and would break the snapshot encoder).
MAX_DEPTH = 32


def event_id(goal_id: str, seq: int) -> str:
    """The id of a goal's event at `seq`: derived, so receipts can name events without a read."""
    return "evt-" + hashlib.sha256(f"{goal_id}:{seq}".encode()).hexdigest()[:16]


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def encode_line(envelope: dict[str, Any]) -> tuple[bytes, str]:
    """Encode an envelope (without `sum`) as a ledger line ending in a newline; return its sum."""
    body = canonical(envelope)
    line_sum = digest(body)
    return body[:-1] + _SUM_PREFIX + line_sum.encode() + b'"}\n', line_sum


def parse_line(line: bytes, offset: int = 0) -> dict[str, Any]:
    """Parse one line (without its newline) and check its own checksum.

    Raises `LedgerDamage` (`ledger_corrupt`) for anything that is not an intact line.
    """
    if len(line) <= _SUFFIX_LEN or not line.endswith(b'"}'):
        raise LedgerDamage("ledger line is truncated or malformed", offset=offset)
    start = len(line) - _SUFFIX_LEN
    if line[start : start + len(_SUM_PREFIX)] != _SUM_PREFIX:
        raise LedgerDamage("ledger line has no checksum", offset=offset)
    claimed = line[start + len(_SUM_PREFIX) : -2]
    if not _HEX.issuperset(claimed):
        raise LedgerDamage("ledger line checksum is not hex", offset=offset)
    body = line[:start] + b"}"
    if hashlib.sha256(body).hexdigest().encode() != claimed:
        raise LedgerDamage("ledger line checksum does not match its content", offset=offset)
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise LedgerDamage("ledger line is not valid JSON", offset=offset) from None
    if not isinstance(event, dict):
        raise LedgerDamage("ledger line is not a JSON object", offset=offset)
    if line.count(b"{") + line.count(b"[") > MAX_DEPTH and depth(event) > MAX_DEPTH:
        raise LedgerDamage(f"ledger line nests deeper than {MAX_DEPTH} levels", offset=offset)
    return event


_VISIBILITIES = ("public", "team", "private")  # a tuple: a forged value may be unhashable


def envelope_ok(event: dict[str, Any]) -> bool:
    """The envelope fields every reader relies on have their types (cheap: no schema).

    A line whose checksum and chain hold can still be hand-made; this keeps such a line
    from reaching the fold or a view with, say, no `data` or an `actor` that is a number.
    """
    actor = event.get("actor")
    return (
        type(event.get("type")) is str
        and type(event.get("data")) is dict
        and type(event.get("operation_id")) is str
        and type(event.get("op_hash")) is str
        and type(event.get("recorded_at")) is str
        and event.get("visibility") in _VISIBILITIES
        and type(actor) is dict
        and type(actor.get("agent_id")) is str
        and type(actor.get("session_id")) is str
    )


def depth(value: Any) -> int:
    """How deeply `value` nests lists and objects (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


@dataclass(frozen=True, repr=False, eq=False)
class Cursor(Value):
    """A position in a goal's ledger: the last seq, its line sum, and the byte offset after it."""

    seq: int = 0
    head: str = GENESIS
    offset: int = 0


def cursor_holds(read: Callable[[int, int], bytes], cursor: Cursor) -> bool:
    """True when the intact line ending at `cursor.offset` is event `cursor.seq` with sum
    `cursor.head`; `read(offset, size)` returns the ledger's bytes there (short at the end).

    The whole line is checked, not only the sum at its end: a changed byte inside the last
    line a snapshot covers must still be found (and quarantined) before the next append.
    """
    end = cursor.offset
    if end < _SUFFIX_LEN + 1:
        return False
    size = 4096
    while True:
        lo = max(0, end - size)
        window = read(lo, end - lo)
        if len(window) != end - lo or not window.endswith(b"\n"):
            return False
        nl = window.rfind(b"\n", 0, len(window) - 1)
        if nl >= 0 or lo == 0:
            line = window[nl + 1 : -1]
            break
        size *= 4
    try:
        event = parse_line(line, end - len(line) - 1)
    except LedgerDamage:
        return False
    return event.get("seq") == cursor.seq and line[-66:-2].decode() == cursor.head


@dataclass(repr=False, eq=False)
class TailDamage(Mutable):
    """Bytes at the end of a ledger that are not intact events (a torn or damaged last write)."""

    offset: int
    length: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "length": self.length, "reason": self.reason}


@dataclass(repr=False, eq=False)
class Scan(Mutable):
    """The intact events of a buffer, the cursors before and after them, and any torn tail."""

    start: Cursor = field(default_factory=Cursor)
    events: list[dict[str, Any]] = field(default_factory=list)
    cursor: Cursor = field(default_factory=Cursor)
    damage: TailDamage | None = None


def scan(buf: bytes, start: Cursor, *, goal_id: str | None = None) -> Scan:
    """Parse and verify `buf`, the ledger bytes after `start`, continuing its chain.

    Damage that runs to the end of the buffer with no intact line after it is returned as
    `TailDamage` (repairable: a torn or garbled last write). Damage followed by an intact
    line means history was altered: `LedgerDamage` with the offset of the first bad byte.
    So does an intact line (its own checksum holds) that does not continue the chain, even
    the last one: no torn write produces a valid checksum, so such a line means a line was
    deleted, reordered or copied in, and cutting it could drop an acknowledged event.
    """
    out = Scan(start=start, cursor=start)
    events, seq, head, pos = _scan_intact(buf, start, goal_id)
    out.events = events
    n = len(buf)
    while pos < n:  # the careful path: classify the first problem (or finish a torn tail)
        nl = buf.find(b"\n", pos)
        end = n if nl < 0 else nl
        line = buf[pos:end]
        offset = start.offset + pos
        intact = False
        try:
            if nl < 0:
                raise LedgerDamage("last ledger line has no newline (torn write)", offset=offset)
            event = parse_line(line, offset)
            intact = True
            if type(event.get("seq")) is not int or event["seq"] != seq + 1:
                raise LedgerDamage("ledger sequence has a gap or repeat", offset=offset)
            if event.get("prev") != head:
                raise LedgerDamage("ledger hash chain is broken", offset=offset)
            if goal_id is not None and event.get("goal_id") != goal_id:
                raise LedgerDamage("ledger line belongs to another goal", offset=offset)
            if not envelope_ok(event):
                raise LedgerDamage("ledger line is not an event envelope", offset=offset)
        except LedgerDamage as err:
            if intact:
                raise LedgerDamage(
                    f"ledger line does not follow the one before it: {err.message}",
                    offset=offset,
                ) from None
            if _has_intact_line(buf, end + 1, start.offset):
                raise LedgerDamage(
                    f"ledger is corrupt before its last line: {err.message}",
                    offset=offset,
                ) from None
            out.damage = TailDamage(offset=offset, length=n - pos, reason=err.message)
            break
        events.append(event)
        seq, head = event["seq"], line[-66:-2].decode()
        pos = end + 1
    if events and events[-1].get("more") is True:
        seq, head, pos = _cut_open_operation(buf, events, out, pos)
    out.cursor = Cursor(
        seq=seq, head=head, offset=start.offset + pos if out.damage is None else out.damage.offset
    )
    return out


def _cut_open_operation(
    buf: bytes, events: list[dict[str, Any]], out: Scan, pos: int
) -> tuple[int, str, int]:
    """The ledger ends inside a multi-event operation (its last event never landed): the
    operation's events are part of the torn tail. Returns the seq, head and position before
    them."""
    while events and events[-1].get("more") is True:
        events.pop()
        pos = buf.rfind(b"\n", 0, pos - 1) + 1
    seq = events[-1]["seq"] if events else out.start.seq
    head = events[-1]["sum"] if events else out.start.head
    out.damage = TailDamage(
        offset=out.start.offset + pos,
        length=len(buf) - pos,
        reason="the last operation's events are incomplete (torn write)",
    )
    return seq, head, pos


def _scan_intact(
    buf: bytes, start: Cursor, goal_id: str | None
) -> tuple[list[dict[str, Any]], int, str, int]:
    """The fast path of `scan`: the run of intact, chained lines from the start of `buf`.

    The same checks as `parse_line` plus the chain, inlined for a bulk replay (a cold
    replay of 50,000 lines spends most of its time here); it stops at the first line that
    fails any of them and leaves that line to the careful path, which says what is wrong.
    Returns the events, the last seq and sum, and the position after the last good line.
    """
    events: list[dict[str, Any]] = []
    seq, head, pos = start.seq, start.head, 0
    sha256, loads, prefix, suffix = hashlib.sha256, orjson.loads, _SUM_PREFIX, _SUFFIX_LEN
    plen, find, count = len(prefix), buf.find, buf.count
    view = memoryview(buf)  # slices of a view copy nothing: each line is read in place
    while True:
        end = find(b"\n", pos)
        if end < 0:  # what follows the last newline is never intact
            break
        cut = end - suffix  # where `,"sum":"` starts
        if cut <= pos or buf[cut : cut + plen] != prefix or buf[end - 2 : end] != b'"}':
            break
        try:
            event = loads(view[pos:end])
        except orjson.JSONDecodeError:
            break
        hasher = sha256(view[pos:cut])
        hasher.update(b"}")
        line_sum = hasher.hexdigest()
        if (
            type(event) is not dict
            # The parsed `sum` is the 64 characters at the line's end (the last key wins, and
            # an escape there would make it shorter), so this is the raw-bytes check.
            or event.get("sum") != line_sum
            or (
                count(b"{", pos, end) + count(b"[", pos, end) > MAX_DEPTH
                and depth(event) > MAX_DEPTH
            )
            or type(event.get("seq")) is not int
            or event["seq"] != seq + 1
            or event.get("prev") != head
            or (goal_id is not None and event.get("goal_id") != goal_id)
            or not envelope_ok(event)
        ):
            break
        events.append(event)
        seq, head, pos = seq + 1, line_sum, end + 1
    view.release()
    return events, seq, head, pos


def _has_intact_line(buf: bytes, pos: int, base: int) -> bool:
    """True when any complete, self-consistent line starts at or after `pos`."""
    n = len(buf)
    while pos < n:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            return False
        try:
            parse_line(buf[pos:nl], base + pos)
            return True
        except LedgerDamage:
            pos = nl + 1
    return False
