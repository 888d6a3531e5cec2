"""PostgreSQL for the tests: one scratch database per test session, dropped at the end.

The server is `LOOPX_TEST_PG` (a libpq connection string; default: 127.0.0.1:5432 as user
postgres). Without a server the PostgreSQL tests skip, unless `LOOPX_REQUIRE_POSTGRES=1`
(CI) makes them fail.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BASE = os.environ.get("LOOPX_TEST_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres")
TABLES = "loopx_events, loopx_heads, loopx_operations, loopx_blobs, loopx_quarantine"


@pytest.fixture(scope="session", autouse=True)
def broker_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The store brokers this session's PostgreSQL CLI calls start keep their sockets in a
    folder of the session's own (`XDG_RUNTIME_DIR`), and are stopped when it ends."""
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_RUNTIME_DIR", str(runtime))
    patch.setenv("LOOPX_BROKER_IDLE", "120")  # a broker this session leaves behind goes soon
    try:
        yield runtime / "loopx"
    finally:
        stop_brokers(runtime / "loopx")
        patch.undo()


def stop_brokers(folder: Path) -> None:
    """SIGTERM every broker whose lock file is in `folder`, and wait for them to exit."""
    import signal
    import time

    pids = []
    for lock in folder.glob("*.lock") if folder.is_dir() else []:
        text = lock.read_text()
        if text.isdigit():
            pids.append(int(text))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 10
    for pid in pids:
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.02)


def alive(pid: int) -> bool:
    """The process runs (a zombie nobody reaped yet has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def server_conninfo() -> str:
    """The admin connection string, or skip/fail when no server answers."""
    import psycopg

    try:
        with psycopg.connect(BASE, connect_timeout=3):
            return BASE
    except psycopg.OperationalError:
        if os.environ.get("LOOPX_REQUIRE_POSTGRES") == "1":
            pytest.fail(
                "LOOPX_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at LOOPX_TEST_PG"
            )
        pytest.skip("no PostgreSQL server (set LOOPX_TEST_PG, or run one on 127.0.0.1:5432)")


def with_db(conninfo: str, dbname: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(conninfo, dbname=dbname)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh database for this session (its loopx schema is created on first use)."""
    import psycopg

    server = server_conninfo()
    name = f"loopx_test_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        # Tests never crash the server, only connections: commits need not wait for the disk.
        conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        yield with_db(server, name)
    finally:
        for conn in _ADMIN.values():
            conn.close()
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def reset(url: str) -> None:
    """Empty every loopx table (the schema stays)."""
    from loopx.store.pg_schema import migrate

    conn = admin(url)
    migrate(conn)
    conn.execute(f"TRUNCATE {TABLES}")


def pg_store(url: str, cache_dir: Path | None = None, connections: int = 10) -> Any:
    """A store on the emptied session database: pooled, or with `connections=1` one
    connection as a CLI process has."""
    from loopx.store.postgres import PostgresStore

    reset(url)
    return PostgresStore(url, cache_dir=cache_dir, max_connections=connections)


_ADMIN: dict[str, Any] = {}


def admin(url: str) -> Any:
    """One long-lived connection per database for the tests' own SQL."""
    import psycopg

    conn = _ADMIN.get(url)
    if conn is None or conn.closed:
        conn = _ADMIN[url] = psycopg.connect(url, autocommit=True)
    return conn


def overwrite(url: str, goal: str, data: bytes) -> None:
    """Replace a goal's rows with `data` split into lines, behind the store's back."""
    conn = admin(url)
    with conn.transaction():
        conn.execute("DELETE FROM loopx_events WHERE goal_id = %s", (goal,))
        conn.execute("DELETE FROM loopx_heads WHERE goal_id = %s", (goal,))
        conn.execute("DELETE FROM loopx_operations WHERE goal_id = %s", (goal,))
        offset = 0
        for n, line in enumerate(data.splitlines(keepends=True), start=1):
            offset += len(line)
            conn.execute(
                "INSERT INTO loopx_events (goal_id, seq, end_offset, line, sum, prev)"
                " VALUES (%s, %s, %s, %s, '', '')",
                (goal, n, offset, line),
            )
        if data:
            conn.execute(
                "INSERT INTO loopx_heads (goal_id, seq, head, end_offset) VALUES (%s, %s, '', %s)",
                (goal, data.count(b"\n"), offset),
            )


def quarantined(url: str, goal: str) -> list[bytes]:
    rows = (
        admin(url)
        .execute("SELECT data FROM loopx_quarantine WHERE goal_id = %s ORDER BY id", (goal,))
        .fetchall()
    )
    return [bytes(r[0]) for r in rows]


def as_url(conninfo: str) -> str:
    """The same database as a postgresql:// URL (what `loopx init --store` takes)."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    return (
        f"postgresql://{user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}"
        f"/{params['dbname']}"
    )


@pytest.fixture
def pg_empty(pg_url: str) -> str:
    """The session database, emptied, as a postgresql:// URL."""
    reset(pg_url)
    return as_url(pg_url)
