"""A snapshot counts only on the host that wrote it (`loopx.store.snapshots`): its cursor can
be worked out from the ledger, so a checkout or copy that brings `.loopx/cache/` with a forged
state (or operations index) at the right cursor must not be read as the goal's state."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.core import load_state
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx

G = "g"


def _project(root: Path) -> FileStore:
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Ship"))
    for i in range(30):
        add_todo(ctx, AddTodo(goal_id=G, todo_id=f"t{i}", title=f"Title {i}"))
    load_state(store, G)  # a snapshot is saved
    return store


def test_a_snapshot_a_copy_brings_is_not_read(tmp_path: Path) -> None:
    origin = _project(tmp_path / "origin")
    forged = origin.load_snapshot(G)
    assert forged is not None and b'"Title 7"' in forged
    origin.save_snapshot(G, forged.replace(b'"Title 7"', b'"Forged"'))
    assert load_state(origin, G).state.todos["t7"].title == "Forged"  # this host's own cache
    shutil.copytree(tmp_path / "origin", tmp_path / "clone")  # as a checkout makes the files
    clone = FileStore(tmp_path / "clone")
    assert clone.load_snapshot(G) is None
    assert load_state(clone, G).state.todos["t7"].title == "Title 7"
    assert clone.load_snapshot(G) is not None  # its own, from the ledger


def test_an_operations_index_a_copy_brings_is_not_read(tmp_path: Path) -> None:
    origin = _project(tmp_path / "origin")
    origin.save_index(G, b"forged")
    shutil.copytree(tmp_path / "origin", tmp_path / "clone")
    assert origin.load_index(G) == b"forged"
    assert FileStore(tmp_path / "clone").load_index(G) is None


def test_a_cache_without_a_host_mark_keeps_nothing(tmp_path: Path) -> None:
    store = _project(tmp_path / "p")
    host = store.state_dir / "cache" / "host"
    host.unlink()
    host.mkdir()  # not a regular file: no mark to be had
    fresh = FileStore(tmp_path / "p")
    assert fresh.load_snapshot(G) is None
    fresh.save_snapshot(G, b"x")
    assert fresh.load_snapshot(G) is None
    assert load_state(fresh, G).state.todos["t7"].title == "Title 7"


def test_the_host_mark_is_what_another_process_reads_right_after_its_file_is_made(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The mark is the identity of the `host` file, ctime included: it is made in the one
    call that creates it, so a process that reads it right after (before the maker goes on)
    takes the mark every later read takes. (A write after the create changed the ctime:
    two fold workers of a cold build took two marks, and one's snapshots counted for
    nothing.)"""
    from loopx.store import fsio
    from loopx.store.snapshots import host_mark

    folder = tmp_path / "cache"
    seen: list[str] = []
    real_open, real_write = fsio.FileSystem.open, fsio.FileSystem.write

    def open_(self: Any, path: Path, flags: int, mode: int = 0o644) -> int:
        fd = real_open(self, path, flags, mode)
        if path.name == "host" and flags & os.O_CREAT:
            seen.append(host_mark(folder, create=False))  # another process, right then
        return fd

    def write(self: Any, fd: int, data: bytes) -> int:
        time.sleep(0.02)  # any write a moment later gives the file another ctime
        return real_write(self, fd, data)

    monkeypatch.setattr(fsio.FileSystem, "open", open_)
    monkeypatch.setattr(fsio.FileSystem, "write", write)
    fsio.confine(tmp_path)
    mark = host_mark(folder)
    assert seen and seen == [mark] and mark != ""
    assert host_mark(folder, create=False) == mark
