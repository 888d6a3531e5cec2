"""The fold and the snapshot cache: replay is a pure left fold that checks each event is the
next; a snapshot plus its tail folds to exactly what a cold replay gives."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.synth import make_goal
from loopx.engine import goals, todos
from loopx.engine.clock import add_seconds
from loopx.engine.commands import AddTodo, ClaimTodo, CreateGoal
from loopx.engine.core import (
    SNAPSHOT_FORMAT,
    load_state,
    save_snapshot,
    snapshot_due,
)
from loopx.engine.demo import create_demo
from loopx.model.errors import LedgerDamage
from loopx.state.entities import GoalState, decode_state, encode_state, state_from_dict
from loopx.state.fold import apply, replay
from loopx.store.filestore import FileStore
from tests.conftest import T0, make_ctx


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> FileStore:
    root = tmp_path_factory.mktemp("demo")
    create_demo(root)
    return FileStore(root)


def test_replay_equals_applying_one_event_at_a_time(demo: FileStore) -> None:
    for goal_id in demo.goal_ids():
        events = demo.read(goal_id).events
        whole = replay(copy.deepcopy(events))
        state: GoalState | None = None
        for event in copy.deepcopy(events):
            state = apply(state, event)
        assert whole == state
        assert whole is not None and whole.revision == len(events)
        assert whole.head == events[-1]["sum"]


def test_replay_is_deterministic_and_never_reads_the_clock(demo: FileStore) -> None:
    events = demo.read("launch").events
    first = replay(copy.deepcopy(events))
    second = replay(copy.deepcopy(events))
    assert first == second
    assert first is not None and first.updated_at == events[-1]["recorded_at"]


def test_every_event_must_be_the_next_one(demo: FileStore) -> None:
    events = demo.read("docs").events
    with pytest.raises(LedgerDamage):
        replay(events[1:])  # does not start with goal.created
    with pytest.raises(LedgerDamage):
        replay([events[0], events[2]])  # skips seq 2
    state = replay(events[:3])
    with pytest.raises(LedgerDamage):
        apply(state, events[1])  # a repeat


def test_an_unknown_event_type_is_carried_not_fatal(demo: FileStore) -> None:
    events = copy.deepcopy(demo.read("docs").events[:2])
    future = dict(events[-1], seq=3, type="widget.frobbed", data={"widget_id": "w1"})
    future["operation_id"] = "future-op"
    state = replay([*events, future])
    assert state is not None and state.revision == 3
    assert state.operations["future-op"][1:] == [3, 3, "w1"]


def test_the_fold_has_one_handler_for_every_event_type() -> None:
    from loopx.model.events import EVENT_MODELS
    from loopx.state.fold import HANDLERS

    assert set(HANDLERS) == set(EVENT_MODELS)


def test_a_created_entity_takes_its_fields_from_the_data_and_the_envelope() -> None:
    from loopx.state.entities import Gate, from_event

    data = {"gate_id": "g1", "question": "Ship?", "authority": "me", "blocks": ["a"]}
    gate = from_event(Gate, {**data, "from_a_newer_loopx": 1}, visibility="public", revision=7)
    assert (gate.gate_id, gate.question, gate.blocks, gate.visibility) == (
        "g1",
        "Ship?",
        ["a"],
        "public",
    )
    assert (gate.revision, gate.blocks_goal, gate.status) == (7, False, "pending")  # defaults
    gate.blocks.append("b")  # the folded list is a copy: the event stays as it was read
    assert data["blocks"] == ["a"]
    with pytest.raises(TypeError):  # a required field the data lacks
        from_event(Gate, {"gate_id": "g2"})


@pytest.mark.parametrize("kind", ["todos", "gates", "evidence", "runs", "notes", "handoffs"])
def test_a_created_entity_is_the_one_its_keywords_make(kind: str) -> None:
    """`from_event` lays values out by position: the entity is the one `cls(**values)` makes,
    for every field given or left to its default, stamps winning over the data."""
    from dataclasses import MISSING, fields

    from loopx.state.entities import _ENTITY_TYPES, from_event

    cls = _ENTITY_TYPES[kind]
    every = {f.name: [f"{f.name}-value"] for f in fields(cls)}
    last = fields(cls)[-1].name
    made = from_event(cls, {**every, "unknown": 1}, **{last: "stamped"})
    assert made == cls(**{**every, last: "stamped"})
    assert all(getattr(made, k) is not v for k, v in every.items() if k != last)  # copies
    required = {
        f.name: f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
    }
    first, second = from_event(cls, required), from_event(cls, dict(required))
    assert first == cls(**required) == second
    for f in fields(cls):
        if f.default_factory is not MISSING:  # a fresh list (or dict) for each entity
            assert getattr(first, f.name) is not getattr(second, f.name)
    for name in required:
        with pytest.raises(TypeError):
            from_event(cls, {k: v for k, v in required.items() if k != name})


def test_the_entity_modules_of_the_fold_do_not_import_it() -> None:
    """Handlers are listed in the fold's one table: no module registers itself into it."""
    import subprocess
    import sys

    modules = ("handoff", "monitors", "redactions", "turns")
    code = "".join(f"import loopx.state.{m};" for m in modules)
    code += "import sys; print('loopx.state.fold' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_entity_revisions_are_the_seq_of_their_last_change(store: Any) -> None:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id="g", title="G", objective="O"))
    todos.add_todo(ctx, AddTodo(goal_id="g", title="A", todo_id="a"))  # 2
    todos.add_todo(ctx, AddTodo(goal_id="g", title="B", todo_id="b"))  # 3
    todos.claim_todo(ctx, ClaimTodo(goal_id="g", todo_id="a"))  # 4
    state = load_state(store, "g").state
    assert state is not None
    assert (state.revision, state.todos["a"].revision, state.todos["b"].revision) == (4, 4, 3)
    assert state.todos["a"].created_seq == 2
    assert state.todos["a"].created_at == add_seconds(T0, 60)


