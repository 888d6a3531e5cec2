"""A checkout is untrusted input: a `.loopx/` built from links, special files, huge files,
swapped blobs and forged snapshots never hurts anything outside the project, and nothing from
outside ever reaches an output.

Each case plants one hostile thing in a fresh copy of a project (goal `g` with a private
evidence body, and goal `h` for the hostile parts), beside a sentinel tree outside the project
(`hostile_tree.py`) whose lure project has a goal `h` of its own, marked in every byte. Then
every command that reads or writes the store runs against it, and after each one:

- the sentinel tree is byte-identical (hashes, links, file types),
- the marker appears in no stdout, stderr or file of the project (nothing was read from
  outside),
- the exit code is a documented one and no traceback is printed.

Per case, the commands on the hostile goal must also be refused (`unsafe_path` or
`file_too_large`), never served from outside.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_tree import MARKER, SECRET, leaked, make_project, ok, sentinel, tree_digest
from scratch import scratch

from loopx.store.ledger import digest
from tests.conftest import run_cli

DOCUMENTED_EXITS = {0, 2, 3, 4, 5, 6, 7}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`base/outside` (the sentinel tree) and `base/proj` (goal g with a private body)."""
    with scratch(tmp_path_factory.mktemp("hostile")) as base:
        sentinel(base)
        make_project(base / "proj", "g", "the real goal", BODY)
        yield base


@pytest.fixture
def world(pristine: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    with scratch(tmp_path) as folder:
        base = folder / "w"
        shutil.copytree(pristine, base, symlinks=True)
        yield base / "proj", base / "outside"


# -- the hostile cases: each plants one thing in the project -------------------------------


def _goal_h(proj: Path) -> Path:
    folder = proj / ".loopx" / "goals" / "h"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _lure_ledger(outside: Path) -> Path:
    return outside / "lure" / ".loopx" / "goals" / "h" / "ledger.jsonl"


BODY = b"the real private body\n"


def _blob_of_g(proj: Path) -> Path:
    """Where the store keeps goal g's evidence body."""
    name = digest(BODY)
    return proj / ".loopx" / "private" / "blobs" / "sha256" / name[:2] / name[2:]


def ledger_links_to_a_file(proj: Path, outside: Path) -> None:
    (_goal_h(proj) / "ledger.jsonl").symlink_to(outside / "secret.txt")


def ledger_links_to_a_lure(proj: Path, outside: Path) -> None:
    (_goal_h(proj) / "ledger.jsonl").symlink_to(_lure_ledger(outside))


def goal_folder_links_out(proj: Path, outside: Path) -> None:
    (proj / ".loopx" / "goals" / "h").symlink_to(_lure_ledger(outside).parent)


def goals_folder_links_out(proj: Path, outside: Path) -> None:
    goals = proj / ".loopx" / "goals"
    shutil.rmtree(goals)
    goals.symlink_to(outside / "lure" / ".loopx" / "goals")


def state_folder_links_out(proj: Path, outside: Path) -> None:
    state = proj / ".loopx"
    shutil.rmtree(state)
    state.symlink_to(outside / "lure" / ".loopx")


def ledger_links_to_dev_zero(proj: Path, outside: Path) -> None:
    (_goal_h(proj) / "ledger.jsonl").symlink_to("/dev/zero")


def ledger_is_a_fifo(proj: Path, outside: Path) -> None:
    os.mkfifo(_goal_h(proj) / "ledger.jsonl")


def ledger_is_a_link_loop(proj: Path, outside: Path) -> None:
    folder = _goal_h(proj)
    (folder / "ledger.jsonl").symlink_to(folder / "other.jsonl")
    (folder / "other.jsonl").symlink_to(folder / "ledger.jsonl")


def ledger_is_a_folder(proj: Path, outside: Path) -> None:
    (_goal_h(proj) / "ledger.jsonl").mkdir()
    (_goal_h(proj) / "ledger.jsonl" / "x").write_bytes(b"x")


def ledger_is_huge(proj: Path, outside: Path) -> None:
    with (_goal_h(proj) / "ledger.jsonl").open("wb") as fh:
        fh.truncate((1 << 30) + 1)  # sparse: no disk, but over the 1 GiB read cap


def ledger_is_hard_linked_out(proj: Path, outside: Path) -> None:
    """The same inode inside and outside: reading it reads the project's own file, but an
    append would change the outside one, so writes are refused."""
    make_project(proj.parent / "side", "h", "side goal")
    side = proj.parent / "side" / ".loopx" / "goals" / "h" / "ledger.jsonl"
    shutil.copyfile(side, outside / "copy.jsonl")
    os.link(outside / "copy.jsonl", _goal_h(proj) / "ledger.jsonl")


def quarantine_links_out(proj: Path, outside: Path) -> None:
    """A real ledger for h with a torn tail, whose quarantine folder is a link: the next
    write would move the tail there and cut the ledger."""
    make_project(proj.parent / "side", "h", "side goal")
    folder = _goal_h(proj)
    ledger = (proj.parent / "side" / ".loopx" / "goals" / "h" / "ledger.jsonl").read_bytes()
    (folder / "ledger.jsonl").write_bytes(ledger + b'{"torn')
    (folder / "quarantine").symlink_to(outside / "folder")


def lock_links_out(proj: Path, outside: Path) -> None:
    (proj / ".loopx" / "goals" / "g" / "lock").unlink(missing_ok=True)
    (proj / ".loopx" / "goals" / "g" / "lock").symlink_to(outside / "secret.txt")


def blob_is_swapped(proj: Path, outside: Path) -> None:
    _blob_of_g(proj).write_bytes(SECRET)


def blob_links_out(proj: Path, outside: Path) -> None:
    blob = _blob_of_g(proj)
    blob.unlink()
    blob.symlink_to(outside / "secret.txt")


def blob_is_a_fifo(proj: Path, outside: Path) -> None:
    blob = _blob_of_g(proj)
    blob.unlink()
    os.mkfifo(blob)


def private_folder_links_out(proj: Path, outside: Path) -> None:
    private = proj / ".loopx" / "private"
    shutil.rmtree(private)
    private.symlink_to(outside / "lure" / ".loopx" / "private")


def snapshot_links_out(proj: Path, outside: Path) -> None:
    cache = proj / ".loopx" / "cache" / "goals" / "g"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "state.json").unlink(missing_ok=True)
    (cache / "state.json").symlink_to(outside / "secret.txt")


