"""Injected I/O faults: for every call of an append, a goal creation and a tail repair, a
failure leaves the ledger all-old or all-new, the error is a clear `io_error`, and the next
operation succeeds without losing or duplicating an acknowledged event.

Faults come in through the one seam, `loopx.store.fsio` (see faultfs.py for the modes).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from faultfs import FaultFS, PowerCut

from loopx.engine.commands import AddTodo, AdoptHandoff, ClaimTodo, CreateGoal, PrepareHandoff
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.model.errors import StorageError
from loopx.store import fsio
from loopx.store.filestore import FileStore
from loopx.store.ledger import Cursor, scan
from tests.conftest import make_ctx, run_cli

ROOT = Path(__file__).resolve().parents[2]
GOAL = "g"
# (mode, keep): keep is how many bytes a torn or short write stores before it fails.
FAULTS = [
    ("eio", 0),
    ("enospc", 0),
    ("short", 7),
    ("cut", 7),
    ("cut", 1 << 30),  # everything but the last byte: a line that only lacks its newline
    ("cut_lose", 7),
]


@pytest.fixture(autouse=True)
def _restore_fs() -> Iterator[None]:
    previous = fsio.current()
    yield
    fsio.install(previous)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with goal `g` (goal.created + 3 todos), cached snapshot and all."""
    root = tmp_path_factory.mktemp("base")
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    create_goal(
        ctx,
        CreateGoal(goal_id=GOAL, title="Goal", objective="Survive faults", operation_id="op-goal"),
    )
    for i in range(3):
        add_todo(ctx, AddTodo(goal_id=GOAL, title=f"todo {i}", operation_id=f"op-base-{i}"))
    return root


def clone(src: Path, dst: Path) -> Path:
    shutil.copytree(src / ".loopx", dst / ".loopx")
    return dst


@dataclass
class Outcome:
    result: Any = None
    error: BaseException | None = None
    fs: FaultFS | None = None


def run_with(fs: FaultFS, op: Callable[[FileStore], Any], root: Path) -> Outcome:
    """Run `op` on a fresh store over `root` with `fs` installed, like one process would."""
    previous = fsio.install(fs)
    out = Outcome(fs=fs)
    try:
        out.result = op(FileStore(root))
    except (Exception, PowerCut) as err:
        out.error = err
    finally:
        fsio.install(previous)
        fs.release()
    return out


def events(root: Path, goal: str) -> tuple[list[dict[str, Any]], Any]:
    raw = FileStore(root).raw(goal)
    result = scan(raw, Cursor(), goal_id=goal)
    return result.events, result.damage


def quarantined(root: Path, goal: str) -> list[bytes]:
    qdir = root / ".loopx" / "goals" / goal / "quarantine"
    if not qdir.is_dir():
        return []
    return [p.read_bytes() for p in sorted(qdir.glob("*.bin"))]


def count_calls(base: Path, tmp: Path, op: Callable[[FileStore], Any]) -> list[str]:
    probe = FaultFS()
    out = run_with(probe, op, clone(base, tmp / "probe"))
    assert out.error is None, out.error
    return probe.calls


def add_new(store: FileStore) -> Any:
    return add_todo(
        make_ctx(store), AddTodo(goal_id=GOAL, title="the new one", operation_id="op-new")
    )


def check_fault_outcome(
    out: Outcome, before: list[dict[str, Any]], after: list[dict[str, Any]], op_id: str
) -> bool:
    """Assert the all-old-or-all-new rule; return True when the new event is in."""
    new = [e for e in after if e["operation_id"] == op_id]
    assert after[: len(before)] == before, "an acknowledged event changed or vanished"
    assert len(after) - len(before) == len(new) <= 1, "something other than the op was written"
    if out.error is None:
        assert out.result.status == "applied"
        assert len(new) == 1, "a receipt was returned for an event that is not in the ledger"
    elif isinstance(out.error, PowerCut):
        pass  # no receipt was returned: either state is allowed
    else:
        assert isinstance(out.error, StorageError), repr(out.error)
        assert out.error.code == "io_error"
        assert out.error.details["errno"] in ("EIO", "ENOSPC")
        assert "could not" in out.error.message
        assert not new, "a failed append left its event behind"
    return bool(new)


