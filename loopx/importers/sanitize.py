"""Text helpers for importers: ids, timestamps, and keeping local paths out of shared text.

Foreign state is full of machine-specific detail (absolute paths to a checkout or a home
folder). Text an importer puts in the ledger inline is scrubbed of such paths; the original
goes to the private blob store as an evidence body, never inline.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta, timezone

from loopx.engine.clock import EARLIEST, FORMAT, LATEST

ID_MAX = 64
_NOT_ID = re.compile(r"[^a-z0-9._-]+")
_LEAD = re.compile(r"^[^a-z0-9]+")

# An absolute POSIX path of at least two segments, or a home-relative one, not preceded by a
# word character, ':' (logical refs such as repo:/x and URLs), '/', '.', '~' or '-'; or a
# Windows drive path.
LOCAL_PATH = re.compile(
    r"(?<![\w:/.~-])(?:~|/[\w.@+-]+)/[^\s\"'`<>()\[\]{},;|]*"
    r"|(?<![\w])[A-Za-z]:\\[^\s\"'`<>|]*"
)
PATH_MARK = "[local path]"

_STAMP = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?)?"
    r"\s*(Z|z|[+-]\d\d:?\d\d)?$"
)


def has_local_path(text: str) -> bool:
    return LOCAL_PATH.search(text) is not None


def scrub(text: str) -> str:
    """`text` with every local absolute path replaced by a marker."""
    return LOCAL_PATH.sub(PATH_MARK, text)


def short_hash(text: str, n: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def slug(value: str, prefix: str = "") -> str:
    """A valid loopx id (`^[a-z0-9][a-z0-9._-]{0,63}$`) derived from `value`, stably.

    Long values keep a readable head and gain a hash of the whole, so distinct values stay
    distinct.
    """
    raw = f"{prefix}{value}"
    out = _LEAD.sub("", _NOT_ID.sub("-", raw.lower())).strip("-")
    out = re.sub(r"-{2,}", "-", out) or "x"
    if len(out) > ID_MAX:
        out = out[: ID_MAX - 9].rstrip("-._") + "-" + short_hash(raw)
    return out


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (with an ellipsis when cut)."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def first_line(text: str, limit: int = 160) -> str:
    """The first non-blank line of `text`, without Markdown heading or list markers."""
    for line in text.splitlines():
        line = re.sub(r"^\s*(#{1,6}\s+|[-*+]\s+|\d+[.)]\s+)", "", line).strip()
        line = line.replace("**", "").strip()
        if line:
            return clip(line, limit)
    return ""


def norm_time(value: object) -> str | None:
    """An ISO-8601 timestamp in loopx's clock format (`2026-01-31T12:00:00Z`), or None."""
    match = _STAMP.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        dt = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError:
        return None
    offset = timedelta(0)
    if zone and zone not in ("Z", "z"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    try:
        utc = (dt - offset).replace(tzinfo=timezone.utc)
    except OverflowError:  # year 1 or 9999 shifted past what datetime holds
        return None
    # Outside the clock's years a time is unusable (no lease could be added to it).
    return utc.strftime(FORMAT) if EARLIEST <= utc < LATEST else None
