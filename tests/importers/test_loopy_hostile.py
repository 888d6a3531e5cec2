"""An import source is untrusted: links out of it are reported and never followed, discovery
cannot loop, FIFOs and devices are refused without blocking, reads are capped, and two
folders holding one session id refuse the import, naming both, with nothing written.

Every case imports a session from the documented layout with one hostile thing planted, next
to a sentinel tree outside the source whose files carry a marker; the marker must reach no
ledger, no blob and no output, and the sentinel tree must not change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopy_builder import SessionBuilder
from loopy_checks import blobs, ledgers, new_store

from loopx.importers.loopy_paths import MAX_SOURCE_BYTES
from loopx.store.filestore import FileStore
from tests.conftest import CliResult, run_cli

MARKER = "OUTSIDE-IMPORT-5c2b"
SECRET = f"outside the source: {MARKER}\n".encode()
SESSION = "20260115_101500_ab12cd34_9f8e7d6c"


def _digest(root: Path) -> dict[str, tuple[str, bytes]]:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path).encode())
            elif path.is_file():
                out[rel] = ("file", path.read_bytes())
            else:
                out[rel] = ("other", b"")
    return out


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, SessionBuilder]:
    """(the loopx project, the outside tree, a session with two iterations)."""
    outside = tmp_path / "outside"
    (outside / "iterations" / "0009_evil").mkdir(parents=True)
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "iterations" / "0009_evil" / "prompt.txt").write_bytes(SECRET)
    source = tmp_path / "src"
    session = SessionBuilder(source / ".loopy_loop" / "sessions", SESSION)
    session.iteration("planner")
    session.iteration("executor")
    new_store(tmp_path / "proj")
    return tmp_path / "proj", outside, session


def _import(proj: Path, source: Path, *extra: str) -> CliResult:
    return run_cli(["import", "loopy-loop", str(source), "--root", str(proj), *extra])


def _source(session: SessionBuilder) -> Path:
    return session.dir.parents[2]


def _nothing_leaked(proj: Path, out: CliResult) -> None:
    store = FileStore(proj)
    assert MARKER not in out.stdout + out.stderr
    assert all(MARKER.encode() not in data for data in ledgers(store).values())
    assert all(MARKER.encode() not in data for data in blobs(store).values())
    assert "Traceback" not in out.stdout + out.stderr


def _replace(path: Path, how: str, outside: Path) -> None:
    path.unlink(missing_ok=True)
    if how == "link":
        path.symlink_to(outside / "secret.txt")
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "huge":
        with path.open("wb") as fh:
            fh.truncate(MAX_SOURCE_BYTES + 1)


@pytest.mark.parametrize(
    ("file", "how", "message"),
    [
        ("goal.md", "link", "is a link or a special file; not followed"),
        ("iterations/0001_planner/prompt.txt", "link", "is a link or a special file"),
        ("iterations/0001_planner/prompt.txt", "dev-zero", "is a link or a special file"),
        ("iterations/0002_executor/result.json", "fifo", "is a link or a special file"),
        ("iterations/0001_planner/result_text.txt", "huge", "larger than the import limit"),
        ("events.jsonl", "fifo", "is a link or a special file"),
    ],
)
def test_links_special_and_huge_files_are_reported_never_read(
    world: tuple[Path, Path, SessionBuilder], file: str, how: str, message: str
) -> None:
    proj, outside, session = world
    _replace(session.dir / file, how, outside)
    before = _digest(outside)
    started = time.monotonic()
    # A real process with a timeout: a FIFO must be refused, not waited on.
    got = subprocess.run(
        [sys.executable, "-m", "loopx", "import", "loopy-loop", str(_source(session))]
        + ["--root", str(proj), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert time.monotonic() - started < 60
    out = CliResult(got.returncode, got.stdout, got.stderr)
    assert out.exit_code == 2, out.stderr  # something was left out
    problems = out.json()["problems"]
    where = f".loopy_loop/sessions/{SESSION}/{file}"
    assert any(p["path"] == where and message in p["message"] for p in problems), problems
    _nothing_leaked(proj, out)
    assert _digest(outside) == before
    if file != "goal.md":  # the rest of the session is imported (goal.md: from state.json)
        assert out.json()["sessions"][0]["imported"] is True


def test_a_linked_iterations_folder_is_not_entered(
    world: tuple[Path, Path, SessionBuilder],
) -> None:
    proj, outside, session = world
    iterations = session.dir / "iterations"
    os.rename(iterations, session.dir.parent / "moved")
    iterations.symlink_to(outside / "iterations")
    out = _import(proj, _source(session), "--format", "json")
    assert out.exit_code in (0, 2)
    _nothing_leaked(proj, out)


def test_child_links_back_up_the_tree_add_no_session_and_no_cycle(
    world: tuple[Path, Path, SessionBuilder],
) -> None:
    """Two `children/x -> ..` links once made discovery grow exponentially (40 s, 520 MB)
    and produced phantom sessions, one its own child."""
    proj, _outside, session = world
    children = session.dir / "children"
    children.mkdir()
    (children / "a").symlink_to("..")
    (children / "b").symlink_to("..")
    (children / "c").symlink_to(session.dir)
    started = time.monotonic()
    out = _import(proj, _source(session), "--format", "json")
    assert time.monotonic() - started < 30
    assert out.exit_code == 0, out.stdout
    sessions = out.json()["sessions"]
    assert [s["session_id"] for s in sessions] == [SESSION]
    assert [s["goal_id"] for s in sessions] == FileStore(proj).goal_ids()


def test_a_session_id_in_two_folders_refuses_the_import_naming_both(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    new_store(proj)
    sessions = tmp_path / "src" / ".loopy_loop" / "sessions"
    first = SessionBuilder(sessions, "one")
    second = SessionBuilder(sessions, "two")
    first.iteration("planner")
    second.iteration("planner")
    for s in (first, second):  # both folders say they are session `dup`
        manifest = s.dir / "session.json"
        manifest.write_text(manifest.read_text().replace(f'"{s.session_id}"', '"dup"'))
    for fmt in ("text", "json"):
        out = _import(proj, tmp_path / "src", "--format", fmt)
        assert out.exit_code == 2
        if fmt == "json":
            error = out.json()["error"]
            assert error["code"] == "session_id_clash"
            assert error["details"]["folders"] == [
                ".loopy_loop/sessions/one",
                ".loopy_loop/sessions/two",
            ]
        else:
            assert out.stderr == (
                "loopx: error [session_id_clash]: two folders hold session dup: "
                ".loopy_loop/sessions/one and .loopy_loop/sessions/two; import them "
                "separately (with --goal-id) or remove one (session_id: dup)\n"
            )
        assert str(tmp_path) not in out.stdout + out.stderr
        assert FileStore(proj).goal_ids() == []
        assert not any((proj / ".loopx" / "private" / "blobs").rglob("*"))
