"""`PostgresStore`: the ledgers in a PostgreSQL database shared by several hosts.

One row per ledger line, `(goal_id, seq, end_offset, line, sum, prev)`: `line` holds exactly
the bytes the file store would have appended (the same `stamp`, the same canonical JSON and
hash chain), so the concatenated rows of a goal are its file ledger byte for byte, and every
read is checked by the same `scan`. `end_offset` keeps the file store's cursor (seq, head,
byte offset) meaningful, so snapshots and their cursors work unchanged.

Sequencing: a writer holds a per-goal advisory lock (`pg_advisory_xact_lock`, keyed by a
hash of the goal id) for the whole read-fold-plan-append, like the file store's `flock`;
the append's commit releases it, so the next writer's read always sees that append.
A unique (goal, seq) key with a retry was the alternative; it was not chosen because the
engine decides *under the lock* (claims, revision guards, terminal goals, idempotency): on a
lost race it would have to re-read, re-fold and re-plan, and a precondition such as "this
todo is unclaimed" is only sound if nobody appends between the check and the append. The
lock makes every CAS exact, costs no extra round trip (it is pipelined with BEGIN and the
read), and the server drops it with the transaction if a host dies. The primary key
(goal_id, seq) still backs it up: a writer that somehow ran without the lock fails its
insert instead of forking the chain.

Idempotency: each operation's (goal, operation id) is a primary key in `loopx_operations`,
inserted in the same transaction as its events, so the database itself refuses a second
copy of an operation. A write is acknowledged only after its transaction committed: a
connection lost before the commit leaves nothing; one lost during the commit may or may not
have landed, and a retry with the same operation id then replays or applies it, never both.

Private blobs live in `loopx_blobs` (bytea by sha256); snapshots are a per-host cache kept
in the project's `.loopx/cache/` (or in memory without a project folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from loopx.model.errors import Conflict, LedgerDamage, StoreUnavailable
from loopx.model.ids import check_id
from loopx.store.base import Repair, SnapshotStale, StampingWriter
from loopx.store.blobs import _hex, blob_ref
from loopx.store.ledger import Cursor, Scan, parse_line, scan
from loopx.store.pg_schema import LATEST, VERSION, migrate, newer_schema
from loopx.store.snapshots import OPERATIONS, SnapshotCache
from loopx.store.verify import VerifyReport, verify_buffer

CHANNEL = "loopx_ledger"  # NOTIFY channel: the payload is the goal id that changed

# A hook called at each step of a write with (step, backend pid): the fault-injection seam
# the failure tests use to kill the connection at every point of a write.
Fault = Callable[[str, int], None]


def _lock_key(goal_id: str) -> int:
    """The goal's advisory lock: a signed 64-bit number from its id."""
    return int.from_bytes(
        hashlib.sha256(b"loopx-goal:" + goal_id.encode()).digest()[:8], "big", signed=True
    )


@contextlib.contextmanager
def guard(what: str) -> Iterator[None]:
    """Map the driver's connection errors to `store_unavailable` (never echoing the URL)."""
    import psycopg

    try:
        yield
    except (psycopg.OperationalError, psycopg.InterfaceError) as err:  # PoolTimeout included
        raise StoreUnavailable(
            f"the store's database is unavailable ({what}): check that PostgreSQL is running "
            "and reachable",
            code="store_unavailable",
        ) from err


class PostgresWriter(StampingWriter):
    def __init__(
        self, store: PostgresStore, conn: Any, goal_id: str, tail: Scan, repair: Repair | None
    ):
        super().__init__(goal_id, tail, repair)
        self._store = store
        self._conn = conn
        self._key = _lock_key(goal_id)
        self._locked = True

    def _write(self, data: bytes, stamped: list[dict[str, Any]], head: Cursor) -> None:
        """Insert the stamped lines, the operations and the new head, and commit."""
        if not self._locked:  # a second append: the first one's commit released the lock
            self._relock()
        rows, ops = _rows(self._goal_id, stamped, data, self.cursor.offset)
        _insert(self._conn, self._store.fault, rows, ops, head)
        self._locked = False

    def _relock(self) -> None:
        head = ("SELECT seq, end_offset FROM loopx_heads WHERE goal_id = %s", (self._goal_id,))
        with guard("lock the goal's ledger"):
            rows = self._store._round_trip(self._conn, [*_locking(self._key), head])
        if not rows or (rows[0][0], rows[0][1]) != (self.cursor.seq, self.cursor.offset):
            raise LedgerDamage(
                "the ledger changed between two appends of one writer", code="ledger_changed"
            )
        self._locked = True


