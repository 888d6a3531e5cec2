"""Audience lenses: what one audience may see of a goal, with everything left out counted.

Public output is built from an allow-list: projections ask the lens for each fact they want
to show, and the lens answers only for facts the audience may see. Free text that reaches a
public artifact is redacted first; the lens counts every omission and redaction so the
artifact can say what it does not show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from loopx.model.ids import visible_to
from loopx.state.entities import MONITOR, Fields, Handoff, private_ref
from loopx.state.redactions import REDACTED

AUDIENCES = ("public", "team", "private")
PRIVATE = "[private]"  # private text, to an audience that may not read it
NOT_ON_HOST = "[private content not on this host]"  # to the private audience, blob not here

BlobReader = Callable[[str], bytes | None]


class BlobText:
    """The one resolver of private text: a blob reference to its text on this host, or None
    when this host does not hold it. Each blob is read once."""

    def __init__(self, read_blob: BlobReader | None):
        self._read_blob = read_blob
        self._seen: dict[str, str | None] = {}

    def __call__(self, ref: str) -> str | None:
        if self._read_blob is None:
            return None
        if ref not in self._seen:
            if len(self._seen) >= 4096:
                self._seen.clear()
            data = self._read_blob(ref)
            self._seen[ref] = None if data is None else data.decode("utf-8", "replace")
        return self._seen[ref]


class Lens:
    """One audience's view of stored values, counting what it leaves out.

    Private text is shown to the private audience only, read through `read_blob` on this host
    (`NOT_ON_HOST` when the blob is not here); any other audience sees `PRIVATE`. Public text
    is redacted (`loopx.privacy.redact`)."""

    def __init__(self, audience: str, read_blob: BlobReader | None = None):
        if audience not in AUDIENCES:
            raise ValueError(f"unknown audience {audience!r}")
        self.audience = audience
        self._blobs = BlobText(read_blob if audience == "private" else None)
        self.omitted: Counter[str] = Counter()
        self.redactions: Counter[str] = Counter()

    @property
    def is_public(self) -> bool:
        return self.audience == "public"

    def sees(self, visibility: str) -> bool:
        return visible_to(visibility, self.audience)

    def keep(self, items: list[Any], what: str) -> list[Any]:
        """The items this audience may see; the rest counted as `<visibility> <what>`."""
        kept = []
        for item in items:
            if self.sees(item.visibility):
                kept.append(item)
            else:
                self.omitted[f"{item.visibility} {what}"] += 1
        return kept

    def text(self, value: Any) -> str:
        """Display text for a stored value this audience may see (redacted when public)."""
        if value is None:
            return ""
        ref = private_ref(value)
        text = self._private(ref) if ref is not None else str(value)
        if text == REDACTED:  # a governed correction (loopx.state.redactions): counted
            self.omitted["redacted fields"] += 1
            return text
        if self.is_public:
            from loopx.privacy.redact import redact

            text, counts = redact(text)
            self.redactions.update(counts)
        return text

    def _private(self, ref: str) -> str:
        if self.audience != "private":
            self.omitted["private text"] += 1
            return PRIVATE
        text = self._blobs(ref)
        if text is None:
            self.omitted["private text not on this host"] += 1
            return NOT_ON_HOST
        return text

    def field(self, item: Any, name: str, fields: Fields | None = None) -> str | None:
        """Display text of `item`'s free-text field `name`, None when unset. Only a field its
        record declares free text (`Fields`) is read through a lens."""
        declared = fields if fields is not None else type(item).FIELDS
        if name not in declared.text:
            raise ValueError(f"{declared.kind}.{name} is not declared free text")
        value = item.get(name) if isinstance(item, dict) else getattr(item, name)
        return None if value is None else self.text(value)

    def watch(self, monitor: dict[str, Any]) -> str | None:
        """A monitor's watch ref (`ci:…`, `pr:…`, `url:…`, free text) as this audience may
        read it; None to the public, which sees only the ref's kind (`watch_kind`): a ref
        names a repository, a host or a run, which is never published. Counted."""
        if self.is_public:
            self.omitted["monitor watches"] += 1
            return None
        return self.field(monitor, "watch", MONITOR)

    def note(self, handoff: Handoff) -> dict[str, Any] | None:
        """A handoff's note as this audience may read it, or None (counted) when it may not."""
        if not self.sees(handoff.visibility):
            self.omitted[f"{handoff.visibility} handoff note"] += 1
            return None
        body = note_body(handoff.note, self._blobs)
        if body is None:
            self.omitted["private handoff note not on this host"] += 1
        return body

    def omissions(self) -> dict[str, Any]:
        """The omission note: counts by kind, and one sentence saying it."""
        omitted = dict(sorted(self.omitted.items()))
        redacted = dict(sorted(self.redactions.items()))
        parts = [", ".join(_count(n, what) for what, n in omitted.items())] if omitted else []
        if redacted:
            total = sum(redacted.values())
            kinds = ", ".join(f"{n} {k}" for k, n in redacted.items())
            parts.append(f"{total} redaction{'s' if total != 1 else ''} ({kinds})")
        return {
            "omitted": omitted,
            "redacted": redacted,
            "note": "; ".join(parts) if parts else "nothing",
        }


def note_body(value: Any, blobs: Callable[[str], str | None]) -> dict[str, Any] | None:
    """The one reading of a stored handoff note: inline, or private text that holds the note
    as JSON; None when it cannot be read here."""
    ref = private_ref(value)
    if ref is None:
        return value if isinstance(value, dict) else None
    raw = blobs(ref)
    try:
        body = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def _count(n: int, what: str) -> str:
    """ "1 team todo", "3 team todos": the keys are plural; say one in the singular."""
    if n == 1:
        for plural, singular in _SINGULAR:
            if what.endswith(plural) or f"{plural} " in what:
                what = what.replace(plural, singular, 1)
                break
    return f"{n} {what}"


_SINGULAR = (
    ("evidence items", "evidence item"),
    ("fields", "field"),
    ("corrections", "correction"),
    ("edges", "edge"),
    ("todos", "todo"),
    ("gates", "gate"),
    ("goals", "goal"),
    ("notes", "note"),
    ("runs", "run"),
    ("watches", "watch"),
)