def recover(root: Path, op: Callable[[FileStore], Any], had_new: bool) -> None:
    """The next process retries the same operation id, then appends once more."""
    store = FileStore(root)
    retry = op(store)
    assert retry.status == ("replayed" if had_new else "applied")
    more = add_todo(
        make_ctx(store), AddTodo(goal_id=GOAL, title="after the fault", operation_id="op-after")
    )
    assert more.status == "applied"
    report = store.verify(GOAL)
    assert report.ok, report.damage


def _cases(calls: int) -> list[tuple[int, str, int]]:
    return [(i, mode, keep) for i in range(calls) for mode, keep in FAULTS]


# -- one append ---------------------------------------------------------------------------


def test_every_call_of_an_append_fails_cleanly(base: Path, tmp_path: Path) -> None:
    calls = count_calls(base, tmp_path, add_new)
    # The append touches at least: lock, read, write, fsync of the ledger, and the snapshot.
    for needed in ("lock", "write", "fsync", "replace"):
        assert needed in calls
    before, _ = events(base, GOAL)
    for index, mode, keep in _cases(len(calls)):
        root = clone(base, tmp_path / f"append-{index}-{mode}-{keep}")
        out = run_with(FaultFS(index, mode, keep), add_new, root)
        after, damage = events(root, GOAL)
        torn = b""
        if damage is not None:
            assert mode in ("cut", "cut_lose"), f"{mode}@{index} left a torn tail"
            torn = FileStore(root).raw(GOAL)[damage.offset :]
        had_new = check_fault_outcome(out, before, after, "op-new")
        recover(root, add_new, had_new)
        final, _ = events(root, GOAL)
        assert final[: len(before)] == before
        assert [e["operation_id"] for e in final].count("op-new") == 1
        if torn:  # the torn bytes were quarantined, not dropped
            assert torn in quarantined(root, GOAL)


def test_a_failed_append_reports_io_error_through_the_cli(base: Path, tmp_path: Path) -> None:
    root = clone(base, tmp_path / "cli")
    ledger = root / ".loopx/goals/g/ledger.jsonl"
    before = ledger.read_bytes()
    calls = count_calls(base, tmp_path, add_new)
    write_at = calls.index("write", calls.index("size"))  # the ledger write, not the snapshot
    fsio.install(FaultFS(write_at, "enospc"))
    out = run_cli(["todo", "add", "--root", str(root), "--goal-id", GOAL, "--title", "x"])
    assert out.exit_code == 5
    assert out.stderr.startswith("loopx: error [io_error]: could not append to the ledger")
    assert "Traceback" not in out.stderr + out.stdout
    assert ledger.read_bytes() == before
    fsio.install(FaultFS(write_at, "eio"))
    out = run_cli(
        ["todo", "add", "--root", str(root), "--goal-id", GOAL, "--title", "x", "--format", "json"]
    )
    assert out.exit_code == 5
    assert out.json()["error"]["code"] == "io_error"
    assert out.json()["error"]["details"]["errno"] == "EIO"
    assert ledger.read_bytes() == before


def test_a_failing_read_is_io_error_not_a_traceback(base: Path, tmp_path: Path) -> None:
    root = clone(base, tmp_path / "read")
    for index in range(6):
        fsio.install(FaultFS(index, "eio"))
        out = run_cli(["status", "--root", str(root), "--goal-id", GOAL, "--format", "json"])
        fsio.install(fsio.FileSystem())
        assert out.exit_code in (0, 5), out
        if out.exit_code == 5:
            assert out.json()["error"]["code"] == "io_error"
        else:  # the failed call was the snapshot cache: it is replayed from the ledger instead
            assert out.json()["goals"][0]["revision"] == 4


# -- goal creation ------------------------------------------------------------------------


def create_new(store: FileStore) -> Any:
    ctx = make_ctx(store)
    return create_goal(
        ctx,
        CreateGoal(goal_id="fresh", title="Fresh", objective="Be born", operation_id="op-create"),
    )


def test_every_call_of_a_goal_creation_fails_cleanly(base: Path, tmp_path: Path) -> None:
    calls = count_calls(base, tmp_path, create_new)
    assert "mkdir" in calls  # the goal's folder, made durable before its ledger
    for index, mode, keep in _cases(len(calls)):
        root = clone(base, tmp_path / f"create-{index}-{mode}-{keep}")
        out = run_with(FaultFS(index, mode, keep), create_new, root)
        store = FileStore(root)
        after, damage = events(root, "fresh")
        if damage is not None:
            assert mode in ("cut", "cut_lose")
        had_new = check_fault_outcome(out, [], after, "op-create")
        assert store.exists("fresh") == (had_new or damage is not None)
        retry = create_new(store)
        assert retry.status == ("replayed" if had_new else "applied")
        assert store.verify("fresh").ok
        assert [e["type"] for e in store.read("fresh").events] == ["goal.created"]
        # the other goal is untouched
        assert store.verify(GOAL).ok