def snapshot_is_forged(proj: Path, outside: Path) -> None:
    cache = proj / ".loopx" / "cache" / "goals" / "g"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "state.json").write_bytes(b'{"title": "' + MARKER.encode() + b'"}' + SECRET)


def cache_folder_links_out(proj: Path, outside: Path) -> None:
    cache = proj / ".loopx" / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.symlink_to(outside / "folder")


CASES: dict[str, Callable[[Path, Path], None]] = {
    f.__name__: f
    for f in (
        ledger_links_to_a_file,
        ledger_links_to_a_lure,
        goal_folder_links_out,
        goals_folder_links_out,
        state_folder_links_out,
        ledger_links_to_dev_zero,
        ledger_is_a_fifo,
        ledger_is_a_link_loop,
        ledger_is_a_folder,
        ledger_is_huge,
        ledger_is_hard_linked_out,
        quarantine_links_out,
        lock_links_out,
        blob_is_swapped,
        blob_links_out,
        blob_is_a_fifo,
        private_folder_links_out,
        snapshot_links_out,
        snapshot_is_forged,
        cache_folder_links_out,
    )
}


# -- the commands: every one that reads or writes the store -------------------------------


def commands(body: Path) -> list[list[str]]:
    out: list[list[str]] = [
        ["status"],
        ["next", "--goal-id", "g"],
        ["verify"],
        ["goal", "list"],
        ["handoff", "list"],
        ["scan", "--ledger", "."],
    ]
    for goal in ("g", "h"):
        q = ["--goal-id", goal]
        out += [
            ["status", *q],
            ["next", *q],
            ["log", *q],
            ["verify", *q],
            ["goal", "show", *q],
            ["todo", "list", *q],
            ["todo", "show", *q, "--todo-id", "t1"],
            ["evidence", "list", *q],
            ["gate", "list", *q],
            ["run", "list", *q],
            ["workbench", *q],
            ["review", *q, "--audience", "private"],
            ["graph", *q, "--audience", "private", "--format", "text"],
            ["handoff", "inspect", *q, "--todo-id", "t1", "--audience", "private"],
            ["todo", "add", *q, "--title", "a new todo"],
            ["todo", "claim", *q, "--todo-id", "t1", "--agent-id", "agent-a"],
            ["gate", "open", *q, "--question", "ship it?", "--authority", "user"],
            ["note", "add", *q, "--kind", "lesson", "--text", "a lesson"],
            ["evidence", "add", *q, "--kind", "log", "--summary", "s", "--file", str(body)],
            ["agent", "register", *q, "--agent-id", "agent-b"],
            ["quota", "set", *q, "--budget", "5"],
        ]
    return out


