"""A PostgreSQL connection lost at each step of a write, or a pooled one dropped while idle.

The rule: a write is acknowledged only once committed, so a lost connection never leaves an
acknowledged-but-missing event; and the retry with the same operation id either applies the
write (it never landed) or replays its receipt (it did), never both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.core import load_state
from loopx.engine.goals import create_goal
from loopx.engine.todos import add_todo
from loopx.model.errors import StoreUnavailable
from loopx.store.postgres import PostgresStore
from tests import pg
from tests.conftest import make_ctx

G = "goal-a"
# A write holds the goal's lock, reads the tail, then sends one statement that commits on
# its own: the connection is killed after the lock, just before that statement, and after it.
STEPS = ["locked", "append", "committed"]


def kill(url: str, pid: int) -> None:
    """Terminate a backend and wait until it is gone."""
    conn = pg.admin(url)
    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    for _ in range(200):
        row = conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        if row is None:
            return
        time.sleep(0.01)
    raise AssertionError("the backend did not go away")


def killer(url: str, at: str) -> Callable[[str, int], None]:
    fired: list[str] = []

    def fault(step: str, pid: int) -> None:
        if step == at and not fired:
            fired.append(step)
            kill(url, pid)

    return fault


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = pg.pg_store(pg_url)
    yield s
    s.close()


def added(store: PostgresStore, op: str) -> list[dict[str, Any]]:
    return [e for e in store.read(G).events if e["operation_id"] == op]


@pytest.mark.parametrize("step", STEPS)
def test_a_connection_killed_at_each_step_is_never_lost_nor_doubled(
    store: PostgresStore, pg_url: str, step: str
) -> None:
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Objective"))
    store.fault = killer(pg_url, step)
    try:
        result = add_todo(
            ctx, AddTodo(goal_id=G, title="first", todo_id="first", operation_id="op-first")
        )
    except StoreUnavailable as err:
        assert err.code == "store_unavailable" and err.exit_code == 8
        acknowledged = False
    else:
        assert result.status == "applied"
        acknowledged = True
    store.fault = None
    landed = added(store, "op-first")
    assert len(landed) == (1 if acknowledged else 0), "acknowledged ⇔ in the ledger"
    assert acknowledged == (step == "committed")

    retry = add_todo(
        ctx, AddTodo(goal_id=G, title="first", todo_id="first", operation_id="op-first")
    )
    assert retry.status == ("replayed" if acknowledged else "applied")
    assert len(added(store, "op-first")) == 1, "exactly one copy after the retry"
    assert retry.receipt["seq_first"] == 2
    assert store.verify(G).ok
    state = load_state(store, G, cache=False).state
    assert state is not None and list(state.todos) == ["first"]


def test_the_database_refuses_a_second_copy_of_an_operation(store: PostgresStore) -> None:
    """Idempotency is a key in the database, not only a check in the engine."""
    from loopx.model.errors import Conflict
    from tests.test_store_contract import envelope

    with store.writing(G) as writer:
        writer.append([envelope(1)])
    with pytest.raises(Conflict) as caught, store.writing(G) as writer:
        writer.append([envelope(1)])  # same operation id, bypassing the engine's check
    assert caught.value.code == "operation_id_reused"
    assert [e["seq"] for e in store.read(G).events] == [1]


def test_pooled_connections_dropped_while_idle_are_replaced(
    store: PostgresStore, pg_url: str
) -> None:
    ctx = make_ctx(store)
    create_goal(ctx, CreateGoal(goal_id=G, title="Goal", objective="Objective"))
    rows = (
        pg.admin(pg_url)
        .execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )
        .fetchall()
    )
    assert rows, "the store keeps a pooled connection"
    for (pid,) in rows:
        kill(pg_url, pid)
    assert store.read(G).events, "a read after the server dropped the pool still works"
    assert add_todo(ctx, AddTodo(goal_id=G, title="after")).status == "applied"


def test_schema_version_is_recorded_and_a_newer_one_refused(pg_url: str) -> None:
    from loopx.store.pg_schema import LATEST, schema_version

    conn = pg.admin(pg_url)
    pg.reset(pg_url)
    assert schema_version(conn) == LATEST
    conn.execute("INSERT INTO loopx_schema (version, name) VALUES (%s, 'from the future')", (999,))
    try:
        with PostgresStore(pg_url) as newer, pytest.raises(StoreUnavailable) as caught:
            newer.goal_ids()
        assert caught.value.code == "store_schema_newer"
    finally:
        conn.execute("DELETE FROM loopx_schema WHERE version = 999")


def test_a_fresh_database_gets_the_schema_on_first_use(pg_url: str) -> None:
    import psycopg

    from loopx.store.pg_schema import LATEST, schema_version

    server = pg.server_conninfo()
    name = "loopx_fresh_" + pg_url.rsplit("_", 1)[-1]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = pg.with_db(server, name)
        with PostgresStore(url) as fresh:
            assert fresh.goal_ids() == []
        with psycopg.connect(url, autocommit=True) as conn:
            assert schema_version(conn) == LATEST
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_user_who_may_not_create_the_tables_gets_a_clear_error(pg_url: str) -> None:
    import secrets

    import psycopg

    server = pg.server_conninfo()
    suffix = secrets.token_hex(4)
    name, role = f"loopx_nocreate_{suffix}", f"loopx_reader_{suffix}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        with psycopg.connect(pg.with_db(server, name), autocommit=True) as conn:
            conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")  # the default since 15
        url = pg.with_db(server, name) + f" user={role}"
        with PostgresStore(url) as store, pytest.raises(StoreUnavailable) as caught:
            store.goal_ids()
        assert caught.value.code == "store_unavailable"
        assert "tables" in caught.value.message
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')
