"""What one short process (a CLI call: one connection, no pool) sends to PostgreSQL: each read
is one round trip, a write two, and the schema check rides along with the first statement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopx.store.postgres import PostgresStore
from tests import pg
from tests.test_store_contract import envelope

G = "g"


class Traced:
    """A one-connection store whose libpq protocol trace counts round trips: each time the
    client, having sent messages, reads the server's answer."""

    def __init__(self, url: str, folder: Path):
        self.store = PostgresStore(url, max_connections=1)
        self.path = folder / "trace.txt"
        self._file = self.path.open("w")
        with self.store._open().connection() as conn:  # connects; the schema is not checked
            self._conn = conn
        self._trace()
        self._seen = 0

    def _trace(self) -> None:
        from psycopg import pq

        self._conn.pgconn.trace(self._file.fileno())
        self._conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    def round_trips(self) -> int:
        """Round trips since the last call."""
        self._conn.pgconn.untrace()  # flushes libpq's buffer
        lines = self.path.read_text().splitlines()[self._seen :]
        self._seen += len(lines)
        self._trace()
        sides = [line.split("\t", 1)[0] for line in lines]
        return sum(1 for a, b in zip(sides, sides[1:], strict=False) if (a, b) == ("F", "B"))

    def statements(self) -> list[str]:
        return [
            line.split("\t")[3]
            for line in self.path.read_text().splitlines()
            if "\tParse\t" in line
        ]

    def close(self) -> None:
        self.store.close()
        self._file.close()


@pytest.fixture
def traced(pg_url: str, tmp_path: Path) -> Any:
    pg.reset(pg_url)
    with PostgresStore(pg_url) as setup, setup.writing(G) as writer:
        writer.append([envelope(1, G), envelope(2, G)])
    t = Traced(pg_url, tmp_path)
    yield t
    t.close()


def test_a_read_is_one_round_trip_with_the_schema_check_in_it(traced: Traced) -> None:
    head = traced.store.head(G)
    assert head is not None and head.seq == 2
    assert traced.round_trips() == 1
    assert "loopx_schema" in traced.statements()[0]
    assert len(traced.store.read(G, head).events) == 0
    assert traced.round_trips() == 1
    assert traced.statements().count(traced.statements()[0]) == 1, "checked once a process"


def test_a_write_is_two_round_trips(traced: Traced) -> None:
    with traced.store.writing(G) as writer:
        assert traced.round_trips() == 1  # BEGIN, schema check, lock, read the tail
        writer.append([envelope(3, G)])
    assert traced.round_trips() == 1  # insert, commit, notify
    assert len(traced.store.read(G).events) == 3
