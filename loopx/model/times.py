"""Ledger times (`2026-01-31T12:00:00Z`) read without `strptime`.

`datetime.strptime` imports `_strptime`, `calendar` and `locale` on its first call: about
8 M instructions, 2–3% of a `loopx todo claim` (issue 19), for a format whose every field
sits at a fixed place. `parse_utc` reads the canonical form itself; anything else goes to
`strptime`, so what is accepted and refused is exactly what `strptime` accepts and refuses.
"""

from __future__ import annotations

from datetime import datetime, timezone

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_SEPARATORS = ((4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "Z"))


def _canonical(value: str) -> datetime | None:
    """`value` as a UTC datetime when it is exactly `YYYY-MM-DDTHH:MM:SSZ` in ASCII digits
    and names a real time; None otherwise (then `strptime` decides)."""
    if len(value) != 20 or not value.isascii():
        return None
    if any(value[i] != sep for i, sep in _SEPARATORS):
        return None
    parts = (value[0:4], value[5:7], value[8:10], value[11:13], value[14:16], value[17:19])
    if not all(part.isdigit() for part in parts):
        return None
    year, month, day, hour, minute, second = map(int, parts)
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:  # a day or hour that does not exist: strptime refuses it the same way
        return None


def parse_utc(value: str) -> datetime:
    """`value` (`FORMAT`) as an aware UTC datetime; ValueError when `strptime` refuses it."""
    found = _canonical(value)
    if found is not None:
        return found
    return datetime.strptime(value, FORMAT).replace(tzinfo=timezone.utc)
