"""Where loopx writes output, and what it may change there: the rules, in one place.

An output folder (`build --out`, `publish --to`) or file (`workbench --write`) may sit in a
checkout nobody vetted, so every write and delete of the build's writer goes through here:

- **No link is followed.** The folder, and every folder and file inside it that loopx reads,
  writes, replaces or deletes, must be a real folder or a regular file. A symbolic link (or a
  FIFO, socket or device) there is `unsafe_output_path`, naming its place, before anything is
  written. For a folder inside the project, every folder between the project and it is
  checked too. Files are opened with `O_NOFOLLOW`, created with `O_EXCL`.
- **Never inside `.loopx/`** (`output_inside_store`), and no path inside an output folder may
  name `.loopx`, `.git` or the staging folder.
- **Only our own files are replaced**: an existing file whose bytes differ is replaced only
  when the previous manifest (a loopx manifest, `loopx.manifest/v1`) lists it; anything else
  is `output_not_ours`, naming the files, unless the caller says `overwrite`. (A listed file
  edited by hand is output, and is rendered again, as `build --check` expects.)
- **Only our own files are deleted**: a file the previous manifest listed that the new build
  does not have is removed only if it still has the listed hash; otherwise it is kept and
  reported. A build deletes nothing outside `manifest.json` and the audience folders.
- **One writer per folder**: an advisory lock in `.loopx/cache/build/` (`lock`) that a second
  build waits for, so two builds into one folder run one after the other.

Checks use `lstat` just before each operation: a checkout's links are caught; a process that
swaps folders for links while a build runs is outside what this defends against.
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
from loopx.store import fsio

STAGING = ".loopx-staging"
RESERVED = frozenset({".loopx", ".git", STAGING})
READ_CAP = 256 << 20  # no artifact or manifest of ours comes near this
_KIND_NAMES = {
    "link": "a symbolic link",
    "other": "a special file (FIFO, socket or device)",
    "dir": "a folder",
    "file": "a file",
}


class UnsafeOutput(InvalidInput):
    code = "unsafe_output_path"


@dataclass(frozen=True)
class Layout:
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


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unsafe(where: str, kind: str) -> UnsafeOutput:
    return UnsafeOutput(
        f"{where} is {_KIND_NAMES[kind]}; loopx never writes, reads or deletes through one "
        "in an output folder (replace it with a real folder, or choose another output folder)",
        path=where,
    )


class Folder:
    """An output folder whose paths are reached without following a link (checked with
    `lstat` part by part; real folders are remembered)."""

    def __init__(self, path: Path, label: str = "") -> None:
        self.path = path
        self.label = label  # how messages name the folder's parts ("site/" …)
        self._real: set[str] = {""}

    def check_dirs(self, parts: list[str], *, create: bool = False) -> bool:
        """True when every folder of `parts` exists as a real folder (with `create`, after
        making the missing ones); False at the first missing one (nothing below it exists);
        `unsafe_output_path` at a link or a special file; ENOTDIR at a regular file."""
        rel = ""
        for part in parts:
            rel = f"{rel}/{part}" if rel else part
            if rel in self._real:
                continue
            kind = fsio.kind(self.path / rel)
            if kind == "missing" and create:
                with contextlib.suppress(FileExistsError):
                    fsio.current().mkdir(self.path / rel)
                kind = fsio.kind(self.path / rel)
            if kind == "missing":
                return False
            if kind == "file":  # in the way, but harmless: the disk's own error (io_error)
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            if kind != "dir":
                raise _unsafe(self.label + rel, kind)
            self._real.add(rel)
        return True

    def stat(self, rel: str) -> os.stat_result | None:
        """The `lstat` of a regular file at `rel`, None when nothing is there;
        `unsafe_output_path` when a link, folder or special file is in the way."""
        parts = parts_of(rel)
        if not self.check_dirs(parts[:-1]):
            return None
        try:
            st = os.lstat(self.path / rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            raise _unsafe(self.label + rel, fsio.kind(self.path / rel))
        return st

    def read(self, rel: str, cap: int = READ_CAP) -> bytes | None:
        if self.stat(rel) is None:
            return None
        return fsio.read_regular(self.path / rel, cap)

    def digest(self, rel: str, size: int | None = None) -> str | None:
        """The sha256 of the file at `rel` (None when missing, or not of `size` bytes)."""
        st = self.stat(rel)
        if st is None or (size is not None and st.st_size != size):
            return None
        data = fsio.read_regular(self.path / rel, READ_CAP if size is None else size)
        return None if data is None else sha256(data)

    def makedirs(self, rel_dir: str) -> None:
        """Create the folders of `rel_dir` that are missing, each checked to be real."""
        if rel_dir and rel_dir not in self._real:
            self.check_dirs(parts_of(rel_dir), create=True)

    def forget(self, rel_dir: str) -> None:
        self._real.discard(rel_dir)


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
    and, inside the project, reached through real folders only."""
    path = Path(os.path.abspath(out))
    label = f"{out.as_posix().rstrip('/')}/" if str(out) not in ("", ".") else ""
    if root is not None:
        refuse_store(root, path)
    below = _inside(root, path) if root is not None else None
    with fsio.guard("create the output folder"):
        if below is not None and below:
            Folder(Path(os.path.abspath(str(root)))).check_dirs(below, create=create)
        elif below is None:
            kind = fsio.kind(path)
            if kind == "missing" and create:
                fsio.current().makedirs(path)
            elif kind == "file":
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            elif kind not in ("missing", "dir"):
                raise _unsafe(str(out), kind)
    return Folder(path, label)


def cache_dir(root: Path) -> Path:
    """`.loopx/cache/build/` of the project, created if missing, each part a real folder."""
    base = Path(os.path.abspath(root))
    Folder(base).check_dirs([".loopx", "cache", "build"], create=True)
    return base / ".loopx" / "cache" / "build"


@contextlib.contextmanager
def lock(root: Path, out: Path) -> Iterator[None]:
    """Hold the output folder's lock: a second build into the same folder waits here."""
    key = sha256(os.path.realpath(out).encode())[:16]
    with contextlib.ExitStack() as stack:
        with fsio.guard("lock the output folder"):
            folder = cache_dir(root)
            stack.enter_context(fsio.locked_nofollow(folder / f"{key}.lock"))
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
) -> None:
    """Write one output file (`workbench --write`) under the same rules: not in `.loopx/`, no
    link on the way (inside the project) or at the file itself, and an existing file is
    replaced only when `ours(its bytes)` says loopx wrote it, or with `overwrite`."""
    refuse_store(root, target)
    parent = open_folder(target.parent, root)
    name = target.name
    if not name or name in (".", ".."):
        raise InvalidInput("the output file needs a file name", code="invalid_path")
    with fsio.guard("write the output file"):
        kind = fsio.kind(parent.path / name)
        if kind not in ("missing", "file"):
            raise _unsafe(str(target), kind)
        if kind == "file" and not overwrite:
            existing = fsio.read_regular(parent.path / name, READ_CAP)
            if existing is None or not ours(existing):
                raise not_ours([str(target)])
        fsio.write_atomic_nofollow(parent.path / name, data)