# -- the snapshot codec -----------------------------------------------------------------------


def test_the_snapshot_codec_round_trips_every_demo_goal(demo: FileStore) -> None:
    for goal_id in demo.goal_ids():
        state = replay(demo.read(goal_id).events)
        assert state is not None
        rows = orjson.loads(orjson.dumps(encode_state(state)))
        back = decode_state(rows, state.operations.dump())
        assert back == state, goal_id
        # and the plain-dict form (used by tools and older snapshots) agrees too
        assert state_from_dict(orjson.loads(orjson.dumps(state, default=_ops))) == state


def _ops(value: Any) -> Any:
    return value.to_dict()


def test_a_snapshot_written_for_other_fields_is_refused(demo: FileStore) -> None:
    state = replay(demo.read("launch").events)
    assert state is not None
    rows = encode_state(state)
    rows["fields"]["todos"] = [*rows["fields"]["todos"], "new_field"]
    with pytest.raises(ValueError):
        decode_state(rows, b"")


def test_load_state_from_a_snapshot_equals_a_cold_replay(tmp_path: Path) -> None:
    summary = make_goal(tmp_path, "synth", todos=300, events=3000)
    store = FileStore(tmp_path)
    cold = load_state(store, "synth", cache=False).state
    assert cold is not None and cold.revision == summary["events"] == 3000
    assert store.load_snapshot("synth") is None, "cache=False writes no snapshot"
    first = load_state(store, "synth")  # cold, and writes the snapshot
    assert store.load_snapshot("synth"), "a cold load writes the snapshot"
    warm = load_state(store, "synth")
    assert first.state == warm.state == cold
    # A few writes later (tail folded onto the snapshot) it still agrees with a cold replay.
    ctx = make_ctx(store)
    for i in range(5):
        todos.add_todo(ctx, AddTodo(goal_id="synth", title=f"extra {i}"))
    assert load_state(store, "synth").state == load_state(store, "synth", cache=False).state