def _rows(
    goal_id: str, events: list[dict[str, Any]], data: bytes, offset: int
) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """The event rows of `data` (one line per event) and its operations' rows."""
    rows: list[tuple[Any, ...]] = []
    ops: list[list[Any]] = []
    for event, line in zip(events, data.splitlines(keepends=True), strict=True):
        offset += len(line)
        rows.append((goal_id, event["seq"], offset, line, event["sum"], event["prev"]))
        if ops and ops[-1][1] == event["operation_id"]:
            ops[-1][4] = event["seq"]
        else:
            ops.append(
                [goal_id, event["operation_id"], event["op_hash"], event["seq"], event["seq"]]
            )
    return rows, ops


# One statement, sent with its COMMIT in one round trip: the events, their operations and the
# new head land together or not at all, and the commit releases the goal's lock.
_APPEND = """
WITH events AS (
    INSERT INTO loopx_events (goal_id, seq, end_offset, line, sum, prev)
    SELECT %(goal)s, * FROM unnest(
        %(seq)s::bigint[], %(end)s::bigint[], %(line)s::bytea[], %(sum)s::text[], %(prev)s::text[])
), operations AS (
    INSERT INTO loopx_operations (goal_id, operation_id, op_hash, seq_first, seq_last)
    SELECT %(goal)s, * FROM unnest(
        %(op)s::text[], %(op_hash)s::text[], %(first)s::bigint[], %(last)s::bigint[])
), head AS (
    INSERT INTO loopx_heads (goal_id, seq, head, end_offset)
    VALUES (%(goal)s, %(head_seq)s, %(head)s, %(head_end)s)
    ON CONFLICT (goal_id) DO UPDATE
    SET seq = excluded.seq, head = excluded.head, end_offset = excluded.end_offset
)
SELECT 1
"""


def _insert(
    conn: Any, fault: Fault | None, rows: list[tuple[Any, ...]], ops: list[list[Any]], head: Cursor
) -> None:
    """Insert ledger rows and their operations, move the head, notify: all or nothing."""
    import psycopg

    params = {
        "goal": rows[0][0],
        "seq": [r[1] for r in rows],
        "end": [r[2] for r in rows],
        "line": [r[3] for r in rows],
        "sum": [r[4] for r in rows],
        "prev": [r[5] for r in rows],
        "op": [o[1] for o in ops],
        "op_hash": [o[2] for o in ops],
        "first": [o[3] for o in ops],
        "last": [o[4] for o in ops],
        "head_seq": head.seq,
        "head": head.head,
        "head_end": head.offset,
    }
    with guard("append to the ledger"):
        if fault:
            fault("append", conn.info.backend_pid)
        try:
            with conn.pipeline():
                conn.execute(_APPEND, params)
                conn.execute("COMMIT")
                # NOTIFY holds a cluster-wide lock through its transaction's commit: inside
                # the append it would serialise every goal's commits on one WAL flush each.
                # So it goes in a transaction of its own that need not wait for the disk
                # (a lost notification costs `serve` a rebuild, not an event).
                conn.execute("BEGIN")
                conn.execute("SET LOCAL synchronous_commit TO off")
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, params["goal"]))
                conn.execute("COMMIT")
        except psycopg.errors.UniqueViolation as err:
            if err.diag.constraint_name == "loopx_operations_pkey":
                raise Conflict(
                    "operation id is already recorded in this goal's ledger",
                    code="operation_id_reused",
                ) from None
            raise LedgerDamage(
                "the ledger changed under its lock (written by something other than loopx?)",
                code="ledger_changed",
            ) from None
        if fault:
            fault("committed", conn.info.backend_pid)


