"""Damaged ledgers: a torn or garbled tail is quarantined (its bytes kept, no acknowledged
event lost) and new appends go on; damage before the last line is refused as
`ledger_corrupt` with its offset and never cut; `loopx verify` sees any single changed byte.

Thousands of small ledgers are written here, so they live on tmpfs (see scratch.py).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scratch import scratch

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.core import load_state
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.model.errors import LedgerDamage
from loopx.store.base import stamp
from loopx.store.filestore import FileStore
from loopx.store.ledger import Cursor, encode_line, scan
from tests.conftest import make_ctx, run_cli

GOAL = "g"


@pytest.fixture
def tmp_path(tmp_path: Path) -> Iterator[Path]:
    with scratch(tmp_path) as folder:
        yield folder


LONG_TITLE = "A todo whose title is long enough to make its line longer than one block " * 6


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a small ledger: goal.created, three todos, and one long last line."""
    root = tmp_path_factory.mktemp("pristine")
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    create_goal(
        ctx,
        CreateGoal(goal_id=GOAL, title="Goal", objective="Survive damage", operation_id="op-goal"),
    )
    for i in range(3):
        add_todo(ctx, AddTodo(goal_id=GOAL, title=f"todo {i}", operation_id=f"op-{i}"))
    add_todo(ctx, AddTodo(goal_id=GOAL, title=LONG_TITLE[:500], operation_id="op-long"))
    return store.raw(GOAL)


def lines(buf: bytes) -> list[bytes]:
    return buf.splitlines(keepends=True)


def fresh(tmp_path: Path, name: str, content: bytes) -> tuple[FileStore, Path]:
    root = tmp_path / name
    store = FileStore(root)
    store.init()
    ledger = store.ledger_path(GOAL)
    ledger.parent.mkdir(parents=True)
    ledger.write_bytes(content)
    return store, ledger


def quarantined(store: FileStore) -> list[bytes]:
    qdir = store.quarantine_dir(GOAL)
    return [p.read_bytes() for p in sorted(qdir.glob("*.bin"))] if qdir.is_dir() else []


def intact_events(buf: bytes) -> list[dict[str, Any]]:
    return scan(buf, Cursor(), goal_id=GOAL).events


def assert_recovers(store: FileStore, ledger: Path, intact: bytes, damaged: bytes, n: int) -> None:
    """The damaged tail is reported, then quarantined by the next write, which succeeds."""
    scan_ = store.read(GOAL)
    assert scan_.damage is not None and scan_.damage.offset == len(intact)
    assert scan_.events == intact_events(intact)
    report = store.verify(GOAL)
    assert not report.ok and [d["kind"] for d in report.damage] == ["tail"]
    result = add_todo(
        make_ctx(store), AddTodo(goal_id=GOAL, title="after repair", operation_id=f"op-after-{n}")
    )
    assert result.status == "applied"
    assert result.repair is not None
    assert (result.repair["offset"], result.repair["length"]) == (len(intact), len(damaged))
    assert quarantined(store) == [damaged]
    assert (store.root / result.repair["quarantine"]).read_bytes() == damaged
    after = ledger.read_bytes()
    assert after.startswith(intact)  # every acknowledged byte is still there
    assert store.verify(GOAL).ok
    events = store.read(GOAL).events
    assert events[:-1] == intact_events(intact)
    assert events[-1]["operation_id"] == f"op-after-{n}"


# -- the last line ------------------------------------------------------------------------


def test_the_last_line_cut_at_every_byte_offset_recovers(pristine: bytes, tmp_path: Path) -> None:
    *head, last = lines(pristine)
    intact = b"".join(head)
    assert len(last) > 600
    for cut in range(1, len(last)):
        torn = last[:cut]
        store, ledger = fresh(tmp_path, f"cut{cut}", intact + torn)
        assert_recovers(store, ledger, intact, torn, cut)


def test_the_last_line_with_a_zeroed_512_byte_block_recovers(
    pristine: bytes, tmp_path: Path
) -> None:
    *head, last = lines(pristine)
    intact = b"".join(head)
    for start in (0, 1, 100, len(last) - 513, len(last) - 512):
        damaged = last[:start] + bytes(512) + last[start + 512 :]
        assert len(damaged) == len(last)
        store, ledger = fresh(tmp_path, f"zero{start}", intact + damaged)
        assert_recovers(store, ledger, intact, damaged, start)


