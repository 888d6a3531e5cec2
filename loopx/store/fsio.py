"""The one I/O seam: every read, write, fsync, truncate, rename, mkdir and lock of the store
(and of the build's writer) goes through here.

Tests install a `FileSystem` subclass with `install()` that fails on the Nth call, writes only
part of a buffer, or stops dead (a simulated power cut), to prove the ledger and build output
stay all-old or all-new. The helpers below are built only from the primitives, so a fault
injected into a primitive is seen wherever it is used.

`guard()` is the store boundary: it turns an `OSError` into a `StorageError` (`io_error`)
that names the action and the errno, never the path or data.

A checkout is untrusted input, so the primitives themselves enforce the file rules (one place,
not per call): below a confined root (`confine()`: the project root, an import source) every
folder is reached from the root by `dir_fd`-relative opens with `O_NOFOLLOW`, so no symlinked
component is followed; the final component is opened with `O_NOFOLLOW | O_NONBLOCK` (a FIFO
never blocks) and must be a regular file (or a folder, when `O_DIRECTORY` is asked for); a file
opened for writing must have one link. Anything else is `unsafe_path`, raised before a byte is
read or written. Every whole-file read has a size cap (`file_too_large`).
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from loopx.model.errors import StorageError, TooLarge, UnsafePath

__all__ = ["MAX_READ", "FileSystem", "TooLarge", "UnsafePath", "confine", "current", "guard"]

_CHUNK = 1 << 20
# The default cap on one whole-file read: larger than any ledger, snapshot or blob loopx
# writes in practice, small enough that a hostile file cannot exhaust memory.
MAX_READ = 1 << 30
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WRITING = os.O_WRONLY | os.O_RDWR


_ROOTS: set[str] = set()


def confine(root: Path | str) -> None:
    """Treat `root` as a trust boundary: nothing below it is reached through a symlink.

    Roots are process-wide and only ever added (a CLI call has one project and perhaps one
    import source); a path is walked from the outermost root that holds it.
    """
    _ROOTS.add(os.path.abspath(root))


_ANCHORS: dict[str, tuple[int, str | None]] = {}  # folder → (roots then, its anchor)


def _anchor(full: str) -> str | None:
    """The outermost confined root strictly above `full`, if any (remembered per folder for
    as long as no root is added: a build names thousands of files in a few folders)."""
    folder = os.path.dirname(full)
    roots = len(_ROOTS)  # roots are only ever added: their number names the set
    known = _ANCHORS.get(folder)
    if known is not None and known[0] == roots:
        return known[1]
    found = None
    current = full
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            break
        if parent in _ROOTS:
            found = parent
        current = parent
    if len(_ANCHORS) < 10_000:
        _ANCHORS[folder] = (roots, found)
    return found


def _unsafe(full: str, why: str) -> UnsafePath:
    anchor = _anchor(full)
    shown = {"path": os.path.relpath(full, anchor)} if anchor else {}
    return UnsafePath(f"refused to use a file: {why}", **shown)


@contextlib.contextmanager
def _parent(path: Path | str) -> Iterator[tuple[int | None, str]]:
    """(a descriptor of the folder holding `path`, the final name): reached from the confined
    root without following any link. Outside every root: (None, the absolute path), and only
    the final component is guarded."""
    full = os.path.abspath(path)
    anchor = _anchor(full)
    if anchor is None:
        yield None, full
        return
    parts = os.path.relpath(full, anchor).split(os.sep)
    fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if len(parts) > 1 and (sub := _beneath(fd, "/".join(parts[:-1]), full)) is not None:
            os.close(fd)
            fd = sub
        else:  # no openat2 (Linux < 5.6, other systems): one component at a time
            for part in parts[:-1]:
                try:
                    sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    if err.errno in (errno_codes.ELOOP, errno_codes.ENOTDIR):
                        raise _unsafe(full, _LINKED_FOLDER) from None
                    raise
                os.close(fd)
                fd = sub
        yield fd, parts[-1]
    finally:
        os.close(fd)


_LINKED_FOLDER = "a folder on its path is a link or not a folder"
_RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x04, 0x08
_OPENAT2 = 437  # the same number on every Linux architecture

# openat2(2) is reached through ctypes, whose import costs a short call (`loopx status`
# walks a few paths) more than walking them one component at a time (~8 M instructions,
# 2.5% of the call; issue 19). So a process walks its first paths and takes openat2 from
# then on (a build reaches thousands). Both refuse every link on the way alike.
WALKS_BEFORE_OPENAT2 = 32
_WALKS = [0]
_SYSCALL: list[Callable[..., int] | None] = []


def _openat2() -> Callable[..., int] | None:
    """libc's syscall(2) on Linux (for openat2), else None; found once."""
    if not _SYSCALL:
        import ctypes

        call: Callable[..., int] | None = None
        with contextlib.suppress(OSError, AttributeError, TypeError):
            if os.uname().sysname == "Linux":
                call = ctypes.CDLL(None, use_errno=True).syscall
        _SYSCALL.append(call)
    return _SYSCALL[0]


