"""The Store contract: one suite, run against every implementation via the `store` fixture.

What any store must do for the engine: append stamped, chained, checksummed lines with seq
1..n and no gaps; read all or a tail after a trusted cursor (and refuse a stale cursor);
verify the chain and report head and size; quarantine damage at the tail before the next
write and report the repair; refuse damage earlier in the file with its offset; keep blobs
by hash; list goals. (Crash, fault and multi-process tests live in tests/robustness/.)
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.core import load_state
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.model.errors import InvalidInput, LedgerDamage
from loopx.store.base import SnapshotStale
from loopx.store.filestore import FileStore
from loopx.store.ledger import GENESIS, Cursor, canonical, encode_line, parse_line
from loopx.store.memorystore import MemoryStore
from loopx.store.postgres import PostgresStore
from tests import pg
from tests.conftest import make_ctx

G = "goal-a"


def envelope(n: int, goal: str = G, event_type: str = "note.added") -> dict[str, Any]:
    """An unstamped envelope, shaped like the ones `engine.core.execute` hands the store."""
    return {
        "operation_id": f"op-{n}",
        "op_hash": hashlib.sha256(f"op-{n}".encode()).hexdigest(),
        "type": event_type,
        "v": 1,
        "goal_id": goal,
        "actor": {"agent_id": "agent-a", "session_id": "s1"},
        "recorded_at": "2026-03-01T12:00:00Z",
        "visibility": "team",
        "data": {"note_id": f"note-{n}", "kind": "note", "text": f"note number {n}"},
    }


def append(store: Any, count: int, goal: str = G, start: int = 1) -> list[dict[str, Any]]:
    with store.writing(goal) as writer:
        stamped: list[dict[str, Any]] = writer.append(
            [envelope(i, goal) for i in range(start, start + count)]
        )
    return stamped


def raw(store: Any, goal: str = G) -> bytes:
    data: bytes = store.raw(goal)
    return data


def overwrite(store: Any, data: bytes, goal: str = G) -> None:
    """Replace a ledger's bytes behind the store's back (damage, tampering)."""
    if isinstance(store, FileStore):
        store.goal_dir(goal).mkdir(parents=True, exist_ok=True)
        store.ledger_path(goal).write_bytes(data)
    elif isinstance(store, PostgresStore):
        pg.overwrite(store._conninfo, goal, data)
    else:
        assert isinstance(store, MemoryStore)
        store.ledgers[goal] = bytearray(data)


def line_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos = data.index(b"\n", pos) + 1
    return starts


def quarantined(store: Any, goal: str = G) -> list[bytes]:
    if isinstance(store, FileStore):
        qdir = store.goal_dir(goal) / "quarantine"
        return [p.read_bytes() for p in sorted(qdir.glob("*.bin"))] if qdir.is_dir() else []
    if isinstance(store, PostgresStore):
        return pg.quarantined(store._conninfo, goal)
    return list(store.quarantined[goal])


# -- append and read ----------------------------------------------------------------------


def test_append_returns_stamped_events_and_read_returns_the_same(store: Any) -> None:
    stamped = append(store, 3)
    assert [e["seq"] for e in stamped] == [1, 2, 3]
    scan = store.read(G)
    assert scan.damage is None
    assert scan.events == stamped
    for event in scan.events:
        assert (
            event["event_id"]
            == "evt-" + hashlib.sha256(f"{G}:{event['seq']}".encode()).hexdigest()[:16]
        )
        assert set(event) >= {"seq", "event_id", "prev", "sum", "operation_id", "type", "data"}


def test_seq_runs_1_to_n_without_gaps_across_batches(store: Any) -> None:
    n = 0
    for size in (1, 4, 2, 7, 1):
        append(store, size, start=n + 1)
        n += size
    events = store.read(G).events
    assert [e["seq"] for e in events] == list(range(1, n + 1))
    assert len({e["event_id"] for e in events}) == n
    assert raw(store).count(b"\n") == n


def test_each_line_is_checksummed_and_chained_to_the_previous(store: Any) -> None:
    append(store, 5)
    head = GENESIS
    for line in raw(store).splitlines():
        event = parse_line(line)
        assert event["prev"] == head
        without_sum = {k: v for k, v in event.items() if k != "sum"}
        assert event["sum"] == hashlib.sha256(canonical(without_sum)).hexdigest()
        encoded, line_sum = encode_line(without_sum)
        assert encoded == line + b"\n", "lines are canonical: re-encoding gives the same bytes"
        assert line_sum == event["sum"]
        head = event["sum"]


def test_verify_reports_events_size_and_head(store: Any) -> None:
    stamped = append(store, 4)
    report = store.verify(G)
    assert report.ok and report.damage == []
    assert report.events == 4
    assert report.size == len(raw(store))
    assert report.head == stamped[-1]["sum"]
    assert report.to_dict()["goal_id"] == G


def test_verify_detects_any_single_changed_byte(store: Any) -> None:
    append(store, 3)
    good = raw(store)
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x01
        overwrite(store, bytes(bad))
        report = store.verify(G)
        assert not report.ok, f"a change at byte {i} went unnoticed"
        assert report.damage
    overwrite(store, good)
    assert store.verify(G).ok


# -- cursors --------------------------------------------------------------------------------


def test_read_since_a_cursor_returns_only_the_tail(store: Any) -> None:
    append(store, 3)
    first = store.read(G)
    append(store, 2, start=4)
    tail = store.read(G, first.cursor)
    assert [e["seq"] for e in tail.events] == [4, 5]
    assert tail.start == first.cursor
    assert tail.cursor.seq == 5 and tail.cursor.offset == len(raw(store))
    assert store.read(G, tail.cursor).events == []


def test_a_cursor_that_no_longer_matches_is_stale(store: Any) -> None:
    append(store, 3)
    cursor = store.read(G).cursor
    with pytest.raises(SnapshotStale):
        store.read(G, Cursor(seq=cursor.seq, head="f" * 64, offset=cursor.offset))
    with pytest.raises(SnapshotStale):
        store.read(G, Cursor(seq=9, head=cursor.head, offset=cursor.offset + 500))
    # The ledger was replaced by another history: same length, different lines.
    overwrite(store, b"")
    append(store, 3, start=7)
    assert len(raw(store)) == cursor.offset
    with pytest.raises(SnapshotStale):
        store.read(G, cursor)


def test_a_stale_snapshot_triggers_a_full_replay(store: Any) -> None:
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Objective"))
    add_todo(ctx, AddTodo(goal_id=G, title="first", todo_id="first"))
    assert load_state(store, G).state is not None
    assert store.load_snapshot(G), "a snapshot now exists"
    # Another history for the same goal id, longer than the first, replaces the ledger.
    other = MemoryStore()
    octx = make_ctx(other, agent="agent-b")
    create_goal(octx, CreateGoal(goal_id=G, title="Other", objective="Another objective"))
    for name in ("second", "third", "fourth"):
        add_todo(octx, AddTodo(goal_id=G, title=name, todo_id=name))
    overwrite(store, other.raw(G))
    loaded = load_state(store, G)
    assert loaded.state is not None
    assert sorted(loaded.state.todos) == ["fourth", "second", "third"]
    assert loaded.state.title == "Other"
    assert loaded.state.revision == 4
    # ... and a write folds the new history too, not the cached one.
    add_todo(ctx, AddTodo(goal_id=G, title="fifth", todo_id="fifth"))
    state = load_state(store, G, cache=False).state
    assert state is not None and sorted(state.todos) == ["fifth", "fourth", "second", "third"]


def test_a_writer_with_a_stale_cursor_rereads_from_the_start(store: Any) -> None:
    append(store, 2)
    with store.writing(G, Cursor(seq=2, head="0" * 64, offset=1)) as writer:
        assert writer.tail is not None
        assert writer.tail.start == Cursor()
        assert [e["seq"] for e in writer.tail.events] == [1, 2]
        writer.append([envelope(3)])
    assert [e["seq"] for e in store.read(G).events] == [1, 2, 3]


# -- damage ---------------------------------------------------------------------------------


TORN = b'{"actor":{"agent_id":"agent-a","session_id":"s1"},"data":{"note_id":"x'


def test_a_torn_last_line_is_reported_then_quarantined_on_the_next_write(store: Any) -> None:
    append(store, 2)
    good = raw(store)
    overwrite(store, good + TORN)
    scan = store.read(G)
    assert [e["seq"] for e in scan.events] == [1, 2]
    assert scan.damage is not None
    assert scan.damage.offset == len(good) and scan.damage.length == len(TORN)
    assert not store.verify(G).ok
    with store.writing(G) as writer:
        assert writer.repair is not None
        assert (writer.repair.offset, writer.repair.length) == (len(good), len(TORN))
        assert writer.repair.reason and writer.repair.quarantine
        writer.append([envelope(3)])
    assert [e["seq"] for e in store.read(G).events] == [1, 2, 3]
    assert raw(store).startswith(good)
    assert quarantined(store) == [TORN]
    assert store.verify(G).ok


def test_a_checksum_failing_last_line_is_quarantined_too(store: Any) -> None:
    append(store, 3)
    good = raw(store)
    last = line_starts(good)[-1]
    bad = bytearray(good)
    bad[last + 20] ^= 0x01  # inside the last line's JSON: its sum no longer matches
    overwrite(store, bytes(bad))
    scan = store.read(G)
    assert scan.damage is not None and scan.damage.offset == last
    assert [e["seq"] for e in scan.events] == [1, 2]
    with store.writing(G) as writer:
        assert writer.repair is not None and writer.repair.offset == last
        writer.append([envelope(3)])
    assert store.verify(G).ok
    assert quarantined(store) == [bytes(bad[last:])]


def test_the_engine_reports_the_repair_in_its_result(store: Any) -> None:
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Objective"))
    good = raw(store)
    overwrite(store, good + TORN)
    result = add_todo(ctx, AddTodo(goal_id=G, title="after the tear"))
    assert result.status == "applied"
    assert result.repair is not None
    assert result.repair["offset"] == len(good)
    assert result.repair["length"] == len(TORN)
    assert result.to_dict()["repair"] == result.repair
    assert result.receipt["seq_first"] == 2
    assert store.verify(G).ok


def test_the_engine_quarantines_a_damaged_last_line_its_snapshot_covers(store: Any) -> None:
    """A snapshot taken after the last line must not hide that line's later damage."""
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Objective"))
    add_todo(ctx, AddTodo(goal_id=G, title="one", todo_id="one"))
    assert store.load_snapshot(G)
    good = raw(store)
    last = line_starts(good)[-1]
    bad = bytearray(good)
    bad[last + 30] ^= 0x01
    overwrite(store, bytes(bad))
    result = add_todo(ctx, AddTodo(goal_id=G, title="two", todo_id="two"))
    assert result.repair is not None and result.repair["offset"] == last
    assert store.verify(G).ok
    state = load_state(store, G).state
    assert state is not None and sorted(state.todos) == ["two"]


