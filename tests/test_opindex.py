"""The operations index out of the snapshot (`loopx.engine.opindex`, issue 19): a load
without a snapshot builds no index, a read never opens the index file, and a write that
looks an operation up gets the records the careful fold would have built, from the index
file when it is current and rebuilt from the ledger (every line checked) when it is
missing, damaged, of another cursor or another version."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from loopx.engine import core, opindex, todos
from loopx.engine.commands import AddTodo
from loopx.engine.core import load_state
from loopx.model.errors import LoopxError
from loopx.state.fold import replay
from loopx.store.ledger import Cursor, scan
from loopx.store.memorystore import MemoryStore
from tests.conftest import make_ctx
from tests.test_bulk_read import NOTE, every_type_ledger, memory
from tests.test_bulk_read import G as BG
from tests.test_engine_idempotency import G, bulk_notes


@pytest.fixture
def goal(store: Any) -> Any:
    """A goal of 1,202 events, the first todo added under the operation id `early-op`,
    loaded once without a snapshot (the bulk read: its snapshot holds no index)."""
    from loopx.engine import goals
    from loopx.engine.commands import CreateGoal

    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Early", operation_id="early-op"))
    bulk_notes(store, 1200)
    store.save_snapshot(G, b"")
    load_state(store, G)
    return store


def careful_index(store: Any) -> dict[str, list[Any]]:
    state = replay(store.read(G).events)
    assert state is not None
    return state.operations.to_dict()


def header(store: Any) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(store.load_snapshot(G).split(b"\n", 1)[0])
    return data


def early(store: Any) -> Any:
    ctx = make_ctx(store)
    return todos.add_todo(ctx, AddTodo(goal_id=G, title="Early", operation_id="early-op"))


def test_a_cold_load_leaves_the_index_out_of_its_snapshot(goal: Any) -> None:
    snapshot = goal.load_snapshot(G)
    assert snapshot.endswith(b"\n") and b"early-op" not in snapshot
    assert header(goal)["operations"]["base"] == header(goal)["cursor"]
    assert goal.load_index(G) is None  # no index file until a write needs one


def test_a_read_never_opens_the_index_file(goal: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(goal, "load_index", lambda *a: pytest.fail("a read opened the index"))
    monkeypatch.setattr(opindex, "rebuild", lambda *a: pytest.fail("a read rebuilt the index"))
    state = load_state(goal, G).state
    assert state is not None and state.revision == 1202


def test_a_retry_after_a_cold_load_replays_from_the_rebuilt_index(goal: Any) -> None:
    before = goal.raw(G)
    again = early(goal)
    assert again.status == "replayed" and again.receipt["seq_first"] == 2
    assert goal.raw(G) == before
    # The rebuilt records are the careful fold's, and kept in the index file.
    base = Cursor(**header(goal)["operations"]["base"])
    records = opindex.decode(goal.load_index(G), base)
    assert records is not None
    assert core.OpIndex(records).to_dict() == careful_index(goal)


@pytest.mark.parametrize(
    "damage",
    [
        "a changed record",
        "a cut record",
        "no header",
        "another cursor",
        "another version",
        "not json",
    ],
)
def test_a_damaged_or_foreign_index_file_is_rebuilt_from_the_ledger(goal: Any, damage: str) -> None:
    early(goal)  # writes the index file
    raw = goal.load_index(G)
    head, records = raw.split(b"\n", 1)
    meta = orjson.loads(head)
    if damage == "a changed record":
        raw = head + b"\n" + records.replace(b"early-op", b"early-oq")
    elif damage == "a cut record":
        raw = raw[:-10]
    elif damage == "no header":
        raw = records
    elif damage == "another cursor":
        meta["cursor"]["seq"] -= 1
        raw = orjson.dumps(meta) + b"\n" + records
    elif damage == "another version":
        meta["format"] = "loopx.operations/0"
        raw = orjson.dumps(meta) + b"\n" + records
    else:
        raw = b"\xff" + raw
    goal.save_index(G, raw)
    assert early(goal).status == "replayed"
    base = Cursor(**header(goal)["operations"]["base"])
    assert opindex.decode(goal.load_index(G), base) is not None  # written again


def test_a_snapshot_without_the_index_still_refuses_a_reused_id(goal: Any) -> None:
    ctx = make_ctx(goal)
    with pytest.raises(LoopxError) as caught:
        todos.add_todo(ctx, AddTodo(goal_id=G, title="Late", operation_id="early-op"))
    assert caught.value.code == "operation_id_reused"


def test_the_index_is_rebuilt_the_careful_way_when_the_bulk_read_does_not_vouch() -> None:
    """An unusual line (an unknown envelope field) is read the careful way: the records are
    `replay`'s all the same."""
    store = memory(every_type_ledger(NOTE, origin="import"))
    found = scan(store.raw(BG), Cursor(), goal_id=BG)
    records = opindex.rebuild(store, BG, found.cursor)
    state = replay(found.events)
    assert state is not None and records == state.operations.dump()


def test_a_ledger_that_no_longer_holds_the_base_is_damage() -> None:
    store = MemoryStore()
    store.ledgers[BG] = bytearray(every_type_ledger())
    cursor = scan(store.raw(BG), Cursor(), goal_id=BG).cursor
    elsewhere = Cursor(seq=cursor.seq, head="0" * 64, offset=cursor.offset)
    with pytest.raises(LoopxError) as caught:
        opindex.rebuild(store, BG, elsewhere)
    assert caught.value.code == "ledger_corrupt"


def test_a_snapshot_moves_its_records_to_the_index_file_past_the_split(
    goal: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records since the base stay in the snapshot up to `INDEX_SPLIT` bytes; a write past
    that with the base at hand (it looked an operation up) moves them into the index file."""
    monkeypatch.setattr(core, "INDEX_SPLIT", 300)
    ctx = make_ctx(goal)
    for i in range(4):  # generated ids: no lookup, the base is never read
        todos.add_todo(ctx, AddTodo(goal_id=G, title=f"extra {i}"))
    first = header(goal)["operations"]["base"]
    assert goal.load_index(G) is None and len(goal.load_snapshot(G).rsplit(b"\n", 1)[1]) > 300
    assert early(goal).status == "replayed"  # a lookup, and no write: the snapshot stays
    assert header(goal)["operations"]["base"] == first
    # A new explicit id is looked up (the base read) and written: the records move.
    todos.add_todo(ctx, AddTodo(goal_id=G, title="extra 5", operation_id="late-op"))
    moved = header(goal)["operations"]["base"]
    assert moved["seq"] > first["seq"] and goal.load_snapshot(G).endswith(b"\n")
    state = load_state(goal, G).state
    assert state is not None and state.operations.to_dict() == careful_index(goal)
    assert early(goal).status == "replayed"


def test_records_past_the_load_limit_move_even_without_a_lookup(
    goal: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "INDEX_SPLIT", 300)
    monkeypatch.setattr(core, "INDEX_LOAD", 900)
    ctx = make_ctx(goal)
    first = header(goal)["operations"]["base"]
    for i in range(12):  # generated ids only: the base is read once the records pass 900 B
        todos.add_todo(ctx, AddTodo(goal_id=G, title=f"extra {i}"))
        assert len(goal.load_snapshot(G).rsplit(b"\n", 1)[1]) <= 900
    assert header(goal)["operations"]["base"]["seq"] > first["seq"]
    state = load_state(goal, G).state
    assert state is not None and state.operations.to_dict() == careful_index(goal)