_HOW: list[Any] = []


def _open_how() -> Any:
    """openat2's `struct open_how`, as a ctypes structure (made once)."""
    if not _HOW:
        import ctypes

        class OpenHow(ctypes.Structure):
            _fields_ = (
                ("flags", ctypes.c_uint64),
                ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64),
            )

        _HOW.append(OpenHow)
    return _HOW[0]


def _beneath(folder: int, rel: str, full: str) -> int | None:
    """The folder `rel` below descriptor `folder` in one openat2(2) call that refuses every
    link on the way (RESOLVE_NO_SYMLINKS) and any way out (RESOLVE_BENEATH); None when the
    kernel has no openat2, or while this process walks its first paths instead."""
    if not _SYSCALL and _WALKS[0] < WALKS_BEFORE_OPENAT2:
        _WALKS[0] += 1
        return None
    syscall = _openat2()
    if syscall is None:
        return None
    import ctypes

    how = _open_how()(
        os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_BENEATH
    )
    fd = syscall(_OPENAT2, folder, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno_codes.ENOSYS, errno_codes.EPERM):  # no openat2, or a seccomp filter
        _SYSCALL[0] = None
        return None
    if code in (errno_codes.ELOOP, errno_codes.ENOTDIR, errno_codes.EXDEV):
        raise _unsafe(full, _LINKED_FOLDER)
    raise OSError(code, os.strerror(code))


def check_opened(fd: int, flags: int, full: str) -> None:
    """Refuse an opened descriptor that is not a regular file (or the folder asked for)."""
    info = os.fstat(fd)
    if flags & os.O_DIRECTORY:
        ok = stat.S_ISDIR(info.st_mode)
    else:
        ok = stat.S_ISREG(info.st_mode) and not (flags & _WRITING and info.st_nlink > 1)
    if not ok:
        os.close(fd)
        kind = _kind_name(info.st_mode, info.st_nlink)
        raise _unsafe(full, f"it is {kind}, not a regular file")


# What a file is, by its mode: the word `kind` answers and the words an error says it in.
_KINDS = (
    (stat.S_ISLNK, "link", "a link"),
    (stat.S_ISREG, "file", "a file with other hard links"),  # said only of a linked file
    (stat.S_ISDIR, "dir", "a folder"),
    (stat.S_ISFIFO, "other", "a FIFO"),
    (stat.S_ISCHR, "other", "a device"),
    (stat.S_ISBLK, "other", "a device"),
    (stat.S_ISSOCK, "other", "a socket"),
)


def _mode_kind(mode: int) -> tuple[str, str]:
    """`(kind, what)` of a file mode: `kind` as `kind` names it, `what` as an error says it."""
    return next(((k, what) for test, k, what in _KINDS if test(mode)), ("other", ""))


def _kind_name(mode: int, links: int) -> str:
    kind, what = _mode_kind(mode)
    if kind == "file" and links <= 1:
        return "a special file"
    return what or "a special file"


