"""`BrokeredStore`: a PostgreSQL store reached through this user's store broker.

A short-lived loopx process (every CLI call) on a PostgreSQL store talks to the broker
(`loopx/store/broker.py`) over a Unix socket instead of importing the driver and opening a
server backend of its own; the broker runs the same `PostgresStore` code on a warm
connection. `connect` starts the broker when none answers, and returns None whenever the
socket cannot be used safely or the broker does not come up: the caller then connects to
the database itself. Every call maps to one message and its answer; the engine's write
(`writing`) holds one broker session, and so the goal's lock, from `begin` to `end`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from loopx.model import errors
from loopx.model.errors import LoopxError, StoreUnavailable
from loopx.model.ids import check_id
from loopx.store import broker_wire as wire
from loopx.store.base import Repair, SnapshotStale
from loopx.store.ledger import Cursor, Scan
from loopx.store.postgres import HostCache, scanned
from loopx.store.verify import VerifyReport, verify_buffer

START_TIMEOUT = 10.0  # seconds a starting broker has to open its socket
BUSY_WAIT = 2.0  # seconds to wait for a broker another process is starting at the same time
MAX_SOCKET_PATH = 104  # a Unix socket's path (sun_path) is 104–108 bytes at most


def connect(url: str, *, root: Path | None, cache_dir: Path | None) -> BrokeredStore | None:
    """The store through this user's broker for `url` (started if need be), or None."""
    path = _where(url)
    if path is None:
        return None
    sock = _reach(url, path)
    if sock is None:
        return None
    return BrokeredStore(url, path, sock, root=root, cache_dir=cache_dir)


def _where(url: str) -> Path | None:
    """The socket of the broker for `url`; None when no broker may be used (turned off, no
    private folder, or a path too long for a Unix socket)."""
    folder = wire.private_dir() if wire.enabled() else None
    if folder is None:
        return None
    path = wire.socket_path(url, folder)
    return path if len(os.fsencode(path)) < MAX_SOCKET_PATH else None


def _reach(url: str, path: Path) -> socket.socket | None:
    """A connection to the broker at `path`, started when none answers; None when it does
    not come up."""
    sock = _open(path)
    if sock is None and _start(url, path):
        # Listening now (or another starter's broker is, and is about to).
        deadline = time.monotonic() + BUSY_WAIT
        while (sock := _open(path)) is None and time.monotonic() < deadline:
            time.sleep(0.005)
    return sock


def status(url: str) -> dict[str, Any]:
    """Whether a broker serves `url` for this user and environment: its socket and pid."""
    path = _where(url)
    if path is None:
        return {"enabled": False, "running": False, "socket": None, "pid": None}
    sock = _open(path)
    if sock is not None:
        sock.close()
    return {
        "enabled": True,
        "running": sock is not None,
        "socket": str(path),
        "pid": _pid(path) if sock is not None else None,
    }


def stop(url: str) -> dict[str, Any]:
    """Ask the broker serving `url` to exit (SIGTERM): it waits a few seconds for open
    sessions to end, then closes its connections (a write in flight is rolled back)."""
    found = status(url)
    if found["pid"] is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(found["pid"], signal.SIGTERM)
    return dict(found, stopped=found["pid"] is not None)