# -- a tail repair (quarantine) -----------------------------------------------------------

TORN = b'{"actor":{"agent_id":"agent-a","session_id":"s1"},"data":{"title":"half a li'


@pytest.fixture(scope="module")
def torn_base(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = clone(base, tmp_path_factory.mktemp("torn"))
    with open(root / ".loopx/goals/g/ledger.jsonl", "ab") as fh:
        fh.write(TORN)
    return root


def test_every_call_of_a_tail_repair_fails_cleanly(
    base: Path, torn_base: Path, tmp_path: Path
) -> None:
    calls = count_calls(torn_base, tmp_path, add_new)
    assert calls.count("truncate") >= 1 and calls.count("fsync") >= 3
    intact, _ = events(base, GOAL)
    intact_bytes = (base / ".loopx/goals/g/ledger.jsonl").read_bytes()
    for index, mode, keep in _cases(len(calls)):
        root = clone(torn_base, tmp_path / f"repair-{index}-{mode}-{keep}")
        out = run_with(FaultFS(index, mode, keep), add_new, root)
        raw = (root / ".loopx/goals/g/ledger.jsonl").read_bytes()
        after, damage = events(root, GOAL)
        assert raw.startswith(intact_bytes)
        if not raw.startswith(intact_bytes + TORN):
            # the tail was cut: only after its bytes were durably kept
            assert TORN in quarantined(root, GOAL), f"{mode}@{index} lost the torn tail"
        had_new = check_fault_outcome(out, intact, after, "op-new")
        if damage is None:  # repaired (perhaps before the append itself failed)
            assert TORN in quarantined(root, GOAL)
        recover(root, add_new, had_new)
        assert TORN in quarantined(root, GOAL)
        final, _ = events(root, GOAL)
        assert final[: len(intact)] == intact
        assert [e["operation_id"] for e in final].count("op-new") == 1


def test_repairs_at_one_offset_never_overwrite_each_other(base: Path, tmp_path: Path) -> None:
    """Two different torn tails cut at the same offset are both kept."""
    root = clone(base, tmp_path / "twice")
    ledger = root / ".loopx/goals/g/ledger.jsonl"
    good = ledger.read_bytes()
    store = FileStore(root)
    for n, junk in enumerate((b"first torn tail", b"second torn tail")):
        ledger.write_bytes(good + junk)
        result = add_todo(
            make_ctx(store), AddTodo(goal_id=GOAL, title="t", operation_id=f"op-twice-{n}")
        )
        assert result.repair is not None and result.repair["offset"] == len(good)
        ledger.write_bytes(good)  # forget that append so the next tear lands at the same offset
    assert sorted(quarantined(root, GOAL)) == [b"first torn tail", b"second torn tail"]


# -- a two-event operation (handoff adopt: handoff.adopted + todo.claimed) -------------


@pytest.fixture(scope="module")
def handoff_base(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from loopx.engine.handoff import prepare_handoff
    from loopx.engine.todos import claim_todo

    root = clone(base, tmp_path_factory.mktemp("handoff"))
    store = FileStore(root)
    claim_todo(
        make_ctx(store, agent="agent-a"),
        ClaimTodo(goal_id=GOAL, todo_id="todo-1", operation_id="op-claim"),
    )
    note = {"work_summary": "half done", "next_steps": ["finish it"]}
    prepare_handoff(
        make_ctx(store, agent="agent-a"), PrepareHandoff(goal_id=GOAL, todo_id="todo-1", note=note)
    )
    return root


def adopt(store: FileStore) -> Any:
    from loopx.engine.handoff import adopt_handoff

    ctx = make_ctx(store, agent="agent-b", session="s2")
    return adopt_handoff(ctx, AdoptHandoff(goal_id=GOAL, todo_id="todo-1", operation_id="op-adopt"))


def test_every_call_of_a_two_event_operation_is_all_or_nothing(
    handoff_base: Path, tmp_path: Path
) -> None:
    calls = count_calls(handoff_base, tmp_path, adopt)
    before, _ = events(handoff_base, GOAL)
    probe = clone(handoff_base, tmp_path / "lines")
    adopt(FileStore(probe))
    new_lines = FileStore(probe).raw(GOAL)[len(FileStore(handoff_base).raw(GOAL)) :]
    first_line = len(new_lines.split(b"\n")[0]) + 1
    # torn exactly after the first event's newline: the nastiest cut for a 2-event write
    faults = [*FAULTS, ("cut", first_line), ("cut_lose", first_line), ("short", first_line)]
    for index in range(len(calls)):
        for mode, keep in faults:
            root = clone(handoff_base, tmp_path / f"adopt-{index}-{mode}-{keep}")
            out = run_with(FaultFS(index, mode, keep), adopt, root)
            after, damage = events(root, GOAL)
            ops = [e["operation_id"] for e in after[len(before) :]]
            assert ops in ([], ["op-adopt", "op-adopt"]), f"{mode}@{index}: half an operation"
            assert after[: len(before)] == before
            if out.error is None:
                assert ops == ["op-adopt", "op-adopt"]
            elif not isinstance(out.error, PowerCut):
                assert isinstance(out.error, StorageError) and not ops
            store = FileStore(root)
            retry = adopt(store)
            assert retry.status == ("replayed" if ops else "applied")
            final = store.read(GOAL).events
            assert [e["operation_id"] for e in final].count("op-adopt") == 2
            assert final[-1]["type"] == "todo.claimed" and "more" not in final[-1]
            assert final[-2]["type"] == "handoff.adopted" and final[-2]["more"] is True
            assert store.verify(GOAL).ok


def test_a_ledger_ending_inside_an_operation_reads_as_a_torn_tail(
    handoff_base: Path, tmp_path: Path
) -> None:
    root = clone(handoff_base, tmp_path / "open-op")
    store = FileStore(root)
    intact = store.raw(GOAL)
    adopt(store)
    full = store.raw(GOAL)
    first = full[: full.index(b"\n", len(intact)) + 1]  # goal so far + handoff.adopted only
    store.ledger_path(GOAL).write_bytes(first)
    scan_ = store.read(GOAL)
    assert scan_.damage is not None and scan_.damage.offset == len(intact)
    assert "incomplete" in scan_.damage.reason
    assert [e["operation_id"] for e in scan_.events].count("op-adopt") == 0
    report = store.verify(GOAL)
    assert not report.ok and report.damage[-1]["kind"] == "tail"
    retry = adopt(store)  # the repair quarantines the half operation; the retry applies it
    assert retry.status == "applied" and retry.repair is not None
    assert quarantined(root, GOAL) == [first[len(intact) :]]
    assert store.verify(GOAL).ok


# -- the seam itself ----------------------------------------------------------------------

_STRAY = re.compile(
    r"\bos\.(open|write|pwrite|fsync|fdatasync|ftruncate|truncate|replace|rename|unlink|remove"
    r"|mkdir|makedirs|rmdir)\(|\bfcntl\.(flock|lockf)\(|(?<![\w.])open\(|(?<!\bfs)\.(write_bytes|write_text"
    r"|read_bytes|read_text|mkdir|unlink|rename|replace|touch|rmdir)\(|\bshutil\."
)


def _stray_calls(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _STRAY.search(line) and not line.strip().startswith("#")
    ]


# The store broker's own files — its socket, lock and log, and the pipe it signals readiness
# on — live in this user's private runtime folder, outside every project, and are checked
# there (owner, mode 0700, no link: broker_wire.private_dir), not through the project seam.
_RUNTIME = {"fsio.py", "broker.py", "broker_client.py", "broker_wire.py"}


def test_every_store_file_operation_goes_through_fsio() -> None:
    """Grep the store for file I/O (reads included) that bypasses fsio."""
    files = sorted((ROOT / "loopx" / "store").glob("*.py"))
    stray = [hit for f in files if f.name not in _RUNTIME for hit in _stray_calls(f)]
    assert stray == []


def test_the_grep_would_catch_a_stray_call(tmp_path: Path) -> None:
    sample = ROOT / "tests" / "robustness" / "faultfs.py"  # it calls os.truncate on purpose
    assert _stray_calls(sample)