def test_a_corrupt_or_foreign_snapshot_is_ignored(store: Any) -> None:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id="g", title="G", objective="O"))
    todos.add_todo(ctx, AddTodo(goal_id="g", title="A"))
    truth = load_state(store, "g", cache=False).state
    for junk in (b"not json", b"{}\n{}\n", b'{"format":"other"}\n{}\n', b"\xff" * 100):
        store.save_snapshot("g", junk)
        assert load_state(store, "g").state == truth
    # A well-formed snapshot of another goal is not taken for this one.
    goals.create_goal(ctx, CreateGoal(goal_id="h", title="H", objective="O"))
    store.save_snapshot("g", store.load_snapshot("h"))
    assert load_state(store, "g").state == truth


def test_snapshots_are_rewritten_in_proportion_to_the_goal(store: Any) -> None:
    assert snapshot_due(1, 5) and snapshot_due(1, 999)
    assert not snapshot_due(49, 50_000) and snapshot_due(50, 50_000)
    assert not snapshot_due(255, 10_000_000) and snapshot_due(256, 10_000_000)
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id="g", title="G", objective="O"))
    state = load_state(store, "g").state
    assert state is not None
    save_snapshot(store, state, load_state(store, "g").cursor)
    header = store.load_snapshot("g").split(b"\n", 1)[0]
    assert orjson.loads(header)["format"] == SNAPSHOT_FORMAT


def test_each_event_moves_the_heads_its_kind_moves(tmp_path: Path) -> None:
    """Every event moves `revision`/`head`/`updated_at` and stamps its todo; a lease renewal
    moves the truth heads but not `changed_at`; the turn journal moves neither (the fold's
    inlined bookkeeping, checked event by event over a synthetic goal full of renewals)."""
    from loopx.state.fold import HEARTBEATS
    from loopx.state.turns import JOURNAL

    make_goal(tmp_path, "heads", todos=40, events=400)
    events = FileStore(tmp_path).read("heads").events
    assert sum(e["type"] == "todo.renewed" for e in events) > 10
    state: GoalState | None = None
    for event in events:
        before = None if state is None else (state.changed_at, state.truth_revision)
        state = apply(state, event)
        at, seq = event["recorded_at"], event["seq"]
        assert (state.revision, state.head, state.updated_at) == (seq, event["sum"], at)
        kind = event["type"]
        if before is not None and kind in HEARTBEATS:
            assert state.changed_at == before[0]
        else:
            assert state.changed_at == at
        if before is not None and kind in JOURNAL:
            assert state.truth_revision == before[1]
        else:
            assert (state.truth_revision, state.truth_head, state.truth_at) == (
                seq,
                event["sum"],
                at,
            )
        if kind == "todo.renewed":
            todo = state.todos[event["data"]["todo_id"]]
            assert (todo.revision, todo.updated_at) == (seq, at)
            assert todo.claim is not None and todo.claim["heartbeat_at"] == at
            assert todo.claim["lease_expires_at"] == event["data"]["lease_expires_at"]


def test_snapshot_rows_hold_every_field_in_declaration_order(demo: FileStore) -> None:
    """Each entity's row is its fields' values in declaration order (what `decode_state`
    passes positionally), written as a JSON array."""
    from dataclasses import fields

    from loopx.state.entities import _ENTITY_TYPES

    for goal_id in demo.goal_ids():
        state = replay(demo.read(goal_id).events)
        assert state is not None
        rows = orjson.loads(orjson.dumps(encode_state(state)))
        for name, cls in _ENTITY_TYPES.items():
            names = [f.name for f in fields(cls)]
            assert len(names) > 1
            expected = [[getattr(e, n) for n in names] for e in getattr(state, name).values()]
            assert rows[name] == orjson.loads(orjson.dumps(expected)), (goal_id, name)
