"""A rebuild's boundary, worked out in a process forked beside the build.

After one event, a fresh `loopx build` spends about a third of its time on the boundary: it
reads the boundary memo (the forbidden set an earlier build merged, its tally, and the
public files that build found clean), advances the set past the changed goals, scans the
public files the rebuild made, and writes the memo back; and another tenth checking that
each file it carries over is still the file it wrote (an `lstat` of each of thousands).
None of that needs the build's state but the goals' heads, the changed goals' strings and
the public files, and the build needs nothing of it but its answers. So a rebuild forks a
process for it as soon as it starts (`Beside.start`, before the build memo is read: the less
memory the two share, the fewer pages either copies). The fork checks the carried files
(`reuse.intact`) while the build reads its memo without doing so, and the build carries
over only the goals whose files the fork found as written; then the fork reads the boundary
memo, is told the heads and strings once the goals are gathered, is sent each public goal's
files as they are rendered and the rest at the end, and, its verdict clean, writes the
boundary memo while the build writes the output. The build still writes nothing before the
verdict, and returns only once the memo is written.

The fork is never an authority of its own: it runs the functions the build runs in one
process, on the same heads, strings, memos and files, and anything but its answers (a
finding, a memo it cannot advance, an error, a fork that died) makes the build do that work
in its own process, as it does without a fork: a refused build reports its findings (and the
commands that clear them) exactly as before. Only a public build that will read a build memo
and a boundary memo, on the file store (a database connection is not shared by two
processes), with two processors or more and no other thread running, forks;
`LOOPX_BUILD_WORKERS=1` keeps everything in one process.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import pickle
import struct
import threading
from pathlib import Path
from typing import Any

from loopx.build import scancache
from loopx.build.artifacts import Artifact, DiskArtifact, Site
from loopx.build.boundary import GoalStrings, advance, scan_ahead, scan_public
from loopx.build.work import BuildCache

_LENGTH = struct.Struct("<Q")
PIPE_BYTES = 1 << 20  # room for a goal's public files sent ahead (Linux's default limit)
CLEAN, FOUND, FAILED, SAVED = b"c", b"f", b"x", b"s"
#: Goals whose strings the build works out for the fork (those it folded): beyond, the
#: boundary is worked out in the build's process (a first build, or many goals changed).
MOVED_AT_MOST = 8

# (path, sha256, size, audience, goal, bytes or None): a public file as the fork is sent it
Item = tuple[str, str, int, "str | None", "str | None", "bytes | None"]


def carry_scan(
    root: Path, names: frozenset[str], cache: BuildCache, heads: dict[str, str] | None
) -> None:
    """What the last build on this host left for the boundary scan (`scancache.load_build`):
    the merged set, the strings the goals changed since had then (with `heads`: see
    `scancache.moved_strings` for them later), and the public files found clean."""
    memo = scancache.load_build(root, names, heads)
    cache.strings.update(memo.strings)
    cache.merged = memo.merged
    if memo.scan is not None:
        cache.scan = memo.scan


_ENDING: list[int] = []  # forks that wrote their memo, not yet reaped


def reap() -> list[int]:
    """Reap the forks that have ended since they wrote their memo; those still ending."""
    for pid in list(_ENDING):
        try:
            done = os.waitpid(pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            done = True
        if done:
            _ENDING.remove(pid)
    return list(_ENDING)


def _reap_all() -> None:
    for pid in _ENDING:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    _ENDING.clear()


class Beside:
    """The boundary's fork, seen from the build (see the module's text)."""

    def __init__(self, pid: int, send: int, receive: int) -> None:
        self.pid = pid
        self._send: int | None = send
        self._receive: int | None = receive
        self.verdict: bytes | None = None

    @classmethod
    def start(cls, root: Path, out: Path, names: frozenset[str]) -> Beside | None:
        """The fork, or None where one cannot be used (no `fork`, another thread running, no
        process or pipe to be had)."""
        reap()
        if not hasattr(os, "fork") or threading.active_count() != 1:
            return None
        try:
            down_r, down_w = os.pipe()
        except OSError:  # out of descriptors: the build goes on alone
            return None
        try:
            up_r, up_w = os.pipe()
        except OSError:
            _close(down_r, down_w)
            return None
        with contextlib.suppress(AttributeError, OSError):
            fcntl.fcntl(down_w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit, a sandbox): the build goes on alone
            _close(down_r, down_w, up_r, up_w)
            return None
        if pid == 0:  # the fork: ends here, whatever happens
            status = 1
            try:
                os.close(down_w)
                os.close(up_r)
                _serve(down_r, up_w, root, out, names)
                status = 0
            finally:
                os._exit(status)
        os.close(down_r)
        os.close(up_w)
        return cls(pid, down_w, up_r)

    def gathered(self, heads: dict[str, str], moved: dict[str, GoalStrings]) -> None:
        """Every goal's head, and the strings of the goals the build folded."""
        self._put(("goals", heads, moved))

    def ahead(self, items: list[Item]) -> None:
        """Public files, scanned as they come, while the build renders the rest."""
        self._put(("ahead", items))

    def scan(self, items: list[Item]) -> None:
        """Every public file of the build, to be scanned (the verdict is `clean`'s)."""
        self._put(("all", items))

    def intact(self) -> set[tuple[str, str]] | None:
        """The units of the build memo whose files the fork found as written (`reuse.intact`);
        None when it failed (then nothing it did counts)."""
        reply = _get_raw(self._receive) if self._receive is not None else None
        if reply is None or reply[:1] == FAILED:
            self.verdict = FAILED
            return None
        return set(pickle.loads(reply))

    def clean(self) -> bool | None:
        """The verdict on the files sent: True when the fork found them clean, False when it
        found something, None when it failed (then nothing it did counts)."""
        if self.verdict is None:
            reply = _get_raw(self._receive) if self._receive is not None else None
            self.verdict = reply if reply in (CLEAN, FOUND) else FAILED
        if self.verdict == CLEAN:
            return True
        return False if self.verdict == FOUND else None

    def close(self) -> bool:
        """Wait until the fork has written the boundary memo, when its verdict was clean (the
        build waits before it returns: the memo is the build's), then leave it to end (its
        memory freed, it is reaped by the next fork's start or close); otherwise wait for it
        to end (a fork not told everything ends without writing anything). True when it
        wrote the memo."""
        if self._send is not None:
            with contextlib.suppress(OSError):
                os.close(self._send)
            self._send = None
        saved = self.verdict == CLEAN and self._byte() == SAVED
        if self._receive is not None:
            with contextlib.suppress(OSError):
                os.close(self._receive)
            self._receive = None
        if saved:
            if not _ENDING:  # this process waits for it to end, at the latest at its exit
                atexit.unregister(_reap_all)
                atexit.register(_reap_all)
            _ENDING.append(self.pid)
        else:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        reap()
        return saved

    def _put(self, message: Any) -> None:
        if self._send is None or self.verdict is not None:
            return
        try:
            _write(self._send, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # it died: `scan` says so
            self.verdict = FAILED

    def _byte(self) -> bytes | None:
        if self._receive is None:
            return None
        try:
            return os.read(self._receive, 1) or None
        except OSError:
            return None


def _serve(receive: int, send: int, root: Path, out: Path, names: frozenset[str]) -> None:
    """In the fork: the boundary of the build, as `loopx.build.pipeline.build` works it out
    in one process (`carry_scan`, its `_forbidden`, `scan_public`, `scancache.save_build`),
    from the heads and strings it is sent; then the verdict, and the memo."""
    try:
        from loopx.build import reuse

        # The carried files, checked while the build reads the build memo (`reuse.load`
        # without `verify`): it waits for them before it renders.
        _write(send, pickle.dumps(reuse.intact(root, out)))
        cache = BuildCache()  # the boundary memo, read while the build reads its own
        carry_scan(root, names, cache, None)
        if cache.merged is None or cache.scan.covered is None:
            raise LookupError("no memo to start from")  # the build merges and scans in full
        for which in ("texts", "ids"):  # what narrowing the set to some files starts from
            cache.scan.covered.needles(which).automaton()
        message = _get(receive)
        if message is None:  # the build went on without it
            return
        _, heads, moved = message
        cache.strings.update(scancache.moved_strings(root, cache.merged[0], heads))
        key = scancache.heads_key(heads)
        if cache.merged[0] != key:  # as `non_public_strings` advances it, or not at all
            if cache.merged[1].tally is None:
                raise LookupError("no tally to advance")
            merged = advance(heads, moved.__getitem__, cache.strings, cache.merged)
            if merged is None:
                raise LookupError("the memo does not fit the ledger")
            cache.merged = (key, merged)
        forbidden = cache.merged[1].with_names(names)
        while True:
            message = _get(receive)
            if message is None:
                return
            if message[0] == "all":
                break
            scan_ahead(cache.scan, sorted(_artifacts(out, message[1]).items()))
        items: list[Item] = message[1]
        clean = not scan_public(_site(out, items), forbidden, cache.scan)
    except BaseException:
        with contextlib.suppress(OSError):
            _write(send, FAILED)
        raise
    _write(send, CLEAN if clean else FOUND)  # a build that went away: BrokenPipeError
    if clean:
        strings = {g: cache.strings[g] for g in sorted(heads) if g in cache.strings}
        shas = {sha for _, sha, *_ in items}
        scancache.save_build(root, names, strings, cache.merged, cache.scan, shas)
        os.write(send, SAVED)


def _artifacts(out: Path, items: list[Item]) -> dict[str, Artifact | DiskArtifact]:
    """The files `items` name: a file the build made, with its bytes and the sha256 the
    build took of them; a carried file as it is in `out`."""
    found: dict[str, Artifact | DiskArtifact] = {}
    for path, sha, size, audience, goal_id, data in items:
        if data is None:
            found[path] = DiskArtifact(path, out, sha, size, audience, None, goal_id)
        else:
            made = Artifact(path, data, audience, None, goal_id)
            made.__dict__["sha256"] = sha  # its `cached_property`
            found[path] = made
    return found


def _site(out: Path, items: list[Item]) -> Site:
    site = Site()
    site.artifacts.update(_artifacts(out, items))
    return site


def items(pairs: list[tuple[str, Any]]) -> list[Item]:
    """Public files as the fork is sent them, with the bytes of each the build made (a
    carried one is read from the output folder, where it still is, only if a scan needs)."""
    return [
        (p, a.sha256, a.size, a.audience, a.goal_id, a.data if isinstance(a, Artifact) else None)
        for p, a in pairs
    ]


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _get(fd: int) -> Any:
    body = _get_raw(fd)
    return None if body is None else pickle.loads(body)


def _get_raw(fd: int) -> bytes | None:
    try:
        head = _read_exactly(fd, _LENGTH.size)
        return None if head is None else _read_exactly(fd, _LENGTH.unpack(head)[0])
    except OSError:
        return None


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)
