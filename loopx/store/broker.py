"""The store broker: a per-user process that serves `PostgresStore` calls over a Unix socket.

Started on demand by the first short-lived loopx process that opens a PostgreSQL store
(`broker_client.connect`), it keeps the driver imported and a few connections open, and
exits after `LOOPX_BROKER_IDLE` seconds (600 by default) without a client. Each client
connection is one session with a one-connection `PostgresStore` of its own, on a connection
lent from the broker's shelf: it runs exactly the code a process connecting directly runs
(the first round trip of a session carries the schema check; a write holds the goal's
advisory lock in a transaction on that connection). When a client goes away mid-write —
killed, or its machine lost — the session rolls back, which releases the lock, as a lost
direct connection would.

Only this user can reach the socket (a private folder, and `SO_PEERCRED` where the system
has it); the broker inherits the libpq environment of the process that started it, and its
socket name is a hash of that environment (`broker_wire.socket_path`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from loopx.model.errors import LoopxError, StoreUnavailable
from loopx.store import broker_wire as wire
from loopx.store.base import SnapshotStale

MAX_SHELF = 4  # idle connections kept open between sessions
STOP_GRACE = 5.0  # seconds a stopped broker waits for its open sessions to end


class Broker:
    def __init__(self, url: str, server: socket.socket, path: Path):
        self.url = url
        self.server = server
        self.path = path
        self.inode = os.stat(path).st_ino
        self.stop = threading.Event()
        self._shelf: list[Any] = []
        self._lock = threading.Lock()
        self._sessions = 0
        self._last = time.monotonic()

    # -- the connection shelf ---------------------------------------------------------------

    def connect(self) -> Any:
        """An idle connection from the shelf that the server has not closed, else a new one."""
        import psycopg

        while True:
            with self._lock:
                conn = self._shelf.pop() if self._shelf else None
            if conn is None:
                return psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            if _alive(conn):
                return conn
            with contextlib.suppress(Exception):
                conn.close()

    def release(self, conn: Any) -> None:
        import psycopg

        idle = psycopg.pq.TransactionStatus.IDLE
        if not conn.closed and not conn.broken and conn.info.transaction_status == idle:
            with self._lock:
                if len(self._shelf) < MAX_SHELF:
                    self._shelf.append(conn)
                    return
        with contextlib.suppress(Exception):
            conn.close()

    # -- serving ----------------------------------------------------------------------------

    def serve(self) -> None:
        self.server.settimeout(0.2)
        idle = wire.idle_seconds()
        while not self.stop.is_set():
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                with self._lock:
                    quiet = self._sessions == 0 and time.monotonic() - self._last > idle
                if quiet:
                    break
                continue
            self._admit(client)
        self._unlisten()
        deadline = time.monotonic() + STOP_GRACE  # stopped: let open sessions finish
        while time.monotonic() < deadline:
            with self._lock:
                if self._sessions == 0:
                    break
            time.sleep(0.02)
        with self._lock:
            shelf, self._shelf = self._shelf, []
        for conn in shelf:
            with contextlib.suppress(Exception):
                conn.close()

    def _admit(self, client: socket.socket) -> None:
        client.settimeout(None)
        if not _same_user(client):
            client.close()
            return
        with self._lock:
            self._sessions += 1
        threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _unlisten(self) -> None:
        """Stop listening without dropping a client: the socket's name goes first (a client
        then finds no broker here and starts one or connects itself), then each connection
        already queued is served like any other (closing the socket would reset them)."""
        self.unlink()
        self.server.setblocking(False)
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:  # none queued (BlockingIOError) or the socket is gone
                break
            self._admit(client)
        self.server.close()

    def unlink(self) -> None:
        """Remove the socket's name if it is still this broker's, not a successor's."""
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)

    def _session(self, client: socket.socket) -> None:
        try:
            with client:
                Session(self).run(client)
        except Exception:  # a bug or a broken socket: log it, keep serving the others
            traceback.print_exc()
        finally:
            with self._lock:
                self._sessions -= 1
                self._last = time.monotonic()