@pytest.mark.parametrize("which", [0, 1])
def test_damage_before_the_last_line_is_ledger_corrupt_with_its_offset(
    store: Any, which: int
) -> None:
    append(store, 3)
    good = raw(store)
    start = line_starts(good)[which]
    bad = bytearray(good)
    bad[start + 10] ^= 0x01
    overwrite(store, bytes(bad))
    with pytest.raises(LedgerDamage) as caught:
        store.read(G)
    assert caught.value.code == "ledger_corrupt"
    assert caught.value.details["offset"] == start
    with pytest.raises(LedgerDamage) as again, store.writing(G) as writer:
        writer.append([envelope(9)])  # pragma: no cover - never reached
    assert again.value.details["offset"] == start
    assert raw(store) == bytes(bad), "earlier damage is never silently cut"
    report = store.verify(G)
    assert not report.ok
    assert report.damage[0]["kind"] == "corrupt" and report.damage[0]["offset"] == start


def test_a_reordered_or_repeated_line_breaks_the_chain(store: Any) -> None:
    append(store, 3)
    lines = raw(store).splitlines(keepends=True)
    overwrite(store, lines[0] + lines[2] + lines[1])
    with pytest.raises(LedgerDamage):
        store.read(G)
    overwrite(store, lines[0] + lines[1] + lines[1] + lines[2])
    with pytest.raises(LedgerDamage):
        store.read(G)