HOSTILE_GOAL_REFUSALS = {"unsafe_path", "file_too_large"}


def _run_all(proj: Path, outside: Path, case: str) -> dict[tuple[str, ...], tuple[int, str]]:
    body = proj.parent / "body.txt"
    body.write_bytes(b"an evidence body from inside\n")
    before = tree_digest(outside)
    planted = leaked(proj)  # a case may plant the marker in the project itself (a swapped blob)
    results = {}
    for args in commands(body):
        got = run_cli([*args, "--root", str(proj)], cwd=proj)
        shown = f"[{case}] loopx {' '.join(args)}\nexit {got.exit_code}\n{got.stdout}{got.stderr}"
        assert got.exit_code in DOCUMENTED_EXITS, shown
        assert "Traceback" not in got.stdout + got.stderr, shown
        assert MARKER not in got.stdout + got.stderr, "outside content reached output\n" + shown
        assert tree_digest(outside) == before, "a byte outside the project changed\n" + shown
        named = re.match(r"loopx: error \[([a-z0-9_]+)\]", got.stderr)
        code = named.group(1) if named else ""
        results[tuple(args)] = (got.exit_code, code)
    assert set(leaked(proj)) <= set(planted), f"[{case}] outside content reached the project"
    return results


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_command_touches_or_reads_outside_the_project(
    case: str, world: tuple[Path, Path]
) -> None:
    proj, outside = world
    CASES[case](proj, outside)
    if case in ("quarantine_links_out", "ledger_is_hard_linked_out"):
        _size_h[case] = (_goal_h(proj) / "ledger.jsonl").stat().st_size
    results = _run_all(proj, outside, case)
    for args, (exit_code, code) in results.items():
        if _must_refuse(case, args):
            # refused, never served from outside (nor "not found": the goal is there, unsafe)
            assert code in REFUSALS, (case, args, code)
            assert exit_code == (3 if code == "root_not_found" else 2), (case, args, exit_code)
    if case in ("quarantine_links_out", "ledger_is_hard_linked_out"):
        assert (_goal_h(proj) / "ledger.jsonl").stat().st_size == _size_h[case]


REFUSALS = {"unsafe_path", "file_too_large", "root_not_found"}
WRITES = (["add"], ["claim"], ["open"], ["register"], ["set"])
# Cases whose hostile file is only written through (reading it reads the project's own bytes).
WRITES_ONLY = {"quarantine_links_out": "h", "ledger_is_hard_linked_out": "h", "lock_links_out": "g"}
_size_h: dict[str, int] = {}


def _must_refuse(case: str, args: tuple[str, ...]) -> bool:
    goal = args[args.index("--goal-id") + 1] if "--goal-id" in args else None
    if case.startswith(("goals_folder", "state_folder")):
        return True  # the whole store is behind a link
    if case in WRITES_ONLY:
        return goal == WRITES_ONLY[case] and list(args[1:2]) in WRITES
    return case.startswith(("ledger_", "goal_folder")) and goal == "h"