def _migrate(conn: Any) -> None:
    """Check or create the schema; a refusal (no right to create tables) is unavailable too."""
    import psycopg

    with guard("check the schema"):
        try:
            migrate(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            raise
        except psycopg.Error:
            raise StoreUnavailable(
                "cannot create or upgrade loopx's tables in the store's database "
                "(does this user have the right to?)",
                code="store_unavailable",
            ) from None


def _close_in(pool: Any, pid: int) -> None:
    if os.getpid() == pid:  # never from a forked child: the sockets are the parent's
        pool.close()


class _Single:
    """One connection with the pool's `connection()`/`close()`, for a one-command process:
    no pool threads to start and join. Re-entrant (a write stores its blobs on the same
    connection it holds the goal's lock with); a broken connection is replaced on next use.

    `connect` makes the connection (`psycopg.connect` by default) and `release` takes it
    back on `close()` instead of closing it: the store broker lends each client session a
    connection it keeps open between sessions (`loopx/store/broker.py`)."""

    def __init__(
        self,
        conninfo: str,
        kwargs: dict[str, Any],
        connect: Callable[[], Any] | None = None,
        release: Callable[[Any], None] | None = None,
    ):
        self._conninfo = conninfo
        self._kwargs = kwargs
        self._connect = connect
        self._release = release
        self._conn: Any = None
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                with guard("connect"):
                    self._conn = (
                        self._connect()
                        if self._connect is not None
                        else psycopg.connect(self._conninfo, **self._kwargs)
                    )
            yield self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._release is not None:
            self._release(conn)
        else:
            conn.close()


class HostCache:
    """A database store's per-host part: snapshots in the project's `.loopx/cache/` (in
    memory without a project folder) and the folder of its other caches."""

    def __init__(self, root: Path | None, cache_dir: Path | None):
        self.root = root  # the project folder of this host (its checkout), when there is one
        # Where this host keeps its own caches (rendered handoff digests), as in the file store.
        self.state_dir = root / ".loopx" if root is not None else None
        self._cache = SnapshotCache(cache_dir) if cache_dir is not None else None
        self._snapshots: dict[str, bytes] = {}
        self._indexes: dict[str, bytes] = {}

    def load_snapshot(self, goal_id: str) -> bytes | None:
        if self._cache is None:
            return self._snapshots.get(goal_id)
        return self._cache.load(goal_id)

    def save_snapshot(self, goal_id: str, data: bytes) -> None:
        if self._cache is None:
            self._snapshots[goal_id] = data
        else:
            self._cache.save(goal_id, data)

    def load_index(self, goal_id: str) -> bytes | None:
        if self._cache is None:
            return self._indexes.get(goal_id)
        return self._cache.load(goal_id, OPERATIONS)

    def save_index(self, goal_id: str, data: bytes) -> None:
        if self._cache is None:
            self._indexes[goal_id] = data
        else:
            self._cache.save(goal_id, data, OPERATIONS)


class PostgresStore(HostCache):
    """Ledgers, blobs and quarantined tails in one PostgreSQL database (see the module doc)."""

    def __init__(
        self,
        conninfo: str,
        *,
        root: Path | None = None,
        cache_dir: Path | None = None,
        max_connections: int = 10,
        connect_timeout: int = 5,
        connect: Callable[[], Any] | None = None,
        release: Callable[[Any], None] | None = None,
    ):
        super().__init__(root, cache_dir)
        self._conninfo = conninfo
        self._lend = (connect, release)  # a one-connection store's connection, lent (broker)
        self._max = max_connections
        self._timeout = connect_timeout
        self._pool: Any = None
        self._schema_ok = False  # checked (or migrated) by this process
        self._pid = os.getpid()
        self._opening = threading.Lock()
        self.fault: Fault | None = None

    # -- connections ------------------------------------------------------------------------

    def _open(self) -> Any:
        """The connections, opened on first use: a pool when `max_connections` > 1 (the
        schema checked, or migrated, first), else one connection (a short CLI process, whose
        first round trip carries the schema check: see `_round_trip`)."""
        with self._opening:
            if self._pool is not None and self._pid != os.getpid():
                # A forked child (the build's workers) must not touch its parent's sockets:
                # it abandons the inherited connections, unclosed, and opens its own.
                self._pool = None
            if self._pool is not None:
                return self._pool
            import psycopg

            kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": self._timeout}
            if self._max <= 1:  # the schema is checked in the first round trip
                pool: Any = _Single(self._conninfo, kwargs, *self._lend)
            else:
                from psycopg_pool import ConnectionPool

                with guard("connect"), psycopg.connect(self._conninfo, **kwargs) as conn:
                    _migrate(conn)
                pool = ConnectionPool(
                    self._conninfo,
                    min_size=1,
                    max_size=self._max,
                    kwargs=kwargs,
                    timeout=float(self._timeout),
                    open=False,
                )
                with guard("connect"):
                    pool.open(wait=True, timeout=float(self._timeout))
                self._schema_ok = True
            self._pool, self._pid = pool, os.getpid()
            # Closed with the store object too, so a caller that drops it (a build in
            # `serve`) never leaks a connection.
            weakref.finalize(self, _close_in, pool, self._pid)
            return pool

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """An autocommit connection (connection errors become `store_unavailable`)."""
        pool = self._open()
        with guard("connect"), pool.connection() as conn:
            yield conn

    def _query(
        self, sql: str, params: Any = (), what: str = "read the store"
    ) -> list[tuple[Any, ...]]:
        """The rows of one statement, in one round trip; a pooled connection the server
        dropped is replaced once."""
        import psycopg

        for attempt in (1, 2):
            try:
                with self.connection() as conn, guard(what):
                    return self._round_trip(conn, [(sql, params)])
            except StoreUnavailable as err:
                if attempt == 2 or not isinstance(err.__cause__, psycopg.OperationalError):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _round_trip(self, conn: Any, statements: list[tuple[str, Any]]) -> list[tuple[Any, ...]]:
        """Run `statements` in one round trip (one pipeline) and return the last one's rows.

        The process's first round trip carries the schema check too: a missing or older
        schema is migrated and the statements run again, a newer one is refused. A failed
        statement skips the rest of its pipeline, so when the tables are missing nothing ran
        (no transaction or lock is left open).
        """
        import psycopg

        check = not self._schema_ok
        try:
            with conn.pipeline():
                version = conn.execute(VERSION) if check else None
                for sql, params in statements:
                    cur = conn.execute(sql, params)
            rows = list(cur.fetchall()) if cur.description is not None else []
            found = int(version.fetchone()[0]) if version is not None else LATEST
        except psycopg.errors.UndefinedTable:
            if not check:
                raise
            found = 0
        if found > LATEST:
            raise newer_schema(found)
        if found < LATEST:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")  # the statements opened one (a write's lock)
            _migrate(conn)
            self._schema_ok = True
            return self._round_trip(conn, statements)
        self._schema_ok = True
        return rows

    def close(self) -> None:
        if self._pool is not None and self._pid == os.getpid():
            self._pool.close()
        self._pool = None

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------

    def goal_ids(self) -> list[str]:
        rows = self._query("SELECT goal_id FROM loopx_heads WHERE seq > 0")
        return sorted(r[0] for r in rows)

    def exists(self, goal_id: str) -> bool:
        check_id(goal_id, "goal_id")
        return bool(
            self._query("SELECT 1 FROM loopx_heads WHERE goal_id = %s AND seq > 0", (goal_id,))
        )

    def head(self, goal_id: str) -> Cursor | None:
        """The goal's head (seq, sum, offset) from one indexed row: a cheap change token."""
        check_id(goal_id, "goal_id")
        rows = self._query(
            "SELECT seq, head, end_offset FROM loopx_heads WHERE goal_id = %s", (goal_id,)
        )
        return Cursor(seq=rows[0][0], head=rows[0][1], offset=rows[0][2]) if rows else None

    def raw(self, goal_id: str) -> bytes:
        check_id(goal_id, "goal_id")
        rows = self._query(_AFTER, (goal_id, 0), "read the ledger")
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else b""

    def read(self, goal_id: str, since: Cursor | None = None) -> Scan:
        """The scan after `since`, in one round trip: the line the cursor names (checked
        to be intact, else SnapshotStale) and every line after it."""
        return scanned(self.read_row(goal_id, since), goal_id, since)

    def read_row(self, goal_id: str, since: Cursor | None = None) -> tuple[Any, Any]:
        """The line `since` names (None when there is none) and the bytes after it (None
        when there are none): what `read` scans, in one round trip."""
        check_id(goal_id, "goal_id")
        where = {"g": goal_id, "o": (since or Cursor()).offset}
        row = self._query(_READ, where, "read the ledger")[0]
        return row[0], row[1]

    def verify(self, goal_id: str) -> VerifyReport:
        return verify_buffer(goal_id, self.raw(goal_id))

    # -- writing ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, goal_id: str, since: Cursor | None = None) -> Iterator[PostgresWriter]:
        """Open a transaction holding the goal's lock, repair a damaged tail, yield a writer.

        `BEGIN`, the lock and the read of the tail go out in one pipeline (one round trip);
        the server runs the read after the lock is granted, so it sees every committed
        append. The writer's append commits, which releases the lock; leaving the block
        without an append rolls back.
        """
        import psycopg

        check_id(goal_id, "goal_id")
        key = _lock_key(goal_id)
        with self.connection() as conn:
            try:
                repair = None
                while True:
                    with guard("lock the goal's ledger"):  # BEGIN, lock, read: one round trip
                        [row] = self._round_trip(conn, _locked_read(key, goal_id, since))
                    if self.fault:
                        self.fault("locked", conn.info.backend_pid)
                    try:
                        result = scanned(row, goal_id, since)
                    except SnapshotStale:
                        result = _read(conn, goal_id, None)
                    if result.damage is None:
                        break
                    # The repair is kept even if the write is then refused: commit it on
                    # its own, and lock and read again.
                    repair = _quarantine(conn, goal_id, result)
                    with guard("quarantine a damaged ledger tail"):
                        conn.execute("COMMIT")
                    since = None
                yield PostgresWriter(self, conn, goal_id, result, repair)
            finally:
                # Nothing appended (a refusal) or a failed append: end the transaction (a
                # broken connection already lost it, and its lock, with the session).
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")

    def listen(self, changed: Callable[[str], None], stop: threading.Event) -> None:
        """Call `changed(goal_id)` for every append any host commits, until `stop` is set
        (`LISTEN` on a connection of its own, reconnecting after a loss)."""
        import psycopg

        while not stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    changed("")  # (re)connected: anything may have changed meanwhile
                    while not stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            changed(note.payload)
            except psycopg.Error:
                stop.wait(1.0)  # the database is away: try again shortly

    # -- blobs ------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        ref = blob_ref(data)
        with self.connection() as conn, guard("store a private blob"):
            self._round_trip(conn, [(_PUT_BLOB, (ref, data))])
        return ref

    def get_blob(self, digest: str) -> bytes | None:
        ref = "sha256:" + _hex(digest)
        rows = self._query("SELECT data FROM loopx_blobs WHERE digest = %s", (ref,))
        return bytes(rows[0][0]) if rows else None

    def get_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        refs = {digest: "sha256:" + _hex(digest) for digest in digests}
        wanted = sorted(set(refs.values()))
        found: dict[str, bytes] = {}
        for at in range(0, len(wanted), _BLOBS_A_QUERY):
            rows = self._query(
                "SELECT digest, data FROM loopx_blobs WHERE digest = ANY(%s)",
                (wanted[at : at + _BLOBS_A_QUERY],),
            )
            found.update((str(ref), bytes(data)) for ref, data in rows)
        return {digest: found.get(ref) for digest, ref in refs.items()}

    def reading_blobs(self) -> AbstractContextManager[None]:
        return nullcontext()

    def blob_refs(self) -> list[str]:
        return sorted(r[0] for r in self._query("SELECT digest FROM loopx_blobs"))


_AFTER = (
    "SELECT string_agg(line, ''::bytea ORDER BY seq) FROM loopx_events"
    " WHERE goal_id = %s AND end_offset > %s"
)
_READ = (
    "SELECT (SELECT line FROM loopx_events WHERE goal_id = %(g)s AND end_offset = %(o)s),"
    " (SELECT string_agg(line, ''::bytea ORDER BY seq) FROM loopx_events"
    "  WHERE goal_id = %(g)s AND end_offset > %(o)s)"
)
_BLOBS_A_QUERY = 5000  # digests asked for in one query (a scan asks for every blob)
_PUT_BLOB = "INSERT INTO loopx_blobs (digest, data) VALUES (%s, %s) ON CONFLICT (digest) DO NOTHING"


def _bytes_after(conn: Any, goal_id: str, offset: int) -> bytes:
    with guard("read the ledger"):
        row = conn.execute(_AFTER, (goal_id, offset)).fetchone()
    return bytes(row[0]) if row and row[0] is not None else b""


def _read(conn: Any, goal_id: str, since: Cursor | None) -> Scan:
    """`PostgresStore.read` on `conn` (inside a write's transaction)."""
    start = since or Cursor()
    with guard("read the ledger"):
        row = conn.execute(_READ, {"g": goal_id, "o": start.offset}).fetchone()
    return scanned(row, goal_id, since)


def _locking(key: int) -> list[tuple[str, Any]]:
    """BEGIN and take the goal's transaction lock (what follows runs once it is granted)."""
    return [("BEGIN", None), ("SELECT pg_advisory_xact_lock(%s)", (key,))]


def _locked_read(key: int, goal_id: str, since: Cursor | None) -> list[tuple[str, Any]]:
    """Lock the goal and read after `since`."""
    return [*_locking(key), (_READ, {"g": goal_id, "o": (since or Cursor()).offset})]


def scanned(row: Any, goal_id: str, since: Cursor | None) -> Scan:
    """The `Scan` of a `read_row` result; `SnapshotStale` when `since` names no intact line."""
    start = since or Cursor()
    if start.offset and (row[0] is None or not _ends_at(bytes(row[0]), start)):
        raise SnapshotStale()
    return scan(bytes(row[1]) if row[1] is not None else b"", start, goal_id=goal_id)


def _ends_at(line: bytes, cursor: Cursor) -> bool:
    """True when `line` is the intact event `cursor.seq` with sum `cursor.head`."""
    if not line.endswith(b"\n"):
        return False
    try:
        event = parse_line(line[:-1])
    except LedgerDamage:
        return False
    return event.get("seq") == cursor.seq and line[-67:-3].decode() == cursor.head


def _quarantine(conn: Any, goal_id: str, result: Scan) -> Repair:
    """Keep the damaged tail in `loopx_quarantine`, cut it, and move the head back."""
    assert result.damage is not None
    cut = result.cursor
    with guard("quarantine a damaged ledger tail"), conn.transaction():
        damaged = _bytes_after(conn, goal_id, cut.offset)
        row = conn.execute(
            "INSERT INTO loopx_quarantine (goal_id, at_offset, reason, data)"
            " VALUES (%s, %s, %s, %s) RETURNING id",
            (goal_id, cut.offset, result.damage.reason, damaged),
        ).fetchone()
        conn.execute(
            "DELETE FROM loopx_events WHERE goal_id = %s AND end_offset > %s", (goal_id, cut.offset)
        )
        conn.execute(  # the cut operations never completed: a retry may apply them again
            "DELETE FROM loopx_operations WHERE goal_id = %s AND seq_last > %s", (goal_id, cut.seq)
        )
        conn.execute(
            "UPDATE loopx_heads SET seq = %s, head = %s, end_offset = %s WHERE goal_id = %s",
            (cut.seq, cut.head, cut.offset, goal_id),
        )
    return Repair(
        offset=cut.offset,
        length=len(damaged),
        reason=result.damage.reason,
        quarantine=f"postgresql:loopx_quarantine/{row[0]}",
    )