def test_a_line_from_another_goal_is_damage(store: Any) -> None:
    append(store, 1, goal="goal-b")
    overwrite(store, raw(store, "goal-b"))
    with pytest.raises(LedgerDamage) as caught:
        store.read(G)
    assert caught.value.details["offset"] == 0
    assert not store.verify(G).ok


# -- blobs, snapshots, goals --------------------------------------------------------------


def test_blobs_are_kept_by_sha256(store: Any) -> None:
    data = b"private evidence body\n" * 10
    ref = store.put_blob(data)
    assert ref == "sha256:" + hashlib.sha256(data).hexdigest()
    assert store.get_blob(ref) == data
    assert store.put_blob(data) == ref
    assert store.get_blob("sha256:" + "0" * 64) is None
    assert store.put_blob(b"") == "sha256:" + hashlib.sha256(b"").hexdigest()


def test_blobs_read_in_a_reading_block_are_the_same(store: Any) -> None:
    """`reading_blobs()` only makes many reads cheaper: inside it (nested too) every blob,
    missing or not, reads as outside it, and one stored inside it is read back."""
    refs = [store.put_blob(f"private body {i}".encode()) for i in range(40)]
    absent = ["sha256:" + "0" * 64, "sha256:" + refs[0][7:9] + "f" * 62]
    outside = {ref: store.get_blob(ref) for ref in [*refs, *absent]}
    assert all(outside[r] is not None for r in refs) and outside[absent[0]] is None
    with store.reading_blobs():
        assert {ref: store.get_blob(ref) for ref in outside} == outside
        with store.reading_blobs():
            assert store.get_blob(refs[1]) == outside[refs[1]]
        assert store.get_blob(refs[2]) == outside[refs[2]]  # the outer block still reads
        added = store.put_blob(b"stored inside the block")
        assert store.get_blob(added) == b"stored inside the block"
    assert {ref: store.get_blob(ref) for ref in outside} == outside


