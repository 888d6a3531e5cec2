"""Where loopx writes output, and what it may change there: the rules, in one place.

An output folder (`build --out`, `publish --to`) or file (`workbench --write`) may sit in a
checkout nobody vetted, so every write and delete of the build's writer goes through here:

- **No link is followed.** The folder, and every folder and file inside it that loopx reads,
  writes, replaces or deletes, must be a real folder or a regular file. A symbolic link (or a
  FIFO, socket or device) there is `unsafe_output_path`, naming its place, before anything is
  written. For a folder inside the project, every folder between the project and it is
  checked too. Files are opened with `O_NOFOLLOW` (non-blocking), created with `O_EXCL`.
- **Never inside `.loopx/`** (`output_inside_store`), and no path inside an output folder may
  name `.loopx`, `.git` or the staging folder.
- **Only our own files are replaced**: an existing file whose bytes differ is replaced only
  when the previous manifest (a loopx manifest, `loopx.manifest/v1`) lists it; anything else
  is `output_not_ours`, naming the files, unless the caller says `overwrite`. (A listed file
  edited by hand is output, and is rendered again, as `build --check` expects.)
- **Only our own files are deleted**: a file the previous manifest listed that the new build
  does not have is removed only if it still has the listed hash; otherwise it is kept and
  reported. A build deletes nothing outside `manifest.json` and the audience folders (its
  `Layout`); a publish nothing outside the top-level names it writes.
- **One writer per folder**: an advisory lock in `.loopx/cache/build/` (`lock`) that a second
  build waits for, so two builds into one folder run one after the other.

Each folder is opened once, part by part from its parent's descriptor with `O_NOFOLLOW` (a
`dir_fd` walk), and files are then named through their folder's descriptor, so a folder
swapped for a link after it was checked still receives the files (Linux; elsewhere plain
paths are used after the same checks).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from loopx.model.errors import Conflict, InvalidInput, LoopxError
from loopx.model.records import Value
from loopx.store import fsio

STAGING = ".loopx-staging"
RESERVED = frozenset({".loopx", ".git", STAGING})
READ_CAP = 256 << 20  # no artifact or manifest of ours comes near this
_KIND_NAMES = {"link": "a symbolic link", "other": "a special file (FIFO, socket or device)"}


class UnsafeOutput(InvalidInput):
    code = "unsafe_output_path"


@dataclass(frozen=True, repr=False, eq=False)
class Layout(Value):
    """Which paths a writer may create or delete in its folder: top-level file names and
    top-level folders (`None` = any path)."""

    files: frozenset[str] | None = None
    folders: frozenset[str] = frozenset()

    def admits(self, rel: str) -> bool:
        try:
            parts = parts_of(rel)
        except LoopxError:
            return False
        if self.files is None:
            return True
        return rel in self.files or (len(parts) > 1 and parts[0] in self.folders)


ANY = Layout()
BUILD = Layout(frozenset({"manifest.json"}), frozenset({"public", "team", "private"}))


def parts_of(rel: str) -> list[str]:
    """The parts of a relative POSIX path that stays inside its folder and names nothing
    reserved; `invalid_path` otherwise."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if (
        not parts
        or rel.startswith("/")
        or any(p in ("", ".", "..") or p in RESERVED or "\0" in p for p in parts)
    ):
        raise LoopxError("artifact path escapes the output folder", code="invalid_path")
    return parts


Identity = tuple[int, int, int, int]  # size, mtime, ctime, inode: what tells a file from another


