"""The one I/O seam: every write, flush, fsync, truncate, rename and lock goes through here.

Tests swap `current()` for a `FileSystem` subclass that fails on the Nth call, writes only
part of a buffer, or stops dead, to prove the ledger and build output stay all-old or all-new.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class FileSystem:
    """Plain POSIX file operations (the production implementation)."""

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def lock(self, fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def close(self, fd: int) -> None:
        os.close(fd)

    # Helpers built only from the primitives above, so a fault anywhere is seen.

    def write_all(self, fd: int, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            written = self.write(fd, data[pos:] if pos else data)
            if written <= 0:
                raise OSError("write made no progress")
            pos += written

    def write_atomic(self, path: Path, data: bytes, *, sync: bool = False) -> None:
        """Write `data` to `path` via a temp file and rename: readers see old or new, never half."""
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
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    @contextlib.contextmanager
    def locked(self, path: Path) -> Iterator[None]:
        """Hold an exclusive advisory lock on `path`; the OS drops it if the process dies."""
        fd = self.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.lock(fd)
            yield
        finally:
            self.close(fd)


_current: FileSystem = FileSystem()


def current() -> FileSystem:
    return _current


def install(fs: FileSystem) -> FileSystem:
    """Swap the active file system (tests); returns the previous one."""
    global _current
    previous, _current = _current, fs
    return previous