def _pid(path: Path) -> int | None:
    """The pid a running broker wrote into its lock file (a file of this user's folder)."""
    try:
        fd = os.open(path.with_suffix(".lock"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        text = os.read(fd, 32)
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else None


def _open(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _start(url: str, path: Path) -> bool:
    """Start a broker for `url`: True once it listens (it detaches; one started at the same
    time by another process steps aside for the first)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        log = os.open(path.with_suffix(".log"), flags, 0o600)
    except OSError:  # a link or a FIFO in our own folder: no broker (never a hang)
        return False
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "loopx.store.broker", str(path)],
            env=dict(os.environ, LOOPX_BROKER_URL=url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=path.parent,
            check=False,
            timeout=START_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        os.close(log)
    return proc.returncode == 0


_ERRORS = {
    cls.__name__: cls
    for cls in vars(errors).values()
    if isinstance(cls, type) and issubclass(cls, LoopxError)
}


class BrokeredStore(HostCache):
    """The `Store` protocol, each call answered by the broker (see the module doc)."""

    def __init__(
        self,
        url: str,
        path: Path,
        sock: socket.socket,
        *,
        root: Path | None,
        cache_dir: Path | None,
    ):
        super().__init__(root, cache_dir)
        self._url = url
        self._path = path
        self._held: list[socket.socket | None] = [sock]  # closed with this object too
        self._pid = os.getpid()
        self._lock = threading.RLock()  # a write holds the session from begin to end
        weakref.finalize(self, _close, self._held)

    @property
    def _sock(self) -> socket.socket | None:
        return self._held[0]

    @_sock.setter
    def _sock(self, sock: socket.socket | None) -> None:
        self._held[0] = sock

    def _call(
        self, op: str, args: dict[str, Any] | None = None, payload: bytes = b""
    ) -> tuple[Any, bytes]:
        """The broker's answer to one call: its value and its payload."""
        with self._lock:
            if self._sock is None and op == "end":
                return None, b""  # the session that held the write is gone, and its lock
            if self._sock is None or self._pid != os.getpid():
                # A forked child (a build worker) opens a session of its own; a long-running
                # process (the MCP server, serve) whose broker went reaches one again.
                self._sock, self._pid = _reach(self._url, self._path), os.getpid()
            if self._sock is None:
                raise StoreUnavailable("the store broker is unavailable", code="store_unavailable")
            try:
                wire.send(self._sock, {"op": op, "args": args or {}}, payload)
                answer = wire.receive(self._sock)
            except wire.TooLargeMessage:
                raise StoreUnavailable(
                    "a store call too large for the store broker (over 1 GiB): run it with "
                    "LOOPX_PG_BROKER=0 to connect directly",
                    code="store_unavailable",
                ) from None
            except OSError:
                answer = None
            if answer is None:
                self._drop()
                raise StoreUnavailable(
                    "the store broker went away mid-call: check that PostgreSQL is running; "
                    "a write that was not acknowledged may be retried with its operation id",
                    code="store_unavailable",
                )
        header, data = answer
        if header.get("ok"):
            return header.get("value"), data
        if header.get("stale"):
            raise SnapshotStale()
        raise _error(header.get("error") or {})

    def _value(self, op: str, args: dict[str, Any] | None = None, payload: bytes = b"") -> Any:
        return self._call(op, args, payload)[0]

    def _drop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> BrokeredStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------

    def goal_ids(self) -> list[str]:
        return list(self._value("goal_ids"))

    def exists(self, goal_id: str) -> bool:
        return bool(self._value("exists", {"goal": check_id(goal_id, "goal_id")}))

    def head(self, goal_id: str) -> Cursor | None:
        """The goal's head: the change token of build caches (as `PostgresStore.head`)."""
        return wire.as_cursor(self._value("head", {"goal": check_id(goal_id, "goal_id")}))

    def raw(self, goal_id: str) -> bytes:
        return self._call("raw", {"goal": check_id(goal_id, "goal_id")})[1]

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        check_id(goal_id, "goal_id")
        (at, after), data = self._call("read_row", {"goal": goal_id, "since": wire.as_list(since)})
        row = (None if at is None else data[:at], data[at or 0 :] if after else None)
        return scanned(row, goal_id, since)

    def verify(self, goal_id: str) -> VerifyReport:
        return verify_buffer(goal_id, self.raw(goal_id))

    def get_blob(self, digest: str) -> bytes | None:
        found, data = self._call("get_blob", {"digest": digest})
        return data if found else None

    def get_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        return {digest: self.get_blob(digest) for digest in digests}

    def reading_blobs(self) -> AbstractContextManager[None]:
        return nullcontext()

    def put_blob(self, data: bytes) -> str:
        return str(self._value("put_blob", payload=data))

    def blob_refs(self) -> list[str]:
        return list(self._value("blob_refs"))

    def listen(self, changed: Callable[[str], None], stop: threading.Event) -> None:
        """`PostgresStore.listen` on a connection of this process's own (`serve` runs long
        enough for the driver's import not to matter)."""
        from loopx.store.postgres import PostgresStore

        PostgresStore(self._url, max_connections=1).listen(changed, stop)

    # -- writing ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, goal_id: str, since: Cursor | None = None) -> Iterator[BrokeredWriter]:
        """The goal locked by the broker's session for the life of the block; leaving it
        without an append rolls back, as with a direct connection."""
        check_id(goal_id, "goal_id")
        with self._lock:
            began = self._value("begin", {"goal": goal_id, "since": wire.as_list(since)})
            try:
                yield BrokeredWriter(self, began)
            except BaseException:
                with contextlib.suppress(LoopxError):
                    self._value("end")  # the broker rolls back (or is gone, and so is the lock)
                raise
            self._value("end")


class BrokeredWriter:
    """A `Writer` whose appends the broker stamps, makes durable and acknowledges."""

    def __init__(self, store: BrokeredStore, began: dict[str, Any]):
        self._store = store
        start, end = _cursor(began["start"]), _cursor(began["cursor"])
        self.tail: Scan | None = Scan(start=start, events=began["events"], cursor=end)
        self.cursor = end
        repair = began.get("repair")
        self.repair = Repair(**repair) if repair else None

    def append(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        done = self._store._value("append", {"envelopes": envelopes})
        self.cursor = _cursor(done["cursor"])
        return list(done["stamped"])


def _close(held: list[socket.socket | None]) -> None:
    if held[0] is not None:
        held[0].close()


def _cursor(value: list[Any]) -> Cursor:
    found = wire.as_cursor(value)
    assert found is not None
    return found


def _error(err: dict[str, Any]) -> LoopxError:
    """The broker's typed error as this process would have raised it."""
    cls = _ERRORS.get(str(err.get("type")), StoreUnavailable)
    found = err.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    return cls(str(err.get("message", "the store broker failed")), code=err.get("code"), **details)