class FileSystem:
    """Plain POSIX file operations (the production implementation)."""

    # -- primitives: the only places that touch the OS -----------------------------------

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        """Open `path` under the file rules above: no link followed, regular files only."""
        flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        with _parent(path) as (folder, name):
            try:
                fd = os.open(name, flags, mode, dir_fd=folder)
            except OSError as err:
                # ELOOP: the final component is a link; ENXIO: a FIFO with no reader.
                if err.errno in (errno_codes.ELOOP, errno_codes.ENXIO):
                    raise _unsafe(os.path.abspath(path), "it is a link or special file") from None
                if err.errno == errno_codes.ENOTDIR and flags & os.O_DIRECTORY:
                    raise _unsafe(os.path.abspath(path), "it is not a folder") from None
                raise
        check_opened(fd, flags, os.path.abspath(path))
        return fd

    def lstat(self, path: Path) -> os.stat_result | None:
        """What `path` itself is (a link is not followed), or None when nothing is there."""
        try:
            with _parent(path) as (folder, name):
                return os.stat(name, dir_fd=folder, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def listdir(self, path: Path) -> list[tuple[str, str]]:
        """The entries of folder `path` as sorted (name, kind) pairs, kind one of `file`,
        `dir`, `link` or `other`; links are reported, never followed."""
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with os.scandir(fd) as entries:
                return sorted((e.name, _entry_kind(e)) for e in entries)
        finally:
            os.close(fd)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def preadinto(self, fd: int, into: memoryview, offset: int) -> int:
        """`pread` into a buffer of the caller's: how many bytes were read (0 at the end)."""
        return os.preadv(fd, [into], offset)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def replace(self, src: Path, dst: Path) -> None:
        if os.path.dirname(os.path.abspath(src)) == os.path.dirname(os.path.abspath(dst)):
            with _parent(dst) as (folder, dst_name):  # one walk for a rename in place
                src_name = os.path.abspath(src) if folder is None else os.path.basename(src)
                os.replace(src_name, dst_name, src_dir_fd=folder, dst_dir_fd=folder)
            return
        with _parent(src) as (src_dir, src_name), _parent(dst) as (dst_dir, dst_name):
            os.replace(src_name, dst_name, src_dir_fd=src_dir, dst_dir_fd=dst_dir)

    def unlink(self, path: Path) -> None:
        with _parent(path) as (folder, name):
            os.unlink(name, dir_fd=folder)

    def mkdir(self, path: Path) -> None:
        with _parent(path) as (folder, name):
            os.mkdir(name, 0o755, dir_fd=folder)

    def rmdir(self, path: Path) -> None:
        with _parent(path) as (folder, name):
            os.rmdir(name, dir_fd=folder)

    def sync_all(self, path: Path) -> None:
        """Flush every unsynced write on the file system holding `path`: one call instead of
        one fsync per file (a build writes thousands of files)."""
        syncfs = _syncfs()
        if syncfs is None:
            os.sync()
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            if syncfs(fd) != 0:
                import ctypes

                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code))
        finally:
            os.close(fd)

    def lock(self, fd: int, *, shared: bool = False) -> None:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)

    def close(self, fd: int) -> None:
        os.close(fd)

    # -- helpers built only from the primitives above -------------------------------------

    def write_all(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        pos = 0
        while pos < len(data):
            written = self.write(fd, data if pos == 0 else bytes(view[pos:]))
            if written <= 0:
                raise OSError(errno_codes.EIO, "write made no progress")
            pos += written

    def read_from(self, fd: int, offset: int = 0, *, limit: int = MAX_READ) -> bytes:
        """The bytes of an open file from `offset` to its end; more than `limit` of them is
        `file_too_large` (the size is checked first and again while reading, since a file
        may grow)."""
        chunks: list[bytes] = []
        # One read of the whole rest (a 7 MB snapshot in one call, not seven and a join),
        # then chunks for whatever a concurrent append added meanwhile.
        rest = self.size(fd) - offset
        if rest > limit:
            raise _too_large(limit)
        size, total = max(rest, _CHUNK), 0
        while True:
            chunk = self.pread(fd, min(size, limit + 1 - total), offset)
            size = _CHUNK
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            offset += len(chunk)
            total += len(chunk)
            if total > limit:
                raise _too_large(limit)

    def check_size(self, fd: int, *, limit: int = MAX_READ) -> None:
        """`file_too_large` when an open file holds more than `limit` bytes (a reader that
        takes it a window at a time checks this first, as `read_from` does)."""
        if self.size(fd) > limit:
            raise _too_large(limit)

    def read_file(self, path: Path, offset: int = 0, *, limit: int = MAX_READ) -> bytes:
        """The bytes of regular file `path` from `offset` to its end, at most `limit`."""
        fd = self.open(path, os.O_RDONLY)
        try:
            return self.read_from(fd, offset, limit=limit)
        finally:
            self.close(fd)

    def sync_dir(self, path: Path) -> None:
        """Make the directory entries of `path` (created, renamed files) durable."""
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.fsync(fd)
        finally:
            with contextlib.suppress(OSError):  # nothing was written through this descriptor
                self.close(fd)

    def is_dir(self, path: Path) -> bool:
        """`path` is a folder itself (not a link to one); a linked folder on the way is
        `unsafe_path`."""
        info = self.lstat(path)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def is_file(self, path: Path) -> bool:
        """`path` is a regular file itself (not a link to one)."""
        info = self.lstat(path)
        return info is not None and stat.S_ISREG(info.st_mode)

    def makedirs(self, path: Path, *, sync: bool = False) -> None:
        """Create `path` and missing parents; with `sync`, make each new entry durable.
        A link where a folder belongs is `unsafe_path`, never followed."""
        if self.existing_dir(path):
            return
        self.makedirs(path.parent, sync=sync)
        try:
            self.mkdir(path)
        except FileExistsError:
            if not self.existing_dir(path):
                raise
            return
        if sync:
            self.sync_dir(path.parent)

    def remove_tree(self, path: Path) -> None:
        """Delete a folder and everything in it (missing entries are not an error); a link
        in its place is not followed."""
        if not self.is_dir(path):
            return
        for folder, dirs, files in os.walk(path, topdown=False):
            base = Path(folder)
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    self.unlink(base / name)
            for name in dirs:
                sub = base / name
                with contextlib.suppress(FileNotFoundError):
                    if sub.is_symlink():
                        self.unlink(sub)
                    else:
                        self.rmdir(sub)
        with contextlib.suppress(FileNotFoundError):
            self.rmdir(path)

    def write_atomic(self, path: Path, data: bytes, *, sync: bool = False) -> None:
        """Write `data` to `path` via a temp file and rename: readers see old or new, never half.

        With `sync`, the file is fsynced before the rename and the folder after it, so the
        new content survives a power cut once this returns.
        """
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = self.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            try:
                self.write_all(fd, data)
                if sync:
                    self.fsync(fd)
            finally:
                self.close(fd)
            self.replace(tmp, path)
        except Exception:
            with contextlib.suppress(OSError):
                self.unlink(tmp)
            raise
        if sync:
            self.sync_dir(path.parent)

    def existing_dir(self, path: Path) -> bool:
        """True for a folder, False when nothing is there; anything else (a link, a file)
        is `unsafe_path`."""
        info = self.lstat(path)
        if info is None or stat.S_ISDIR(info.st_mode):
            return info is not None
        full = os.path.abspath(path)
        if _anchor(full) is None and os.path.isdir(full):
            return True  # above every confined root (say /tmp on a system where it is a link)
        raise _unsafe(full, f"it is {_kind_name(info.st_mode, 1)} where a folder belongs")

    @contextlib.contextmanager
    def locked(self, path: Path, *, shared: bool = False) -> Iterator[None]:
        """Hold an advisory lock on `path` (exclusive unless `shared`); the OS drops it if the
        process dies."""
        fd = self.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.lock(fd, shared=shared)
            yield
        finally:
            # Closing releases the lock even when close() reports an error; an error here
            # must not turn a finished, durable write into a failure.
            with contextlib.suppress(OSError):
                self.close(fd)


def _entry_kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _too_large(limit: int) -> TooLarge:
    return TooLarge(f"refused to read a file larger than the limit of {limit} bytes", limit=limit)


_SYNCFS: list[Callable[[int], int] | None] = []


def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2) when there is one (Linux), else None (os.sync is used instead)."""
    if not _SYNCFS:
        import ctypes  # only a build syncs: its import costs every process ~2 ms

        fn = None
        with contextlib.suppress(OSError, AttributeError, TypeError):
            # The symbols the interpreter is linked with, libc's among them: no search for
            # the library (`ctypes.util.find_library` runs `ldconfig -p` in a subprocess).
            fn = ctypes.CDLL(None, use_errno=True).syncfs
        _SYNCFS.append(fn)
    return _SYNCFS[0]


_current: FileSystem = FileSystem()


def current() -> FileSystem:
    return _current


def install(fs: FileSystem) -> FileSystem:
    """Swap the active file system (tests); returns the previous one."""
    global _current
    previous, _current = _current, fs
    return previous


@contextlib.contextmanager
def guard(action: str) -> Iterator[None]:
    """Map `OSError` to `StorageError` (`io_error`) at the store boundary."""
    try:
        yield
    except OSError as err:
        raise storage_error(action, err) from err


def storage_error(action: str, err: OSError) -> StorageError:
    """`guard`'s error, for a call made too often to enter a context for each (a blob read
    of a scan of every private text)."""
    name = errno_codes.errorcode.get(err.errno or 0, "EIO")
    reason = os.strerror(err.errno) if err.errno else "I/O error"
    return StorageError(
        f"could not {action}: {reason} ({name})", code="io_error", action=action, errno=name
    )


# == Output side (issue 12, part B): files loopx writes into folders it does not own ==========
# Build folders, publish folders and workbench files may sit in an untrusted checkout: these
# helpers never follow a symbolic link and never open anything but a regular file. The rules
# that use them (what may be written, overwritten or deleted) live in `loopx.build.outdir`.

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def kind(path: Path) -> str:
    """`missing`, `file`, `dir`, `link` or `other` (FIFO, socket, device), by `lstat`."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    return _mode_kind(mode)[0]