GARBAGE = {
    "random": bytes(random.Random(11).randrange(256) for _ in range(300)),
    "random-lines": b"\n".join(
        bytes(random.Random(n).randrange(256) for _ in range(40)) for n in range(5)
    ),
    "newline": b"\n",
    "text-line": b"hello, I am not an event\n",
    "json-without-sum": b'{"seq": 6, "type": "todo.added"}\n',
    "nul-bytes": bytes(64),
    "deep-json": b"[" * 5000 + b"]" * 5000 + b"\n",
    "bad-sum": b'{"seq":6,"sum":"' + b"0" * 64 + b'"}\n',
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_after_the_last_line_is_quarantined(
    kind: str, pristine: bytes, tmp_path: Path
) -> None:
    junk = GARBAGE[kind]
    store, ledger = fresh(tmp_path, kind, pristine + junk)
    assert_recovers(store, ledger, pristine, junk, 0)


def _forged(pristine: bytes) -> dict[str, bytes]:
    """Intact lines (their own checksum holds) that do not continue the chain."""
    *_, last = lines(pristine)
    events = intact_events(pristine)
    head = {k: v for k, v in events[-1].items() if k != "sum"}
    nxt = head["seq"] + 1
    return {
        "duplicate-last-line": last,
        "broken-chain": encode_line(dict(head, seq=nxt))[0],
        "seq-gap": encode_line(dict(head, seq=nxt + 1, prev=events[-1]["sum"]))[0],
        "other-goal": encode_line(dict(head, seq=nxt, prev=events[-1]["sum"], goal_id="o"))[0],
    }


@pytest.mark.parametrize("kind", ["duplicate-last-line", "broken-chain", "seq-gap", "other-goal"])
def test_an_intact_line_that_does_not_chain_is_refused_not_cut(
    kind: str, pristine: bytes, tmp_path: Path
) -> None:
    """No torn write has a valid checksum: such a last line means history was edited."""
    content = pristine + _forged(pristine)[kind]
    store, ledger = fresh(tmp_path, kind, content)
    with pytest.raises(LedgerDamage) as caught:
        store.read(GOAL)
    assert caught.value.code == "ledger_corrupt"
    assert caught.value.details["offset"] == len(pristine)
    with pytest.raises(LedgerDamage):
        add_todo(make_ctx(store), AddTodo(goal_id=GOAL, title="refused", operation_id="op-refused"))
    assert ledger.read_bytes() == content and quarantined(store) == []
    assert store.verify(GOAL).damage[0]["kind"] == "corrupt"


def test_the_cli_reports_and_repairs_a_torn_tail(pristine: bytes, tmp_path: Path) -> None:
    store, ledger = fresh(tmp_path, "cli", pristine + b'{"seq":6,"ty')
    root = str(store.root)
    out = run_cli(["verify", "--root", root])
    assert out.exit_code == 5 and "tail damage at byte" in out.stdout
    status = run_cli(["status", "--root", root, "--format", "json"])
    assert status.exit_code == 0
    assert status.json()["goals"][0]["health"]["state"] == "tail_damaged"
    add = run_cli(["todo", "add", "--root", root, "--goal-id", GOAL, "--title", "next"])
    assert add.exit_code == 0
    assert f"repaired a damaged ledger tail: 12 bytes at offset {len(pristine)}" in add.stdout
    assert run_cli(["verify", "--root", root]).exit_code == 0
    assert quarantined(store) == [b'{"seq":6,"ty']


# -- damage before the last line ----------------------------------------------------------


def _offsets(buf: bytes) -> list[int]:
    out, pos = [], 0
    for line in lines(buf):
        out.append(pos)
        pos += len(line)
    return out


@pytest.mark.parametrize("damage", ["flip", "zero-block", "delete-line", "swap-lines", "insert"])
def test_damage_before_the_last_line_is_refused_with_its_offset(
    damage: str, pristine: bytes, tmp_path: Path
) -> None:
    all_lines = lines(pristine)
    starts = _offsets(pristine)
    for index in range(len(all_lines) - 1):
        buf = list(all_lines)
        line = buf[index]
        if damage == "flip":
            mid = len(line) // 2
            buf[index] = line[:mid] + bytes([line[mid] ^ 0x20]) + line[mid + 1 :]
        elif damage == "zero-block":
            buf[index] = bytes(min(512, len(line) - 1)) + line[min(512, len(line) - 1) :]
        elif damage == "delete-line":
            del buf[index]
        elif damage == "swap-lines":
            buf[index], buf[index + 1] = buf[index + 1], buf[index]
        else:
            buf.insert(index, b"an inserted line\n")
        content = b"".join(buf)
        store, ledger = fresh(tmp_path, f"{damage}{index}", content)
        with pytest.raises(LedgerDamage) as caught:
            store.read(GOAL)
        assert caught.value.code == "ledger_corrupt"
        assert caught.value.details["offset"] == starts[index]
        # a write is refused and cuts nothing
        with pytest.raises(LedgerDamage):
            add_todo(
                make_ctx(store), AddTodo(goal_id=GOAL, title="refused", operation_id="op-refused")
            )
        assert ledger.read_bytes() == content
        assert quarantined(store) == []
        report = store.verify(GOAL).to_dict()
        assert report["ok"] is False
        assert report["damage"][0]["kind"] == "corrupt"
        assert report["damage"][0]["offset"] == starts[index]
    # and through the CLI: exit 5, the code, the offset, nothing written
    root = str(store.root)
    out = run_cli(["todo", "add", "--root", root, "--goal-id", GOAL, "--title", "x"])
    assert out.exit_code == 5 and "[ledger_corrupt]" in out.stderr
    out = run_cli(
        ["todo", "add", "--root", root, "--goal-id", GOAL, "--title", "x", "--format", "json"]
    )
    assert out.exit_code == 5
    assert out.json()["error"]["code"] == "ledger_corrupt"
    assert isinstance(out.json()["error"]["details"]["offset"], int)
    assert ledger.read_bytes() == content


# -- every single changed byte ------------------------------------------------------------


def test_verify_reports_every_single_changed_byte(pristine: bytes, tmp_path: Path) -> None:
    store, ledger = fresh(tmp_path, "flips", pristine)
    assert store.verify(GOAL).ok
    rng = random.Random(5)
    sample = set(rng.sample(range(len(pristine)), 100))
    for pos in range(len(pristine)):
        for mask in (0x01, rng.randrange(1, 256)):
            changed = bytearray(pristine)
            changed[pos] ^= mask
            ledger.write_bytes(bytes(changed))
            report = store.verify(GOAL)
            assert not report.ok, f"a change at byte {pos} went unnoticed"
            assert report.damage[0]["offset"] <= pos
        if pos in sample:  # and the command itself, on a sample of positions
            out = run_cli(["verify", "--root", str(store.root), "--format", "json"])
            assert out.exit_code == 5 and out.json()["ok"] is False


def test_a_reader_waits_for_a_write_in_flight_instead_of_reporting_damage(
    pristine: bytes, tmp_path: Path
) -> None:
    """A lock-free reader that sees a half-written line re-reads under a shared lock."""
    store, ledger = fresh(tmp_path, "inflight", pristine)
    events = intact_events(pristine)
    cursor = Cursor(seq=events[-1]["seq"], head=events[-1]["sum"], offset=len(pristine))
    envelope = {k: v for k, v in events[-1].items() if k not in ("seq", "prev", "sum")}
    data, _, _ = stamp([dict(envelope, operation_id="op-inflight")], cursor)
    half_written, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.writing(GOAL), open(ledger, "ab", buffering=0) as fh:
            fh.write(data[:40])
            half_written.set()
            release.wait(10)
            fh.write(data[40:])

    thread = threading.Thread(target=writer)
    thread.start()
    assert half_written.wait(10)
    results: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: results.update(report=store.verify(GOAL)))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive(), "the reader did not wait for the writer's lock"
    release.set()
    thread.join(10)
    reader.join(10)
    assert results["report"].ok and results["report"].events == len(events) + 1
    loaded = load_state(store, GOAL)
    assert loaded.damage is None and loaded.cursor.seq == len(events) + 1