class Session:
    """One client's calls, in order, on a one-connection store lent from the shelf."""

    def __init__(self, broker: Broker):
        from loopx.store.postgres import PostgresStore

        self.store = PostgresStore(
            broker.url, max_connections=1, connect=broker.connect, release=broker.release
        )
        self.write = contextlib.ExitStack()
        self.writer: Any = None

    def run(self, client: socket.socket) -> None:
        try:
            while (message := wire.receive(client)) is not None:
                header, payload = message
                wire.send(client, *self.answer(header, payload))
        finally:
            self.write.close()  # a client gone mid-write: roll back (the lock goes with it)
            self.store.close()

    def answer(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        try:
            value, out = self.call(str(header.get("op")), header.get("args") or {}, payload)
            return {"ok": True, "value": value}, out
        except SnapshotStale:
            return {"ok": False, "stale": True}, b""
        except LoopxError as err:
            return {"ok": False, "error": {"type": type(err).__name__, **err.to_dict()}}, b""
        except Exception:
            traceback.print_exc()
            failed = StoreUnavailable("the store broker failed (see its log)").to_dict()
            return {"ok": False, "error": {"type": "StoreUnavailable", **failed}}, b""

    def call(self, op: str, args: dict[str, Any], payload: bytes) -> tuple[Any, bytes]:
        store = self.store
        goal = args.get("goal", "")
        if op == "goal_ids":
            return store.goal_ids(), b""
        if op == "exists":
            return store.exists(goal), b""
        if op == "head":
            return wire.as_list(store.head(goal)), b""
        if op == "raw":
            return None, store.raw(goal)
        if op == "read_row":
            at, after = store.read_row(goal, wire.as_cursor(args.get("since")))
            at_b, after_b = bytes(at or b""), bytes(after or b"")
            return [None if at is None else len(at_b), after is not None], at_b + after_b
        if op == "get_blob":
            data = store.get_blob(str(args.get("digest")))
            return data is not None, data or b""
        if op == "put_blob":
            return store.put_blob(payload), b""
        if op == "blob_refs":
            return store.blob_refs(), b""
        return self.writing(op, args)

    def writing(self, op: str, args: dict[str, Any]) -> tuple[Any, bytes]:
        if op == "begin":
            if self.writer is not None:
                raise StoreUnavailable("a broker session holds one write at a time")
            since = wire.as_cursor(args.get("since"))
            self.writer = self.write.enter_context(self.store.writing(args["goal"], since))
            tail = self.writer.tail
            repair = self.writer.repair
            return {
                "start": wire.as_list(tail.start),
                "events": tail.events,
                "cursor": wire.as_list(tail.cursor),
                "repair": repair.to_dict() if repair is not None else None,
            }, b""
        if op == "append":
            if self.writer is None:
                raise StoreUnavailable("append outside a write")
            stamped = self.writer.append(args["envelopes"])
            return {"stamped": stamped, "cursor": wire.as_list(self.writer.cursor)}, b""
        if op == "end":
            self.writer = None
            self.write.close()
            return None, b""
        raise StoreUnavailable("the store broker does not know this call")


def _alive(conn: Any) -> bool:
    """False when the server closed the idle connection (its socket is readable: a
    termination notice or the end of the stream)."""
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _same_user(client: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # the private folder is the guard there
        return True
    creds = client.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _listen(path: Path) -> socket.socket | None:
    """The bound socket at `path`, or None when another broker holds it (its lock)."""
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return None
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())  # read by `loopx store broker` (status, --stop)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket left by a broker that died (we hold the lock now)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(64)
    return server  # the lock fd stays open (and held) for the life of the process


def main(argv: list[str]) -> int:
    """`python -m loopx.store.broker SOCKET`: detach, bind, tell the starter, serve until idle.

    The starter waits for this process only, which exits once its child (the broker) is
    listening, or has found another broker holding the socket ("busy"): exit 0 either way,
    1 when the child died first."""
    path = Path(argv[1])
    url = os.environ.get("LOOPX_BROKER_URL", "")
    if not url or wire.private_dir() != path.parent:
        return 2
    ready, tell = os.pipe()
    if os.fork():
        os.close(tell)
        said = os.read(ready, 16)
        return 0 if said in (b"ready", b"busy") else 1
    os.close(ready)
    os.setsid()
    server = _listen(path)
    os.write(tell, b"ready" if server is not None else b"busy")
    os.close(tell)
    if server is None:
        return 0
    broker = Broker(url, server, path)
    signal.signal(signal.SIGTERM, lambda *_: broker.stop.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        broker.serve()
    finally:
        broker.unlink()
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
