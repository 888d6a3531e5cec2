"""Ledger times are read without `strptime` (issue 19), accepting and refusing exactly what
`strptime` does."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopx.model.times import FORMAT, parse_utc


def _strptime(value: str) -> datetime | None:
    try:
        return datetime.strptime(value, FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _parsed(value: str) -> datetime | None:
    try:
        return parse_utc(value)
    except ValueError:
        return None


@pytest.mark.parametrize(
    "value",
    [
        "2026-01-31T12:00:00Z",
        "1000-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "2024-02-29T00:00:00Z",
        "2023-02-29T00:00:00Z",  # no such day
        "2026-13-01T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01T00:00:61Z",
        "0000-01-01T00:00:00Z",
        "2026-1-5T1:2:3Z",  # strptime takes single digits: so does parse_utc
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:00z",
        "２０２６-01-01T00:00:00Z",  # fullwidth digits: strptime's \d takes them
        "+026-01-01T00:00:00Z",
        "2026-01-01T00:00:0 Z",
        "",
    ],
)
def test_known_times_parse_as_strptime_reads_them(value: str) -> None:
    assert _parsed(value) == _strptime(value)


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)).map(
        lambda dt: dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
)
def test_every_canonical_time_parses_as_strptime_reads_it(value: str) -> None:
    assert _parsed(value) == _strptime(value)


@given(st.text(alphabet="0123456789-T:Z ٣+", min_size=18, max_size=22))
def test_near_canonical_text_parses_or_fails_as_strptime(value: str) -> None:
    assert _parsed(value) == _strptime(value)
