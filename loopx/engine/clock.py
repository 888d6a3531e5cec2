"""Time, injected: the engine never reads the wall clock except through a `Clock`."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Protocol

from loopx.model.errors import InvalidInput
from loopx.model.times import FORMAT as FORMAT
from loopx.model.times import parse_utc

# The times loopx accepts: four-digit years, with room above for a lease, a backoff or a
# time-zone shift to be added without leaving what `datetime` holds (it stops at 9999).
EARLIEST = datetime(1000, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9000, 1, 1, tzinfo=timezone.utc)


class Clock(Protocol):
    def now(self) -> str:
        """The current time as an ISO-8601 UTC string with a `Z` suffix, to the second."""
        ...


class SystemClock:
    def now(self) -> str:
        return datetime.now(timezone.utc).strftime(FORMAT)


class FixedClock:
    """A clock that starts at `start` and advances `step` seconds on every reading."""

    def __init__(self, start: str, step: int = 0):
        self._t = parse(start)
        self._step = timedelta(seconds=step)

    def now(self) -> str:
        value = self._t.strftime(FORMAT)
        self._t += self._step
        return value


def parse(value: str) -> datetime:
    try:
        dt = parse_utc(value)
    except ValueError:
        raise InvalidInput(
            "time must look like 2026-01-31T12:00:00Z", code="invalid_time", field="time"
        ) from None
    if not EARLIEST <= dt < LATEST:
        raise InvalidInput(
            "time must lie between the years 1000 and 8999", code="invalid_time", field="time"
        )
    return dt


def add_seconds(value: str, seconds: int) -> str:
    try:
        later = parse(value) + timedelta(seconds=seconds)
    except OverflowError:
        later = LATEST
    if not EARLIEST <= later < LATEST:
        raise InvalidInput(
            "the time plus the lease lies beyond the year 8999", code="time_out_of_range"
        )
    return later.strftime(FORMAT)


def from_env() -> Clock:
    """`LOOPX_NOW` pins the clock (reproducible demos and tests); otherwise the system clock."""
    pinned = os.environ.get("LOOPX_NOW")
    if pinned:
        return FixedClock(pinned)
    return SystemClock()
