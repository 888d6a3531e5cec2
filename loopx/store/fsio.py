"""The one I/O seam: every read, write, fsync, truncate, rename, mkdir and lock of the store
(and of the build's writer) goes through here.

Tests install a `FileSystem` subclass with `install()` that fails on the Nth call, writes only
part of a buffer, or stops dead (a simulated power cut), to prove the ledger and build output
stay all-old or all-new. The helpers below are built only from the primitives, so a fault
injected into a primitive is seen wherever it is used.

`guard()` is the store boundary: it turns an `OSError` into a `StorageError` (`io_error`)
that names the action and the errno, never the path or data.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno as errno_codes
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from loopx.model.errors import StorageError

_CHUNK = 1 << 20


class FileSystem:
    """Plain POSIX file operations (the production implementation)."""

    # -- primitives: the only places that touch the OS -----------------------------------

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        return os.open(path, flags, mode)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def unlink(self, path: Path) -> None:
        os.unlink(path)

    def mkdir(self, path: Path) -> None:
        os.mkdir(path, 0o755)

    def rmdir(self, path: Path) -> None:
        os.rmdir(path)

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

    def read_from(self, fd: int, offset: int = 0) -> bytes:
        """The bytes of an open file from `offset` to its end."""
        chunks: list[bytes] = []
        # One read of the whole rest (a 7 MB snapshot in one call, not seven and a join),
        # then chunks for whatever a concurrent append added meanwhile.
        size = max(self.size(fd) - offset, _CHUNK)
        while True:
            chunk = self.pread(fd, size, offset)
            size = _CHUNK
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            offset += len(chunk)

    def read_file(self, path: Path, offset: int = 0) -> bytes:
        """The bytes of `path` from `offset` to its end."""
        fd = self.open(path, os.O_RDONLY)
        try:
            return self.read_from(fd, offset)
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

    def makedirs(self, path: Path, *, sync: bool = False) -> None:
        """Create `path` and missing parents; with `sync`, make each new entry durable."""
        if path.is_dir():
            return
        self.makedirs(path.parent, sync=sync)
        try:
            self.mkdir(path)
        except FileExistsError:
            if not path.is_dir():
                raise
            return
        if sync:
            self.sync_dir(path.parent)

    def remove_tree(self, path: Path) -> None:
        """Delete a folder and everything in it (missing entries are not an error)."""
        if not path.is_dir():
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


_SYNCFS: list[Callable[[int], int] | None] = []


def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2) when there is one (Linux), else None (os.sync is used instead)."""
    if not _SYNCFS:
        fn = None
        with contextlib.suppress(OSError, AttributeError, TypeError):
            fn = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).syncfs
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
        name = errno_codes.errorcode.get(err.errno or 0, "EIO")
        reason = os.strerror(err.errno) if err.errno else "I/O error"
        raise StorageError(
            f"could not {action}: {reason} ({name})",
            code="io_error",
            action=action,
            errno=name,
        ) from err


# == Output side (issue 12, part B): files loopx writes into folders it does not own ==========
# Build folders, publish folders and workbench files may sit in an untrusted checkout: these
# helpers never follow a symbolic link and never open anything but a regular file. The rules
# that use them (what may be written, overwritten or deleted) live in `loopx.build.outdir`.

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def kind(path: Path) -> str:
    """`missing`, `file`, `dir`, `link` or `other` (FIFO, socket, device), by `lstat`."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "other"


def read_regular(path: Path, cap: int) -> bytes | None:
    """The bytes of `path` if it is a regular file of at most `cap` bytes, reached without
    following a link at its last component; None otherwise (missing, a link, a FIFO, a folder,
    too big). Opened non-blocking, so a FIFO planted in its place can never hang the read."""
    import stat

    fs = current()
    try:
        fd = fs.open(path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as err:
        if err.errno in (errno_codes.ELOOP, errno_codes.ENXIO):  # a link; a FIFO's far end
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        data = fs.read_from(fd)
        return data if len(data) <= cap else None
    finally:
        fs.close(fd)


def write_new(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist: never through a planted link or file) with `data`."""
    fs = current()
    fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644)
    try:
        fs.write_all(fd, data)
    finally:
        fs.close(fd)


@contextlib.contextmanager
def locked_nofollow(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on the lock file `path`, never opened through a link."""
    fs = current()
    fd = fs.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
    try:
        fs.lock(fd)
        yield
    finally:
        with contextlib.suppress(OSError):
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
    import stat

    fs = current()
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as err:
        if err.errno in (errno_codes.ELOOP, errno_codes.ENXIO):
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        data = fs.read_from(fd)
        return data if len(data) <= cap else None
    finally:
        os.close(fd)
