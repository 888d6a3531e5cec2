"""The bulk read of a whole ledger (`loopx.store.bulk` + `loopx.state.bulkfold`), which a
load without a snapshot uses: it checks every line as `scan` does and folds to exactly the
state, cursor and snapshot of the careful read (`Store.read` + `replay`). Any line it does
not vouch for hands the whole read to the careful path, so damage is reported with the same
code, message and offset as before."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.synth import make_goal
from loopx.engine.core import Loaded, load_state, save_snapshot
from loopx.engine.demo import create_demo
from loopx.model.envelope import DATA_DEPTH, DECODER, TypedEnvelope
from loopx.model.errors import LoopxError
from loopx.model.upgrade import EVENT_VERSION
from loopx.state.bulkfold import fold_stream, index_of
from loopx.state.fold import replay
from loopx.store.base import stamp
from loopx.store.bulk import BulkRead, Unchecked
from loopx.store.filestore import FileStore
from loopx.store.ledger import GENESIS, MAX_DEPTH, Cursor, canonical, digest, scan
from loopx.store.memorystore import MemoryStore
from tests.test_event_schema import SAMPLES

G = "bulk"
T = "2026-03-01T12:00:00Z"


def envelope(event_type: str, data: dict[str, Any], i: int, **extra: Any) -> dict[str, Any]:
    return {
        "operation_id": f"op-{i}",
        "op_hash": digest(f"op-{i}".encode()),
        "type": event_type,
        "v": EVENT_VERSION,
        "goal_id": G,
        "actor": {"agent_id": "agent-a", "session_id": "s1"},
        "recorded_at": T,
        "visibility": "team",
        "data": data,
        **extra,
    }


# Every event type, in an order in which each finds what it refers to.
ORDER = [
    "goal.created",
    "agent.registered",
    "quota.set",
    "todo.added",
    "todo.updated",
    "todo.claimed",
    "todo.renewed",
    "evidence.added",
    "monitor.observed",
    "turn.begun",
    "turn.phased",
    "turn.settled",
    "handoff.prepared",
    "handoff.adopted",
    "todo.blocked",
    "todo.unblocked",
    "todo.released",
    "todo.claimed",
    "todo.renewed",
    "todo.completed",
    "todo.reopened",
    "todo.cancelled",
    "gate.opened",
    "gate.resolved",
    "run.recorded",
    "note.added",
    "field.redacted",
    "finding.allowed",
    "goal.closed",
]


def every_type_ledger(at: int | None = None, **fields: Any) -> bytes:
    """A ledger of every event type (the schema tests' samples), two of them one operation;
    event `at` with `fields` changed (None: removed), chained and checksummed like any."""
    envelopes = [envelope(t, copy.deepcopy(SAMPLES[t]), i) for i, t in enumerate(ORDER)]
    envelopes[5]["operation_id"] = envelopes[6]["operation_id"]  # claim + renew: one op
    _, events, _ = stamp(envelopes, Cursor())
    if at is not None:
        events[at].update(fields)
        for key in [k for k, v in fields.items() if v is None]:
            events[at].pop(key)
    return chained(events)


BIG = "<a 70-bit integer>"  # orjson writes no integer beyond 64 bits: spliced in as text


def chained(events: list[dict[str, Any]]) -> bytes:
    """`events` as ledger lines, their seq, prev and sum stamped afresh."""
    lines, head = [], GENESIS
    for seq, event in enumerate(events, 1):
        event = {k: v for k, v in event.items() if k != "sum"}
        body = canonical({**event, "seq": seq, "prev": head})
        body = body.replace(orjson.dumps(BIG), str(2**70).encode())
        head = digest(body)
        lines.append(body[:-1] + b',"sum":"' + head.encode() + b'"}\n')
    return b"".join(lines)


def careful(store: Any) -> Any:
    """What a load without a snapshot gave before the bulk read: `read` + `replay`."""
    try:
        found = store.read(G)
        state = replay(copy.deepcopy(found.events))
    except LoopxError as err:
        return ("error", err.code, err.message, err.details)
    return (state, found.cursor, found.damage.to_dict() if found.damage else None)


def loaded(store: Any) -> Any:
    try:
        done = load_state(store, G, cache=False)
    except LoopxError as err:
        return ("error", err.code, err.message, err.details)
    return (done.state, done.cursor, done.damage)


def memory(buf: bytes) -> MemoryStore:
    store = MemoryStore()
    store.ledgers[G] = bytearray(buf)
    return store


def bulk_vouches(buf: bytes) -> bool:
    read = BulkRead(buf, G)
    try:
        fold_stream(read)
    except (Unchecked, LoopxError):
        return False
    return read.cursor is not None


def same_as_careful(buf: bytes) -> Any:
    store = memory(buf)
    before = careful(store)
    assert loaded(store) == before
    return before


# -- equal results --------------------------------------------------------------------------


def test_every_event_type_folds_to_the_same_state_and_cursor() -> None:
    buf = every_type_ledger()
    assert bulk_vouches(buf)
    state, cursor, damage = same_as_careful(buf)
    assert state.revision == len(ORDER) and cursor.offset == len(buf) and damage is None
    assert state.head == state.truth_head != "" and state.changed_at == T


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> FileStore:
    root = tmp_path_factory.mktemp("synth")
    make_goal(root, G, todos=300, events=3000)
    return FileStore(root)


def test_a_synthetic_goal_folds_to_the_same_state_and_snapshot(
    synth: FileStore, tmp_path: Path
) -> None:
    buf = synth.raw(G)
    assert bulk_vouches(buf)
    state, cursor, _ = same_as_careful(memory(buf).raw(G))
    # The snapshot a cold load writes is byte for byte the one the careful read gave.
    store = FileStore(tmp_path)
    store.ledger_path(G).parent.mkdir(parents=True)
    store.ledger_path(G).write_bytes(buf)
    load_state(store, G)
    reference = MemoryStore()
    save_snapshot(reference, state, cursor)
    assert store.load_snapshot(G) == reference.snapshots[G]
    assert load_state(store, G).state == state  # and it loads back to the same state


def test_the_demo_goals_fold_to_the_same_state(tmp_path: Path) -> None:
    create_demo(tmp_path)
    demo = FileStore(tmp_path)
    for goal_id in demo.goal_ids():
        buf = demo.raw(goal_id)
        read = BulkRead(buf, goal_id)
        state = fold_stream(read)
        assert state is not None and state.operations.base == read.cursor
        state.operations.bind(lambda buf=buf, goal_id=goal_id: index_of(BulkRead(buf, goal_id)))
        assert state == replay(scan(buf, Cursor(), goal_id=goal_id).events)
        assert read.cursor == scan(buf, Cursor(), goal_id=goal_id).cursor


def test_a_load_without_a_snapshot_takes_the_bulk_read(
    synth: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = memory(synth.raw(G))
    monkeypatch.setattr(store, "read", lambda *a, **k: pytest.fail("read the careful way"))
    done = load_state(store, G)
    assert done.state is not None and done.state.revision == 3000
    assert G in store.snapshots


@pytest.mark.parametrize("window", [1, 64, 700, 4096])
def test_a_ledger_read_a_window_at_a_time_folds_as_read_at_once(
    synth: FileStore, window: int
) -> None:
    # Windows smaller than a line (grown), ending inside a line or at its end: the lines,
    # state and cursor are those of one read of all the bytes.
    for buf in (every_type_ledger(), synth.raw(G)[:200_000]):
        cut = buf[: buf.rindex(b"\n", 0, len(buf) - 1) + 1]  # whole lines only
        whole, parts = BulkRead(cut, G), BulkRead(cut, G, window=window)
        states = [fold_stream(parts), fold_stream(whole)]
        for state in states:
            assert state is not None
            state.operations.bind(lambda cut=cut: index_of(BulkRead(cut, G, window=window)))
        assert states[0] == states[1]
        assert parts.cursor == whole.cursor == scan(cut, Cursor(), goal_id=G).cursor
        with pytest.raises(Unchecked):  # a torn last line, wherever the window ends
            fold_stream(BulkRead(cut + b'{"actor":{"agent_id"', G, window=window))


def test_the_file_store_reads_its_ledger_into_the_reader_s_buffer(synth: FileStore) -> None:
    raw, got = synth.raw(G), bytearray()
    window = memoryview(bytearray(10_000))
    with synth.reading(G) as read_at:
        while n := read_at(window, len(got)):
            got += window[:n]
    assert got == raw
    with synth.reading("no-such-goal") as read_at:
        assert read_at(window, 0) == 0


def test_a_cold_load_of_a_file_store_folds_its_ledger_as_it_reads_it(
    synth: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = FileStore(synth.root)
    monkeypatch.setattr(fresh, "raw", lambda *a, **k: pytest.fail("read the whole ledger"))
    monkeypatch.setattr(fresh, "read", lambda *a, **k: pytest.fail("read the careful way"))
    done = load_state(fresh, G, cache=False)
    assert done.state is not None and done.state.revision == 3000
    assert done.cursor == scan(synth.raw(G), Cursor(), goal_id=G).cursor


def test_an_empty_or_missing_ledger_is_no_goal() -> None:
    assert load_state(MemoryStore(), G) == Loaded(None, Cursor(), None)
    assert same_as_careful(b"") == (None, Cursor(), None)


def test_a_repeated_operation_id_keeps_its_place_with_the_latest_record() -> None:
    envelopes = [envelope(t, copy.deepcopy(SAMPLES[t]), i) for i, t in enumerate(ORDER[:8])]
    envelopes[6]["operation_id"] = envelopes[2]["operation_id"]  # not adjacent: a new record
    buf = stamp(envelopes, Cursor())[0]
    assert bulk_vouches(buf)
    state, _, _ = same_as_careful(buf)
    assert (
        state.operations.dump() == replay(scan(buf, Cursor(), goal_id=G).events).operations.dump()
    )


def test_a_renewal_with_a_null_todo_id_indexes_the_subject_the_careful_fold_does() -> None:
    """The bulk fold takes a renewal's subject inline (`data["todo_id"]`); `subject_of` would
    look further only when `todo_id` is absent, which the inline read refuses (careful path)."""
    envelopes = [envelope(t, copy.deepcopy(SAMPLES[t]), i) for i, t in enumerate(ORDER)]
    renewal = envelopes[ORDER.index("todo.renewed", 7)]
    renewal["data"].update(todo_id=None, gate_id="gate-x")
    buf = stamp(envelopes, Cursor())[0]
    assert bulk_vouches(buf)
    state, _, _ = same_as_careful(buf)
    assert (
        state.operations.dump() == replay(scan(buf, Cursor(), goal_id=G).events).operations.dump()
    )


# -- the careful path decides ----------------------------------------------------------------


def mutate(line: int, change: Callable[[bytes], bytes]) -> bytes:
    """The every-type ledger with line `line` changed (its sum and chain not made to match)."""
    lines = every_type_ledger().split(b"\n")
    lines[line] = change(lines[line])
    return b"\n".join(lines)


def rewrite(line: int, **fields: Any) -> bytes:
    """The every-type ledger with line `line`'s fields changed, its own sum made to match."""
    return mutate(line, lambda old: _resealed({**orjson.loads(old), **fields}))


def _resealed(event: dict[str, Any]) -> bytes:
    event.pop("sum")
    body = orjson.dumps(event, option=orjson.OPT_SORT_KEYS)
    return body[:-1] + b',"sum":"' + digest(body).encode() + b'"}'


DEEP = orjson.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
# Intact lines (their sum and chain hold) that a reader must still refuse.
REFUSED: dict[str, tuple[int, dict[str, Any]]] = {
    "a line of another goal": (5, {"goal_id": "other"}),
    "no data": (5, {"data": None}),
    "data a list": (5, {"data": [1]}),
    "an actor that is a number": (5, {"actor": 7}),
    "an actor without a session": (5, {"actor": {"agent_id": "a"}}),
    "an unknown visibility": (5, {"visibility": "secret"}),
    "type a number": (5, {"type": 5}),
    "no operation id": (5, {"operation_id": None}),
    "a line nested too deep": (5, {"data": {"deep": DEEP}}),
    "a renewal without its todo": (6, {"data": {"lease_expires_at": T}}),
    "a claim of no todo": (5, {"data": {"agent_id": "a"}}),
    "a first event that is no goal.created": (0, {"type": "todo.added"}),
    "an incomplete last operation": (len(ORDER) - 1, {"more": True}),
}
DAMAGED: dict[str, Callable[[], bytes]] = {
    **{what: (lambda at=at, f=f: every_type_ledger(at, **f)) for what, (at, f) in REFUSED.items()},
    "a changed byte mid-ledger": lambda: mutate(3, lambda x: x.replace(b"T", b"U", 1)),
    "a changed byte in the last line": lambda: mutate(-2, lambda x: x.replace(b"T", b"U")),
    "a torn last line": lambda: every_type_ledger()[:-20],
    "a missing newline at the end": lambda: every_type_ledger()[:-1],
    "a deleted line": lambda: mutate(4, lambda x: b"").replace(b"\n\n", b"\n"),
    "a broken chain": lambda: rewrite(5, prev="0" * 64),
    "a gap in seq": lambda: rewrite(5, seq=99),
    "seq as a float": lambda: rewrite(5, seq=6.0),
    "a line that is not JSON": lambda: mutate(5, lambda x: b"{" + x),
    "garbage before the last line": lambda: mutate(-3, lambda x: b"x"),
    "a sum in upper case": lambda: mutate(5, lambda x: x[:-66] + x[-66:-2].upper() + b'"}'),
}


@pytest.mark.parametrize("what", sorted(DAMAGED))
def test_damage_is_reported_as_the_careful_read_reports_it(what: str) -> None:
    buf = DAMAGED[what]()
    assert not bulk_vouches(buf)
    outcome = same_as_careful(buf)
    assert outcome[0] == "error" or outcome[2] is not None  # refused, or a torn tail


def test_a_corrupt_line_is_refused_with_its_code_and_offset() -> None:
    buf = DAMAGED["a broken chain"]()
    outcome = same_as_careful(buf)
    offset = sum(len(line) + 1 for line in buf.split(b"\n")[:5])
    assert outcome[:2] == ("error", "ledger_corrupt") and outcome[3]["offset"] == offset


NOTE = ORDER.index("note.added")
UNUSUAL: dict[str, dict[str, Any]] = {
    "an integer beyond int64": {"data": {**SAMPLES["note.added"], "n": 2**63}},
    "an integer beyond 64 bits": {"data": {**SAMPLES["note.added"], "n": BIG}},
    "data nested deeper than the typed read": {
        "data": {**SAMPLES["note.added"], "deep": orjson.loads(b"[" * 20 + b"]" * 20)}
    },
    "an unknown envelope field": {"origin": "import"},
    "an actor with more fields": {"actor": {"agent_id": "a", "session_id": "s", "host": "h"}},
    "no event id": {"event_id": None},
    "an event id that is a number": {"event_id": 5},
    "no event version": {"v": None},
    "an older event version": {"v": 0},
    "v as a float": {"v": 1.0},
    "more as a number": {"more": 1},
    "more on the last event of an operation": {"more": False},
}


READ_IN_BULK = {"no event id", "more on the last event of an operation"}


@pytest.mark.parametrize("what", sorted(UNUSUAL))
def test_an_unusual_line_is_read_the_careful_way_to_the_same_state(what: str) -> None:
    buf = every_type_ledger(NOTE, **UNUSUAL[what])
    assert bulk_vouches(buf) == (what in READ_IN_BULK)
    state, _, damage = same_as_careful(buf)
    assert state is not None and state.revision == len(ORDER) and damage is None


def test_the_typed_read_nests_no_deeper_than_a_line_may() -> None:
    assert DATA_DEPTH + 1 <= MAX_DEPTH
    deepest = {"x": orjson.loads(b"[" * (DATA_DEPTH - 1) + b"]" * (DATA_DEPTH - 1))}
    line = every_type_ledger().split(b"\n")[0]
    ok = _resealed({**orjson.loads(line), "data": deepest})
    assert DECODER.decode(ok).data == deepest
    too_deep = _resealed({**orjson.loads(line), "data": {"x": [deepest]}})
    with pytest.raises(msgspec.ValidationError):
        DECODER.decode(too_deep)


def test_the_typed_envelope_declares_its_fields_in_the_order_of_a_line() -> None:
    # The decoder looks each key up from the field after the one it matched last: a line's
    # keys in the declared order are each found at first try (speed only: any order decodes).
    seen: set[str] = set()
    for line in every_type_ledger().splitlines():
        keys = list(orjson.loads(line))
        assert keys == [name for name in TypedEnvelope.__struct_fields__ if name in keys]
        seen.update(keys)
    assert seen == set(TypedEnvelope.__struct_fields__)


# -- the typed decode gives orjson's values, or none ---------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _numbers() -> Iterator[bytes]:
    yield from (b"1e308", b"-0.0", b"0.1", b"1E-7", b"123456789.123456789e-3", b"5e-324")
    yield from (b"2.2250738585072011e-308", b"9007199254740993", b"-9223372036854775808")


@settings(max_examples=300, deadline=None)
@given(value=JSON, ascii=st.booleans())
def test_data_decodes_to_the_values_orjson_gives(value: Any, ascii: bool) -> None:
    check_same(json.dumps({"v": value}, ensure_ascii=ascii).encode())


@pytest.mark.parametrize("number", list(_numbers()))
def test_numbers_decode_to_the_values_orjson_gives(number: bytes) -> None:
    check_same(b'{"v":' + number + b"}")
    check_same(b'{"v":[' + number + b"]}")


def check_same(data: bytes) -> None:
    line = every_type_ledger().split(b"\n")[0]
    body = line[: line.index(b'"data":') + 7] + data + line[line.index(b',"event_id"') :]
    try:
        typed = DECODER.decode(body)
    except msgspec.ValidationError:
        return  # refused: the careful read decides
    expected = orjson.loads(body)["data"]
    assert repr(typed.data) == repr(expected)
    assert isinstance(typed, TypedEnvelope) and typed.prev == GENESIS


def test_a_ledger_over_the_read_cap_is_refused_as_before(tmp_path: Path) -> None:
    from loopx.store.fsio import MAX_READ

    store = FileStore(tmp_path)
    ledger = store.ledger_path(G)
    ledger.parent.mkdir(parents=True)
    with ledger.open("wb") as out:  # sparse: no disk is used
        out.truncate(MAX_READ + 1)
    outcome = loaded(store)
    assert outcome == careful(store) and outcome[:2] == ("error", "file_too_large")
