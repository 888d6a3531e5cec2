"""A `FileSystem` that fails on purpose: the fault-injection half of `loopx.store.fsio`.

`FaultFS(fail_at=N, mode=…)` counts every primitive call (open, pread, size, write, fsync,
truncate, replace, unlink, mkdir, rmdir, sync_all, lock, close) and, on call number N (0-based,
or the first call of the primitive named by `name=`):

- ``eio`` / ``enospc``: raises that `OSError`;
- ``short``: a write stores only `keep` bytes and reports it; every later write is ENOSPC
  (a disk filling up mid-write); any other call raises ENOSPC;
- ``cut``: a simulated power cut. A write first stores `keep` bytes (a torn write); then the
  call and every later one raise `PowerCut` (a `BaseException`: no cleanup runs, as on a
  dead machine);
- ``cut_lose``: a power cut that also loses what was written but never fsynced (the page
  cache): each file written since its last fsync is cut back to its last fsynced size.

After a cut, `release()` closes the descriptors the dead "process" left open (their locks
would otherwise block the next one) so the test can look at the disk as a new process would.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from loopx.store.fsio import FileSystem

MODES = ("eio", "enospc", "short", "cut", "cut_lose")


class PowerCut(BaseException):
    """The machine stopped. Nothing after this call happens."""


class FaultFS(FileSystem):
    def __init__(
        self, fail_at: int | None = None, mode: str = "eio", keep: int = 0, *, name: str = ""
    ) -> None:
        assert mode in MODES, mode
        self.fail_at = fail_at
        self.fail_name = name  # or: fail the first call of this primitive
        self.mode = mode
        self.keep = keep
        self.calls: list[str] = []
        self.failed: str | None = None  # the primitive that failed, once it has
        self.dead = False
        self.disk_full = False
        self.fds: dict[int, Path] = {}
        self.synced: dict[Path, int] = {}  # file → size at its last fsync (or first open)
        self.dirty: set[Path] = set()

    # -- the trigger ----------------------------------------------------------------------

    def _due(self, name: str) -> bool:
        if self.dead:
            raise PowerCut(name)
        index = len(self.calls)
        self.calls.append(name)
        named = self.fail_name == name and self.failed is None
        if index != self.fail_at and not named:
            return False
        self.failed = name
        return True

    def _fail(self, name: str) -> None:
        if self.mode in ("cut", "cut_lose"):
            self._power_cut()
            raise PowerCut(name)
        if self.mode == "short":
            self.disk_full = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        code = errno.EIO if self.mode == "eio" else errno.ENOSPC
        raise OSError(code, os.strerror(code))

    def _power_cut(self) -> None:
        self.dead = True
        if self.mode != "cut_lose":
            return
        for path in self.dirty:
            durable = self.synced.get(path, 0)
            try:
                if path.stat().st_size > durable:
                    os.truncate(path, durable)
            except FileNotFoundError:
                pass

    def release(self) -> None:
        """Close what a dead or failed process left open (and so drop its locks)."""
        for fd in list(self.fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()

    # -- primitives -----------------------------------------------------------------------

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        if self._due("open"):
            self._fail("open")
        fd = super().open(path, flags, mode)
        self.fds[fd] = Path(path)
        if Path(path) not in self.synced:
            with contextlib.suppress(OSError):
                self.synced[Path(path)] = os.fstat(fd).st_size
        return fd

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        if self._due("pread"):
            self._fail("pread")
        return super().pread(fd, size, offset)

    def preadinto(self, fd: int, into: memoryview, offset: int) -> int:
        if self._due("pread"):  # a read like any other: the same faults
            self._fail("pread")
        return super().preadinto(fd, into, offset)

    def size(self, fd: int) -> int:
        if self._due("size"):
            self._fail("size")
        return super().size(fd)

    def write(self, fd: int, data: bytes) -> int:
        due = self._due("write")
        path = self.fds.get(fd)
        if self.disk_full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if due:
            keep = max(min(self.keep, len(data) - 1), 0)
            if keep and self.mode != "eio" and self.mode != "enospc":
                super().write(fd, data[:keep])
                if path is not None:
                    self.dirty.add(path)
                if self.mode == "short":
                    self.disk_full = True
                    return keep
            self._fail("write")
        written = super().write(fd, data)
        if path is not None:
            self.dirty.add(path)
        return written

    def fsync(self, fd: int) -> None:
        if self._due("fsync"):
            self._fail("fsync")
        super().fsync(fd)
        path = self.fds.get(fd)
        if path is not None and path.is_file():
            self.synced[path] = os.fstat(fd).st_size
            self.dirty.discard(path)

    def truncate(self, fd: int, length: int) -> None:
        if self._due("truncate"):
            self._fail("truncate")
        super().truncate(fd, length)
        path = self.fds.get(fd)
        if path is not None:
            self.dirty.add(path)

    def replace(self, src: Path, dst: Path) -> None:
        if self._due("replace"):
            self._fail("replace")
        super().replace(src, dst)
        src, dst = Path(src), Path(dst)
        self.synced[dst] = self.synced.pop(src, 0)
        if src in self.dirty:
            self.dirty.discard(src)
            self.dirty.add(dst)
        else:
            self.dirty.discard(dst)

    def unlink(self, path: Path) -> None:
        if self._due("unlink"):
            self._fail("unlink")
        super().unlink(path)

    def mkdir(self, path: Path) -> None:
        if self._due("mkdir"):
            self._fail("mkdir")
        super().mkdir(path)

    def rmdir(self, path: Path) -> None:
        if self._due("rmdir"):
            self._fail("rmdir")
        super().rmdir(path)

    def sync_all(self, path: Path) -> None:
        if self._due("sync_all"):
            self._fail("sync_all")
        super().sync_all(path)
        for dirty in list(self.dirty):  # everything written so far is durable now
            with contextlib.suppress(OSError):
                self.synced[dirty] = dirty.stat().st_size
            self.dirty.discard(dirty)

    def lock(self, fd: int, *, shared: bool = False) -> None:
        if self._due("lock"):
            self._fail("lock")
        super().lock(fd, shared=shared)

    def close(self, fd: int) -> None:
        if self._due("close"):
            if self.mode not in ("cut", "cut_lose"):  # Linux frees the fd even when close fails
                self.fds.pop(fd, None)
                super().close(fd)
            self._fail("close")
        self.fds.pop(fd, None)
        super().close(fd)
