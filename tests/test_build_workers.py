"""A build in worker processes (`loopx.build.work`): the same bytes as a serial one.

`LOOPX_BUILD_WORKERS=2` forces the pools on a small project: the ledgers are read and folded
ahead in workers (each leaving its goal's snapshot), and the units rendered in workers.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson

from loopx.build import work
from loopx.build.pipeline import build
from loopx.engine.core import load_state
from loopx.engine.demo import REV_NEW
from loopx.state.entities import encode_state
from loopx.store.filestore import FileStore
from tests.conftest import run_cli, walked_goals


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _cold(root: Path) -> None:
    shutil.rmtree(root / ".loopx" / "cache", ignore_errors=True)


def test_a_build_in_workers_writes_the_bytes_of_a_serial_build(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "1")
    _cold(demo)
    build(demo, tmp_path / "serial", head=REV_NEW)
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    _cold(demo)
    build(demo, tmp_path / "workers", head=REV_NEW)
    serial, parallel = _tree(tmp_path / "serial"), _tree(tmp_path / "workers")
    assert len(serial) > 20 and parallel == serial


def test_folding_ahead_leaves_each_goal_the_snapshot_a_cold_fold_gives(
    demo: Path, monkeypatch: Any
) -> None:
    _cold(demo)
    store = FileStore(demo)
    ids = store.goal_ids()
    assert len(ids) >= 2
    cold = {g: orjson.dumps(encode_state(load_state(store, g, cache=False).state)) for g in ids}
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    work.fold_ahead(store, ids)
    assert all(store.load_snapshot(g) is not None for g in ids)  # written by the workers
    warm = {g: orjson.dumps(encode_state(load_state(store, g).state)) for g in ids}
    assert warm == cold


def test_a_damaged_ledger_is_reported_alike_with_or_without_workers(
    demo: Path, tmp_path: Path
) -> None:
    store = FileStore(demo)
    ledger = store.ledger_path(store.goal_ids()[0])
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"', b"'", 2)  # a line that no longer parses
    ledger.write_bytes(b"".join(lines))
    results = []
    for workers in ("1", "2"):
        _cold(demo)
        out = tmp_path / f"site-{workers}"
        args = ["build", "--root", str(demo), "--out", str(out), "--head", REV_NEW]
        results.append(run_cli(args, env={"LOOPX_BUILD_WORKERS": workers}))
    serial, parallel = results
    assert serial.exit_code != 0 and "Traceback" not in serial.stderr
    assert (parallel.exit_code, parallel.stderr) == (serial.exit_code, serial.stderr)


def test_folding_ahead_works_out_each_goals_boundary_strings_as_the_parent_would(
    demo: Path, monkeypatch: Any
) -> None:
    """With a place for them, the fold workers also work out each goal's boundary strings
    (`goal_strings`) at the head they folded: what this process works out of the same state."""
    from loopx.build.boundary import goal_strings

    _cold(demo)
    store = FileStore(demo)
    ids = store.goal_ids()
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    strings: dict[str, Any] = {}
    work.fold_ahead(store, ids, strings)
    assert sorted(strings) == sorted(ids)
    for goal_id in ids:
        state = load_state(store, goal_id, cache=False).state
        assert strings[goal_id] == (state.head, goal_strings(state))
    work.fold_ahead(store, ids)  # none asked for: none worked out (nothing to put them in)
    held = {ids[0]: ("an older head", strings[ids[0]][1])}  # what a merge may advance from
    work.fold_ahead(store, ids, held)
    assert held[ids[0]][0] == "an older head" and held[ids[1]] == strings[ids[1]]


def test_a_cold_build_takes_the_strings_its_fold_workers_worked_out(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """A cold build in workers (as the CLI runs it: with the build memo) merges the strings
    its fold workers made: it works out no goal's strings itself, and writes the bytes a
    serial build writes."""
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "1")
    _cold(demo)
    build(demo, tmp_path / "serial", head=REV_NEW)
    made = walked_goals(monkeypatch)
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    _cold(demo)
    build(demo, tmp_path / "workers", head=REV_NEW, reuse=True)
    assert made == []  # in this process: the workers' own copies of it were not counted
    assert _tree(tmp_path / "workers") == _tree(tmp_path / "serial")


def test_a_build_that_finds_a_memo_of_strings_asks_its_fold_workers_for_none(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """The fold workers work out the goals' strings only for a merge from nothing: a build
    that finds the boundary's memo of an earlier build (a new output folder, the build
    memo gone) merges from it and would throw theirs away."""
    from loopx.build import pipeline

    asked: list[Any] = []
    real = pipeline.fold_ahead

    def recording(store: Any, goal_ids: list[str], strings: Any = None, folded: Any = None) -> None:
        asked.append(strings is not None)
        real(store, goal_ids, strings, folded)

    monkeypatch.setattr(pipeline, "fold_ahead", recording)
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    _cold(demo)
    shutil.rmtree(demo / ".loopx" / "private" / "cache" / "scan", ignore_errors=True)
    build(demo, tmp_path / "first", head=REV_NEW, reuse=True)
    _cold(demo)  # the build memo and snapshots gone; the boundary's memo kept
    build(demo, tmp_path / "second", head=REV_NEW, reuse=True)
    assert asked == [True, False]
    assert _tree(tmp_path / "second") == _tree(tmp_path / "first")


def test_the_parent_reads_each_goal_as_soon_as_its_fold_worker_has_folded_it(
    demo: Path, monkeypatch: Any
) -> None:
    """`fold_ahead` tells its caller of each goal a worker folded as it arrives, and `gather`
    reads that goal's fresh snapshot then, while the workers fold the others: each goal is
    read once, all of them before the pool is done, into the states a cold fold gives."""
    from loopx.build import pipeline

    _cold(demo)
    store = FileStore(demo)
    ids = store.goal_ids()
    cold = {g: orjson.dumps(encode_state(load_state(store, g, cache=False).state)) for g in ids}
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    told: list[str] = []
    work.fold_ahead(store, ids, None, told.append)
    assert sorted(told) == sorted(ids)

    _cold(demo)
    folding = [False]
    read: list[tuple[str, bool]] = []
    real_fold, real_load = pipeline.fold_ahead, pipeline.load_state

    def fold_ahead(*args: Any) -> None:
        folding[0] = True
        try:
            real_fold(*args)
        finally:
            folding[0] = False

    def load(store: Any, goal_id: str, **kwargs: Any) -> Any:
        read.append((goal_id, folding[0]))
        return real_load(store, goal_id, **kwargs)

    monkeypatch.setattr(pipeline, "fold_ahead", fold_ahead)
    monkeypatch.setattr(pipeline, "load_state", load)
    goals = pipeline.gather(store)
    assert sorted(g for g, _ in read) == sorted(ids)  # once each
    assert all(during for _, during in read)  # while the workers were folding
    assert {g: orjson.dumps(encode_state(s)) for g, s in goals.items()} == cold
