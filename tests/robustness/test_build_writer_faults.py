"""Injected faults in the build's writer: the output folder is all-old or all-new.

For every fsio call of one `write_tree` (changed, unchanged, new and stale files, and a user
file the build must never touch) and each fault mode of faultfs.py, the write fails with a
clear `io_error` (or the "machine" stops), the next writer's `recover` finishes or discards
the interrupted write, and the folder then holds exactly the old build or exactly the new
one; a plain write afterwards always lands the new one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultfs import FaultFS, PowerCut

from loopx.build.writer import STAGING, recover, write_tree
from loopx.model.errors import StorageError
from loopx.store import fsio

ROOT = Path(__file__).resolve().parents[2]
OLD = {
    "index.html": b"<p>old index</p>",
    "goal/a.json": b'{"old": true}',
    "goal/same.txt": b"unchanged",
    "gone/stale.txt": b"only in the old build",
}
NEW = {
    "index.html": b"<p>new index, longer than the old one</p>",
    "goal/a.json": b'{"new": true}',
    "goal/same.txt": b"unchanged",
    "fresh/deep/new.txt": b"only in the new build",
}
USER = {"notes.md": b"a user's own file in the output folder"}
# What the old build's manifest says it wrote: path → (sha256, size).
LISTED = {rel: (hashlib.sha256(data).hexdigest(), len(data)) for rel, data in OLD.items()}
FAULTS = [("eio", 0), ("enospc", 0), ("short", 3), ("cut", 3), ("cut_lose", 3)]


@pytest.fixture(autouse=True)
def _restore_fs() -> Iterator[None]:
    previous = fsio.current()
    yield
    fsio.install(previous)


def populate(out: Path) -> None:
    for rel, data in {**OLD, **USER}.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def contents(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and STAGING not in p.relative_to(out).parts
    }


def attempt(out: Path, fs: FaultFS) -> BaseException | None:
    previous = fsio.install(fs)
    try:
        write_tree(out, NEW, LISTED)
    except (Exception, PowerCut) as err:
        return err
    finally:
        fsio.install(previous)
        fs.release()
    return None


def test_every_call_of_a_build_write_leaves_all_old_or_all_new(tmp_path: Path) -> None:
    probe_out = tmp_path / "probe"
    populate(probe_out)
    probe = FaultFS()
    assert attempt(probe_out, probe) is None
    assert contents(probe_out) == {**NEW, **USER}
    calls = probe.calls
    assert {"write", "replace", "unlink", "sync_all"} <= set(calls), calls
    old, new = {**OLD, **USER}, {**NEW, **USER}
    for index in range(len(calls)):
        for mode, keep in FAULTS:
            out = tmp_path / f"out-{index}-{mode}"
            populate(out)
            error = attempt(out, FaultFS(index, mode, keep))
            if error is None:
                assert contents(out) == new
            elif not isinstance(error, PowerCut):
                assert isinstance(error, StorageError), repr(error)
                assert error.code == "io_error"
            recover(out)  # what the next build does first
            assert not (out / STAGING).exists()
            state = contents(out)
            assert state in (old, new), f"{mode} at call {index} ({calls[index]}): mixed output"
            write_tree(out, NEW, LISTED)
            assert contents(out) == new
            assert not (out / STAGING).exists()


COLD = {
    "index.html": b"<p>index</p>",
    "public/a.html": b"<p>a</p>",
    "public/goals/g/b.json": b"{}",
    "public/goals/g/todos/t.html": b"<p>t</p>",
    "team/c.html": b"<p>c</p>",
}


def test_a_write_into_an_empty_folder_moves_new_folders_whole_and_stays_all_or_nothing(
    tmp_path: Path,
) -> None:
    """A cold build renames each staged folder the output lacks once (not each file in it),
    and a fault at any call of it still leaves nothing or everything."""
    probe_out = tmp_path / "probe"
    probe_out.mkdir()
    probe = FaultFS()
    previous = fsio.install(probe)
    try:
        write_tree(probe_out, COLD, {})
    finally:
        fsio.install(previous)
    assert contents(probe_out) == COLD
    assert probe.calls.count("replace") == 4  # the journal; index.html, public/, team/
    for index in range(len(probe.calls)):
        for mode, keep in FAULTS:
            out = tmp_path / f"out-{index}-{mode}"
            out.mkdir()
            previous = fsio.install(FaultFS(index, mode, keep))
            try:
                write_tree(out, COLD, {})
            except (StorageError, PowerCut):
                pass
            finally:
                fsio.install(previous)
            recover(out)
            assert contents(out) in ({}, COLD), f"{mode} at call {index}: mixed output"
            write_tree(out, COLD, {})
            assert contents(out) == COLD
            assert not (out / STAGING).exists()


def test_a_failed_build_write_is_io_error_through_the_cli(tmp_path: Path) -> None:
    from loopx.engine.demo import create_demo
    from tests.conftest import run_cli

    create_demo(tmp_path / "proj")
    out = tmp_path / "site"
    args = ["build", "--root", str(tmp_path / "proj"), "--out", str(out), "--format", "json"]
    assert run_cli(args).exit_code == 0
    args.append("--overwrite")  # the hand-edited files below are not what the manifest lists
    built = contents(out)
    stale = {name: b"stale" for name in list(built)[:3]}
    for name, data in stale.items():
        (out / name).write_bytes(data)
    before = contents(out)
    for primitive in ("write", "sync_all", "replace"):
        fsio.install(FaultFS(name=primitive, mode="eio"))
        result = run_cli(args)
        fsio.install(fsio.FileSystem())
        assert result.exit_code == 5, result.stdout + result.stderr
        assert result.json()["error"]["code"] == "io_error"
        assert "Traceback" not in result.stdout + result.stderr
        recover(out)
        assert contents(out) in (before, built)
        if primitive != "replace":  # before the journal: nothing was replaced
            assert contents(out) == before
    assert run_cli(args).exit_code == 0
    assert contents(out) == built


_WRITES = re.compile(
    r"\bos\.(open|write|fsync|ftruncate|truncate|replace|rename|unlink|remove|mkdir|makedirs"
    r"|rmdir)\(|(?<!\bfs)\.(write_bytes|write_text|mkdir|unlink|rename|replace|touch|rmdir)\("
    r"|\bshutil\.(rmtree|move|copy\w*)\("
)


def test_the_build_writer_changes_files_only_through_fsio() -> None:
    source = (ROOT / "loopx" / "build" / "writer.py").read_text().splitlines()
    stray = [f"{n}: {line.strip()}" for n, line in enumerate(source, 1) if _WRITES.search(line)]
    assert stray == []
