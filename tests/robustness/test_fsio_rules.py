"""The file rules of `loopx.store.fsio`, primitive by primitive, with openat2(2) and with the
one-component-at-a-time walk used where the kernel has none."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopx.store import fsio


@pytest.fixture(params=["openat2", "walk"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    saved, walks = list(fsio._SYSCALL), fsio.WALKS_BEFORE_OPENAT2
    if request.param == "walk":
        fsio._SYSCALL[:] = [None]
    else:  # openat2 from the first path on (a process otherwise walks its first few)
        fsio.WALKS_BEFORE_OPENAT2 = 0
    project = tmp_path / "proj"
    (project / "real" / "deep").mkdir(parents=True)
    (project / "real" / "deep" / "file.txt").write_bytes(b"inside\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "file.txt").write_bytes(b"outside\n")
    (project / "linked").symlink_to(tmp_path / "outside")
    (project / "real" / "link.txt").symlink_to(tmp_path / "outside" / "file.txt")
    os.mkfifo(project / "real" / "fifo")
    os.link(tmp_path / "outside" / "file.txt", project / "real" / "hard.txt")
    fsio.confine(project)
    yield project
    fsio._SYSCALL[:] = saved
    fsio.WALKS_BEFORE_OPENAT2 = walks


def _refused(call: object, *args: object) -> None:
    with pytest.raises(fsio.UnsafePath) as err:
        call(*args)  # type: ignore[operator]
    assert err.value.code == "unsafe_path" and err.value.exit_code == 2


def test_a_process_walks_its_first_paths_then_takes_openat2(tmp_path: Path) -> None:
    """A short call reaches its few paths without loading ctypes (issue 19); from the
    WALKS_BEFORE_OPENAT2-th path on, openat2 is used where the kernel has it."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_bytes(b"x")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from loopx.store import fsio\n"
        f"root = Path({str(tmp_path)!r})\n"
        "fsio.confine(root)\n"
        "for _ in range(fsio.WALKS_BEFORE_OPENAT2):\n"
        "    assert fsio.current().read_file(root / 'a' / 'b' / 'f') == b'x'\n"
        "assert 'ctypes' not in sys.modules\n"
        "assert fsio.current().read_file(root / 'a' / 'b' / 'f') == b'x'\n"
        "assert 'ctypes' in sys.modules\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_reads_follow_no_link_and_take_regular_files_only(root: Path) -> None:
    fs = fsio.current()
    assert fs.read_file(root / "real" / "deep" / "file.txt") == b"inside\n"
    _refused(fs.read_file, root / "linked" / "file.txt")  # a linked folder on the way
    _refused(fs.read_file, root / "real" / "link.txt")  # the file itself is a link
    _refused(fs.read_file, root / "real" / "fifo")  # refused at once, not waited on
    _refused(fs.read_file, root / "real" / "deep")  # a folder
    _refused(fs.read_file, root / "real" / "deep" / "file.txt" / "x")  # a file as a folder
    assert fs.read_file(root / "real" / "hard.txt") == b"outside\n"  # reading is harmless


def test_nothing_is_created_written_or_removed_through_a_link(root: Path) -> None:
    fs = fsio.current()
    outside = root.parent / "outside"
    before = sorted(p.name for p in outside.iterdir())
    _refused(fs.makedirs, root / "linked" / "new")
    _refused(fs.write_atomic, root / "linked" / "new.txt", b"x")
    _refused(fs.unlink, root / "linked" / "file.txt")
    _refused(fs.mkdir, root / "linked" / "made")
    _refused(fs.replace, root / "real" / "deep" / "file.txt", root / "linked" / "moved")
    _refused(fs.open, root / "real" / "hard.txt", os.O_WRONLY | os.O_APPEND)
    _refused(fs.open, root / "real" / "link.txt", os.O_WRONLY | os.O_TRUNC)
    _refused(fs.listdir, root / "linked")
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "file.txt").read_bytes() == b"outside\n"
    # the link itself can be replaced (the rename replaces the entry, not its target)
    fs.write_atomic(root / "real" / "link.txt", b"now a file\n")
    assert not (root / "real" / "link.txt").is_symlink()
    assert (outside / "file.txt").read_bytes() == b"outside\n"


def test_listing_reports_links_and_never_enters_them(root: Path) -> None:
    fs = fsio.current()
    assert dict(fs.listdir(root)) == {"linked": "link", "real": "dir"}
    assert dict(fs.listdir(root / "real")) == {
        "deep": "dir",
        "fifo": "other",
        "hard.txt": "file",
        "link.txt": "link",
    }
    assert fs.lstat(root / "linked") is not None and not fs.is_dir(root / "linked")
    assert fs.lstat(root / "missing" / "x") is None
    _refused(fs.lstat, root / "linked" / "file.txt")


def test_reads_are_capped_while_reading(root: Path) -> None:
    fs = fsio.current()
    path = root / "real" / "deep" / "file.txt"
    assert fs.read_file(path, limit=7) == b"inside\n"
    with pytest.raises(fsio.TooLarge):
        fs.read_file(path, limit=6)
    assert fsio.current().read_file(Path("/proc/self/status"), limit=1 << 20).startswith(b"Name")
    with pytest.raises(fsio.TooLarge):  # reports size 0: counted while reading
        fsio.current().read_file(Path("/proc/self/status"), limit=10)


def test_a_root_confined_after_a_path_was_used_still_guards_it(tmp_path: Path) -> None:
    """The anchor of a folder is remembered (a build names thousands of files in a few
    folders) only while no root is added: a path read before its project was confined is
    walked from that root once it is."""
    late = tmp_path / "late"
    (late / "real").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "file.txt").write_bytes(b"outside\n")
    (late / "linked").symlink_to(tmp_path / "elsewhere")
    fs = fsio.current()
    assert fs.read_file(late / "linked" / "file.txt") == b"outside\n"  # not confined yet
    fsio.confine(late)
    _refused(fs.read_file, late / "linked" / "file.txt")