def read_regular(path: Path, cap: int) -> bytes | None:
    """The bytes of `path` if it is a regular file of at most `cap` bytes, reached without
    following a link at its last component; None otherwise (missing, a link, a FIFO, a folder,
    too big). `FileSystem.open` opens it non-blocking, so a FIFO planted in its place can never
    hang the read, and refuses a link, a FIFO or a folder as `unsafe_path`."""
    fs = current()
    try:
        fd = fs.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePath):
        return None
    try:
        return _capped(fs, fd, cap)
    finally:
        fs.close(fd)


def _capped(fs: FileSystem, fd: int, cap: int) -> bytes | None:
    """The bytes of the open `fd` if it is a regular file of at most `cap` bytes, else None.
    One read of what fstat said and one byte more, to see whether it grew since (a scan reads
    thousands of small blobs this way); a file that grew, or a read cut short, is read to its
    end, capped as it goes."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
        return None
    data = fs.pread(fd, info.st_size + 1, 0)
    if len(data) == info.st_size:
        return data
    try:
        return fs.read_from(fd, limit=cap)
    except TooLarge:
        return None


def write_new(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist: never through a planted link or file) with `data`."""
    fs = current()
    fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644)
    try:
        fs.write_all(fd, data)
    finally:
        fs.close(fd)


def write_atomic_nofollow(path: Path, data: bytes) -> None:
    """`write_atomic` for a folder loopx does not own: the temporary file is created new
    (`O_EXCL`, `O_NOFOLLOW`), so a link planted under its name is removed, never written
    through; the rename replaces a link at `path` itself rather than following it."""
    fs = current()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if kind(tmp) != "missing":
        fs.unlink(tmp)
    try:
        write_new(tmp, data)
        fs.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            fs.unlink(tmp)
        raise


def read_regular_at(dir_fd: int, name: str, cap: int) -> bytes | None:
    """`read_regular` of the entry `name` of the folder open as `dir_fd` (no path lookup
    beyond that one name, no link followed)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as err:
        if err.errno in (errno_codes.ELOOP, errno_codes.ENXIO):  # a link; a FIFO's far end
            return None
        raise
    try:
        return _capped(current(), fd, cap)
    finally:
        os.close(fd)
