"""The PostgreSQL schema of `PostgresStore`: numbered migrations and the recorded version.

Each migration runs once, in its own transaction, under a cluster-wide advisory lock (two
hosts opening a fresh database at once do not both create the tables), and records its
number in `loopx_schema`. A database whose schema is newer than this loopx knows is refused
(`store_schema_newer`): an older loopx must not write rows a newer one may read differently.
"""

from __future__ import annotations

from typing import Any

from loopx.model.errors import StoreUnavailable

# pg_advisory_lock key for migrations: "loopx" as a number, so unrelated users of
# advisory locks in the same database are unlikely to collide with it.
MIGRATION_LOCK = 0x6C6F6F7078

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "ledgers, heads, operations, blobs, quarantine",
        """
        CREATE TABLE loopx_events (
            goal_id     text   NOT NULL,
            seq         bigint NOT NULL,
            end_offset  bigint NOT NULL,
            line        bytea  NOT NULL,
            sum         text   NOT NULL,
            prev        text   NOT NULL,
            PRIMARY KEY (goal_id, seq),
            UNIQUE (goal_id, end_offset)
        );
        CREATE TABLE loopx_heads (
            goal_id     text   PRIMARY KEY,
            seq         bigint NOT NULL,
            head        text   NOT NULL,
            end_offset  bigint NOT NULL
        );
        CREATE TABLE loopx_operations (
            goal_id      text   NOT NULL,
            operation_id text   NOT NULL,
            op_hash      text   NOT NULL,
            seq_first    bigint NOT NULL,
            seq_last     bigint NOT NULL,
            PRIMARY KEY (goal_id, operation_id)
        );
        CREATE TABLE loopx_blobs (
            digest  text  PRIMARY KEY,
            data    bytea NOT NULL
        );
        CREATE TABLE loopx_quarantine (
            id          bigserial PRIMARY KEY,
            goal_id     text   NOT NULL,
            at_offset   bigint NOT NULL,
            reason      text   NOT NULL,
            data        bytea  NOT NULL
        );
        """,
    ),
]

LATEST = MIGRATIONS[-1][0]


# The recorded version (every process checks it, in the round trip of its first statement).
VERSION = "SELECT coalesce(max(version), 0) FROM loopx_schema"


def schema_version(conn: Any) -> int:
    """The highest migration recorded in the database (0 for a database loopx never used)."""
    import psycopg

    try:  # `conn` is in autocommit: a failed statement leaves nothing to roll back
        row = conn.execute(VERSION).fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0])


def newer_schema(found: int) -> StoreUnavailable:
    return StoreUnavailable(
        f"the database's loopx schema is version {found}, newer than this loopx knows "
        f"({LATEST}): upgrade loopx",
        code="store_schema_newer",
    )


def migrate(conn: Any) -> int:
    """Bring the schema up to `LATEST`; return the version found before. `conn` is autocommit."""
    found = schema_version(conn)
    if found > LATEST:
        raise newer_schema(found)
    if found == LATEST:
        return found
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS loopx_schema ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)  # again, under the lock: another host may have won
        for version, name, sql in MIGRATIONS:
            if version <= current:
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO loopx_schema (version, name) VALUES (%s, %s)", (version, name)
                )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return found