def test_blobs_read_together_are_those_read_one_by_one(store: Any) -> None:
    """`get_blobs` answers as `get_blob` does for each digest, in either spelling, missing or
    not, inside a reading block or not; a malformed one is `invalid_ref`, as ever."""
    refs = [store.put_blob(f"private body {i}".encode()) for i in range(30)]
    asked = [*refs, *(r[7:] for r in refs[:5]), "sha256:" + "0" * 64, "f" * 64, refs[3]]
    one_by_one = {digest: store.get_blob(digest) for digest in asked}
    assert store.get_blobs(asked) == one_by_one and store.get_blobs([]) == {}
    with store.reading_blobs():
        assert store.get_blobs(asked) == one_by_one
    if not isinstance(store, MemoryStore):  # the in-memory test double checks no digest
        with pytest.raises(InvalidInput) as caught:
            store.get_blobs([refs[0], "sha256:not-a-digest"])
        assert caught.value.code == "invalid_ref"


def test_file_blobs_live_under_private_and_never_in_a_ledger(file_store: FileStore) -> None:
    ref = file_store.put_blob(b"secret body")
    hexdigest = ref.split(":", 1)[1]
    path = file_store.state_dir / "private" / "blobs" / "sha256" / hexdigest[:2] / hexdigest[2:]
    assert path.read_bytes() == b"secret body"


def test_snapshots_round_trip(store: Any) -> None:
    assert store.load_snapshot(G) is None
    store.save_snapshot(G, b"snapshot bytes")
    assert store.load_snapshot(G) == b"snapshot bytes"
    store.save_snapshot(G, b"newer")
    assert store.load_snapshot(G) == b"newer"


def test_goal_ids_lists_goals_with_events_sorted(store: Any) -> None:
    assert store.goal_ids() == []
    for goal in ("zeta", "alpha", "mid"):
        append(store, 1, goal=goal)
    assert store.goal_ids() == ["alpha", "mid", "zeta"]
    assert store.exists("alpha") and not store.exists("nope")
    assert store.read("nope").events == []


def test_goal_ids_are_checked(store: Any) -> None:
    from loopx.model.errors import InvalidInput

    for bad in ("../escape", "UPPER", "", "a/b", "x" * 65, "ok\n"):
        with pytest.raises(InvalidInput):
            store.exists(bad)