def identity(st: os.stat_result) -> Identity:
    """What tells the file of `st` from any other (and from itself before an edit: an edit
    changes its ctime, which no one can set back)."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unsafe(where: str, kind: str) -> UnsafeOutput:
    if kind == "dir":
        message = f"{where} is a folder where loopx writes a file; move it away"
    else:
        message = (
            f"{where} is {_KIND_NAMES[kind]}; loopx never writes, reads or deletes through "
            "one where it writes output (replace it with a real folder, or choose another one)"
        )
    return UnsafeOutput(message, path=where, kind=kind)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC
_PROC_FD = Path("/proc/self/fd")
_HAS_PROC_FD: list[bool] = []


def _proc_fd() -> bool:
    """Whether `/proc/self/fd/N/name` names `name` inside the folder open as N (Linux)."""
    if not _HAS_PROC_FD:
        _HAS_PROC_FD.append(os.path.isdir(_PROC_FD))
    return _HAS_PROC_FD[0]


class Folder:
    """An output folder whose paths are reached without following a link.

    Each folder inside it is opened once, part by part, relative to its parent's descriptor
    with `O_NOFOLLOW` (a `dir_fd` walk), and kept open; files are then named through their
    folder's descriptor (`/proc/self/fd/N/name` on Linux), so every later read, write, rename
    or delete lands in the folder that was checked, even if a path component is swapped for a
    link meanwhile. Where there is no `/proc`, plain paths are used after the same checks.
    `close()` releases the descriptors (also on garbage collection).
    """

    def __init__(self, path: Path, label: str = "", *, follow_root: bool = False) -> None:
        self.path = path
        self.label = label  # how messages name the folder's parts ("site/" …)
        self.follow_root = follow_root  # the project root as the user named it (trusted)
        self._fds: dict[str, int] = {}

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # also at interpreter exit
            self.close()

    def _refuse(self, rel: str, parent_fd: int | None, name: str) -> None:
        """Raise the right error for something at `rel` that could not be opened as a folder."""
        try:
            mode = (
                os.lstat(name, dir_fd=parent_fd).st_mode
                if parent_fd is not None
                else os.lstat(self.path).st_mode
            )
        except (FileNotFoundError, NotADirectoryError):
            return
        if stat.S_ISREG(mode):  # in the way, but harmless: the disk's own error (io_error)
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        if not stat.S_ISDIR(mode):
            kind = "link" if stat.S_ISLNK(mode) else "other"
            raise _unsafe(self.label + rel if rel else self.label.rstrip("/") or ".", kind)

    def _open_dir(self, rel: str, create: bool) -> int | None:
        """The descriptor of the folder `rel` ("" = this folder), opened part by part without
        following a link; None when it is missing (and not `create`)."""
        if rel in self._fds:
            return self._fds[rel]
        parent, _, name = rel.rpartition("/")
        parent_fd = self._open_dir(parent, create) if rel else None
        if rel and parent_fd is None:
            return None
        flags = _DIR_FLAGS | (0 if not rel and self.follow_root else os.O_NOFOLLOW)
        for attempt in (0, 1):
            try:
                fd = os.open(name if rel else self.path, flags, dir_fd=parent_fd)
                break
            except FileNotFoundError:
                if not create or attempt:
                    return None
                with contextlib.suppress(FileExistsError):
                    if rel:
                        fsio.current().mkdir(self._name(parent_fd, parent, name))
                    else:
                        fsio.current().makedirs(self.path)
            except OSError as err:
                if err.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                self._refuse(rel, parent_fd, name)
                raise
        self._fds[rel] = fd
        return fd

    def _name(self, dir_fd: int | None, rel_dir: str, name: str) -> Path:
        if dir_fd is not None and _proc_fd():
            return _PROC_FD / str(dir_fd) / name
        return self.path / rel_dir / name if rel_dir else self.path / name

    def at(self, rel: str, *, create: bool = False) -> Path | None:
        """A path for the entry `rel` that goes through its folder's checked descriptor; None
        when its folder is missing (and not `create`)."""
        parent, _, name = rel.rpartition("/")
        fd = self._open_dir(parent, create)
        return None if fd is None else self._name(fd, parent, name)

    def check_dirs(self, parts: list[str], *, create: bool = False) -> bool:
        """True when every folder of `parts` exists as a real folder (with `create`, after
        making the missing ones); False when one is missing; `unsafe_output_path` at a link
        or a special file; ENOTDIR at a regular file."""
        return self._open_dir("/".join(parts), create) is not None

    def stat(self, rel: str) -> os.stat_result | None:
        """The `lstat` of a regular file at `rel`, None when nothing is there;
        `unsafe_output_path` when a link, folder or special file is in the way."""
        parts_of(rel)
        parent, _, name = rel.rpartition("/")
        fd = self._open_dir(parent, False)
        if fd is None:
            return None
        try:
            st = os.lstat(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            mode = st.st_mode
            kind = "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "other"
            raise _unsafe(self.label + rel, kind)
        return st

    def identities(self, rel_dir: str, names: list[str]) -> list[Identity | None]:
        """What tells each regular file `name` of the folder `rel_dir` from any other: its
        size, mtime, ctime and inode (`lstat` through the folder's checked descriptor, as
        `stat`); None for one that is missing, or a link, folder or special file. `names`
        are plain names (no `/`), checked by the caller."""
        if rel_dir:
            parts_of(rel_dir)
        fd = self._open_dir(rel_dir, False)
        found: list[tuple[int, int, int, int] | None] = []
        for name in names:
            try:
                st = os.lstat(name, dir_fd=fd) if fd is not None else None
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                found.append(None)
            else:
                found.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))  # identity
        return found

    def read(self, rel: str, cap: int = READ_CAP) -> bytes | None:
        """The bytes of the regular file at `rel` (None when missing or over `cap`)."""
        if self.stat(rel) is None:
            return None
        return self.read_checked(rel, cap)

    def read_checked(self, rel: str, cap: int) -> bytes | None:
        """`read` for a file `stat` has just checked: one open through its folder."""
        parent, _, name = rel.rpartition("/")
        return fsio.read_regular_at(self._fds[parent], name, cap)

    def digest(self, rel: str, size: int | None = None) -> str | None:
        """The sha256 of the file at `rel` (None when missing, or not of `size` bytes)."""
        st = self.stat(rel)
        if st is None or (size is not None and st.st_size != size):
            return None
        data = self.read_checked(rel, READ_CAP if size is None else size)
        return None if data is None else sha256(data)

    def must(self, rel: str) -> Path:
        """`at(rel)` for an entry whose folder exists (created if need be)."""
        path = self.at(rel, create=True)
        assert path is not None
        return path

    def makedirs(self, rel_dir: str) -> None:
        """Create the folders of `rel_dir` that are missing, each checked to be real."""
        if rel_dir:
            self.check_dirs(parts_of(rel_dir), create=True)

    def forget(self, rel_dir: str) -> None:
        """Drop the descriptor of a folder that was removed (and of anything below it)."""
        for rel in [r for r in self._fds if r == rel_dir or r.startswith(rel_dir + "/")]:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop(rel))


def refuse_store(root: Path, target: Path) -> None:
    """`output_inside_store` when `target` is `.loopx/` of the project or inside it."""
    store = Path(os.path.abspath(root)) / ".loopx"
    stores = {store, Path(os.path.realpath(store))}
    for candidate in {Path(os.path.abspath(target)), Path(os.path.realpath(target))}:
        if any(candidate == s or s in candidate.parents for s in stores):
            raise InvalidInput(
                "loopx never writes output inside .loopx/ (the ledger's folder); "
                "choose a path outside it",
                code="output_inside_store",
            )


def _inside(root: Path, path: Path) -> list[str] | None:
    """The parts of `path` below the project root `root`, or None when it is not inside."""
    base = Path(os.path.abspath(root))
    try:
        return list(path.relative_to(base).parts)
    except ValueError:
        return None


def open_folder(out: Path, root: Path | None, *, create: bool = True) -> Folder:
    """Check (and with `create`, make) the output folder itself: not in `.loopx/`, not a link,
    and, inside the project, reached through real folders only (a `dir_fd` walk from the
    project root). The caller closes the returned folder."""
    path = Path(os.path.abspath(out))
    label = f"{out.as_posix().rstrip('/')}/" if str(out) not in ("", ".") else ""
    if root is not None:
        refuse_store(root, path)
    below = _inside(root, path) if root is not None else None
    folder = Folder(path, label, follow_root=below == [])
    with fsio.guard("create the output folder"):
        if below:
            with Folder(Path(os.path.abspath(str(root))), follow_root=True) as project:
                fd = project._open_dir("/".join(below), create)
                if fd is not None:
                    folder._fds[""] = os.dup(fd)
        else:
            folder._open_dir("", create)
    return folder


def cache_dir(root: Path) -> Path:
    """`.loopx/cache/build/` of the project, created if missing, each part a real folder."""
    base = Path(os.path.abspath(root))
    with Folder(base, follow_root=True) as project:
        project.check_dirs([".loopx", "cache", "build"], create=True)
    return base / ".loopx" / "cache" / "build"


@contextlib.contextmanager
def lock(root: Path, out: Path) -> Iterator[None]:
    """Hold the output folder's lock: a second build into the same folder waits here."""
    key = sha256(os.path.realpath(out).encode())[:16]
    with contextlib.ExitStack() as stack:
        with fsio.guard("lock the output folder"):
            folder = cache_dir(root)
            stack.enter_context(fsio.current().locked(folder / f"{key}.lock"))
        yield