def test_a_linked_ledger_is_never_cut_nor_quarantined_by_a_real_process(
    world: tuple[Path, Path],
) -> None:
    """Item 1 of the issue, as a user runs it: a separate `loopx` process."""
    proj, outside = world
    target = outside / "precious.jsonl"
    target.write_bytes(b"precious bytes, not a ledger line\n" * 100)
    (_goal_h(proj) / "ledger.jsonl").symlink_to(target)
    before = tree_digest(outside)
    got = subprocess.run(
        [sys.executable, "-m", "loopx", "todo", "add", "--goal-id", "h", "--title", "x"]
        + ["--root", str(proj)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 2, got.stderr
    assert got.stderr.startswith("loopx: error [unsafe_path]: "), got.stderr
    assert "Traceback" not in got.stderr
    assert tree_digest(outside) == before
    assert not (_goal_h(proj) / "quarantine").exists()


def test_quarantine_is_gitignored_in_new_and_old_projects(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    make_project(proj, "g", "a goal")
    ignore = (proj / ".loopx" / ".gitignore").read_text()
    assert "goals/*/quarantine/" in ignore
    # An older project's .gitignore lacks the line: the quarantine folder ignores itself.
    (proj / ".loopx" / ".gitignore").write_text("private/\ncache/\n")
    ledger = proj / ".loopx" / "goals" / "g" / "ledger.jsonl"
    with ledger.open("ab") as fh:
        fh.write(b'{"torn')
    out = ok(["todo", "add", "--goal-id", "g", "--title", "y", "--root", str(proj)])
    assert "repaired a damaged ledger tail" in out
    quarantine = proj / ".loopx" / "goals" / "g" / "quarantine"
    assert (quarantine / ".gitignore").read_text().splitlines()[-1] == "*"
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    subprocess.run([git, "init", "-q", str(proj)], check=True)
    listed = subprocess.run(
        [git, "-C", str(proj), "status", "--porcelain", "--untracked-files=all", "--ignored"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "quarantine/0" in listed and all(
        line.startswith("!!") for line in listed.splitlines() if "quarantine" in line
    ), listed


# -- blobs: a swapped, linked or special blob is "not on this host" ------------------------


ACCEPTANCE = "the real private acceptance"


def _plant(blob: Path, how: str, outside: Path) -> None:
    blob.unlink()
    if how == "swapped":
        blob.write_bytes(SECRET)
    elif how == "linked":
        blob.symlink_to(outside / "secret.txt")
    else:
        os.mkfifo(blob)


@pytest.mark.parametrize("how", ["swapped", "linked", "fifo"])
def test_a_blob_that_is_not_what_its_name_says_is_not_on_this_host(
    how: str, world: tuple[Path, Path]
) -> None:
    proj, outside = world
    r = ["--root", str(proj)]
    ok(
        ["todo", "add", "--goal-id", "g", "--todo-id", "t2", "--title", "private work"]
        + ["--visibility", "private", "--acceptance", ACCEPTANCE, *r]
    )
    show = ["todo", "show", "--goal-id", "g", "--todo-id", "t2", *r]
    assert f"acceptance: {ACCEPTANCE}" in ok(show)
    name = digest(ACCEPTANCE.encode())
    blob = proj / ".loopx" / "private" / "blobs" / "sha256" / name[:2] / name[2:]
    assert blob.read_bytes() == ACCEPTANCE.encode()
    _plant(blob, how, outside)
    out = ok(show)  # the pack's intact copy: the text, never what was planted
    assert f"acceptance: {ACCEPTANCE}" in out and MARKER not in out
    (blob.parent.parent.parent / "texts.pack").unlink()  # the planted file is all there is
    out = ok(show)
    assert "acceptance: [private content not on this host]" in out
    assert MARKER not in out
    # Writing the same text again puts an intact copy back (replacing whatever was there,
    # never writing through it).
    ok(
        ["note", "add", "--goal-id", "g", "--kind", "note", "--visibility", "private"]
        + ["--text", ACCEPTANCE, *r]
    )
    assert blob.is_file() and not blob.is_symlink()
    assert blob.read_bytes() == ACCEPTANCE.encode()
    assert f"acceptance: {ACCEPTANCE}" in ok(show)
    assert (outside / "secret.txt").read_bytes() == SECRET


@pytest.mark.parametrize("how", ["swapped", "linked", "fifo", "linked folder"])
def test_a_reading_block_refuses_what_get_refuses(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside `BlobStore.reading()` (what a scan of every private text reads in) a blob is
    read through its shard folder's descriptor: a swapped, linked or special file, or a
    shard folder that is a link, is not on this host, as outside it; each shard folder is
    opened once; every descriptor is closed when the block ends."""
    from loopx.store import fsio
    from loopx.store.blobs import PACK, BlobStore

    fsio.confine(tmp_path / "project")
    store = BlobStore(tmp_path / "project" / ".loopx" / "private" / "blobs")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    kept = store.put(b"an intact blob in the same shard")
    (store.base / PACK).unlink()  # every blob read from its file (the pack: its own test)
    shard = store.path(kept).parent
    victim = "sha256:" + shard.name + "0" * 62  # a name in the same shard folder
    (shard / victim[9:]).write_bytes(b"planted")
    if how == "linked folder":
        moved = tmp_path / "elsewhere"
        shard.rename(moved)
        shard.symlink_to(moved)
    else:
        _plant(shard / victim[9:], how, outside)
    opened: list[str] = []
    real_open = fsio.FileSystem.open

    def counting(self: Any, path: Path, flags: int, mode: int = 0o644) -> int:
        opened.append(str(path))
        return real_open(self, path, flags, mode)

    monkeypatch.setattr(fsio.FileSystem, "open", counting)
    fds_before = len(os.listdir("/proc/self/fd"))
    with store.reading():
        assert store.get(victim) is None
        got = [store.get(kept) for _ in range(3)]
        assert len(os.listdir("/proc/self/fd")) > fds_before or how == "linked folder"
    expected = None if how == "linked folder" else b"an intact blob in the same shard"
    assert got == [expected] * 3 and store.get(kept) == expected  # as outside the block
    if how == "linked folder":  # refused each time (never held): as outside the block
        assert opened.count(str(shard)) == 4
    else:
        assert opened.count(str(shard)) == 1  # the shard folder, once for the whole block
    assert len(os.listdir("/proc/self/fd")) == fds_before
    assert (outside / "secret.txt").read_bytes() == SECRET


def test_a_reading_block_holds_a_quarter_of_the_descriptor_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a process may open few files (macOS: 256), a block holds at most a quarter of
    them; the blobs of the other shard folders are read the usual way, all the same."""
    import resource

    from loopx.store.blobs import BlobStore

    store = BlobStore(tmp_path / "blobs")
    refs = [store.put(f"blob {i}".encode()) for i in range(40)]
    shards = {ref[7:9] for ref in refs}
    assert len(shards) > 4
    monkeypatch.setattr(resource, "getrlimit", lambda which: (12, 12))
    fds_before = len(os.listdir("/proc/self/fd"))
    with store.reading():
        assert [store.get(r) for r in refs] == [f"blob {i}".encode() for i in range(40)]
        assert len(os.listdir("/proc/self/fd")) - fds_before <= 3  # room for 12 // 4
    assert len(os.listdir("/proc/self/fd")) == fds_before


def test_blob_reads_are_capped(tmp_path: Path) -> None:
    from loopx.store.blobs import MAX_BLOB_BYTES, BlobStore

    store = BlobStore(tmp_path / "blobs")
    ref = "sha256:" + "ab" * 32
    path = store.path(ref)
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        fh.truncate(MAX_BLOB_BYTES + 1)
    assert store.get(ref) is None
    with store.reading():
        assert store.get(ref) is None


def test_a_file_read_in_a_folder_that_grows_while_read_is_read_whole_or_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`read_regular_at` reads what fstat said and one byte more: a file that grew since is
    read again to its end, and refused when it is now past the cap."""
    from loopx.store import fsio

    (tmp_path / "f").write_bytes(b"x" * 100)
    real = os.fstat
    said: list[int] = []

    def shrunk(fd: int) -> os.stat_result:  # the size of the file a moment before
        info = real(fd)
        if said:
            return info
        said.append(fd)
        fields = list(info)
        fields[6] = 10  # st_size
        return os.stat_result(fields)

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        monkeypatch.setattr(fsio.os, "fstat", shrunk)
        assert fsio.read_regular_at(fd, "f", 1000) == b"x" * 100
        said.clear()
        assert fsio.read_regular_at(fd, "f", 50) is None  # grew past the cap
        monkeypatch.setattr(fsio.os, "fstat", real)
        reads: list[int] = []
        pread = os.pread

        def counted(fd: int, size: int, offset: int) -> bytes:
            reads.append(size)
            return pread(fd, size, offset)

        monkeypatch.setattr(fsio.os, "pread", counted)
        assert fsio.read_regular_at(fd, "f", 100) == b"x" * 100
        assert reads == [101]  # one read of what fstat said, and one byte more
        assert fsio.read_regular_at(fd, "f", 99) is None

        def short(fd: int, size: int, offset: int) -> bytes:  # a read cut short, once
            got = pread(fd, size if reads else 7, offset)
            reads.append(size)
            return got

        reads.clear()
        monkeypatch.setattr(fsio.os, "pread", short)
        assert fsio.read_regular_at(fd, "f", 100) == b"x" * 100  # read again to its end
    finally:
        os.close(fd)


# -- evidence add --file ------------------------------------------------------------------


def _evidence_file(proj: Path, path: Path | str) -> tuple[int, str, str]:
    got = subprocess.run(
        [sys.executable, "-m", "loopx", "evidence", "add", "--goal-id", "g", "--kind", "log"]
        + ["--summary", "s", "--file", str(path), "--root", str(proj)],
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO must be refused, not waited on
        check=False,
    )
    return got.returncode, got.stdout, got.stderr


def test_evidence_file_refuses_fifos_devices_links_folders_and_huge_files(
    world: tuple[Path, Path],
) -> None:
    proj, outside = world
    files = proj.parent / "files"
    files.mkdir()
    os.mkfifo(files / "fifo")
    (files / "link").symlink_to(outside / "secret.txt")
    with (files / "huge").open("wb") as fh:
        fh.truncate(5 * 1024 * 1024 + 1)
    (files / "folder").mkdir()
    ledger = proj / ".loopx" / "goals" / "g" / "ledger.jsonl"
    before = (ledger.read_bytes(), tree_digest(outside))
    expected = {
        files / "fifo": (2, "unsafe_path"),
        Path("/dev/zero"): (2, "unsafe_path"),
        files / "link": (2, "unsafe_path"),
        files / "huge": (2, "file_too_large"),
        files / "folder": (2, "usage_error"),  # click refuses it first (dir_okay=False)
        files / "missing": (3, "file_not_found"),
    }
    for path, (code, name) in expected.items():
        returncode, stdout, stderr = _evidence_file(proj, path)
        assert (returncode, stdout) == (code, ""), (path, stderr)
        assert stderr.startswith(f"loopx: error [{name}]: "), (path, stderr)
        assert str(path) not in stderr and MARKER not in stderr
        assert (ledger.read_bytes(), tree_digest(outside)) == before, path


# -- demo ---------------------------------------------------------------------------------


def test_demo_checks_every_goal_before_writing_any(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    make_project(proj, "launch", "my own launch")
    before = tree_digest(proj)
    got = run_cli(["demo", str(proj)])
    assert got.exit_code == 4 and got.stderr.startswith("loopx: error [goal_exists]: ")
    assert "launch" in got.stderr
    assert tree_digest(proj) == before
    fresh = tmp_path / "fresh"
    ok(["demo", str(fresh)])
    ledgers = {p: p.read_bytes() for p in fresh.rglob("ledger.jsonl")}
    ok(["demo", str(fresh)])  # the demo's own goals: a rerun replays
    assert {p: p.read_bytes() for p in fresh.rglob("ledger.jsonl")} == ledgers