def not_ours(paths: list[str]) -> Conflict:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return Conflict(
        f"{len(paths)} file(s) in the output folder were not written by loopx (no manifest "
        f"of ours lists them): {shown}; move them away, or pass --overwrite to replace them",
        code="output_not_ours",
        paths=paths[:100],
        count=len(paths),
    )


def write_file(
    root: Path, target: Path, data: bytes, *, ours: Callable[[bytes], bool], overwrite: bool
) -> bool:
    """Write one output file (`workbench --write`) under the same rules: not in `.loopx/`, no
    link on the way (inside the project) or at the file itself, and an existing file is
    replaced only when `ours(its bytes)` says loopx wrote it, or with `overwrite`. A file that
    already holds `data` is left untouched (False); True when it was written."""
    refuse_store(root, target)
    name = target.name
    if not name or name in (".", ".."):
        raise InvalidInput("the output file needs a file name", code="usage_error")
    with open_folder(target.parent, root) as parent, fsio.guard("write the output file"):
        path = parent.must(name)
        kind = fsio.kind(path)
        if kind not in ("missing", "file"):
            raise _unsafe(str(target), kind)
        existing = fsio.read_regular(path, READ_CAP) if kind == "file" else None
        if existing == data:
            return False
        if kind == "file" and not overwrite and (existing is None or not ours(existing)):
            raise Conflict(
                f"{target} exists and is not a file loopx wrote; move it away, or pass "
                "--overwrite to replace it",
                code="output_not_ours",
                paths=[str(target)],
                count=1,
            )
        fsio.write_atomic_nofollow(path, data)
        return True
