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

from loopx.model.ids import visible_to
from loopx.state.redactions import REDACTED

AUDIENCES = ("public", "team", "private")
PRIVATE_MISSING = "[private content not on this host]"

BlobReader = Callable[[str], bytes | None]


class Lens:
    """One audience's view. `read_blob` resolves private text on this host (private audience)."""

    def __init__(self, audience: str, read_blob: BlobReader | None = None):
        if audience not in AUDIENCES:
            raise ValueError(f"unknown audience {audience!r}")
        self.audience = audience
        self._read_blob = read_blob
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
        if isinstance(value, dict):
            ref = value.get("blob", "")
            data = self._read_blob(ref) if self._read_blob and self.audience == "private" else None
            if data is None:
                self.omitted["private text"] += 1
                return PRIVATE_MISSING
            value = data.decode("utf-8", "replace")
        text = str(value)
        if text == REDACTED:  # a governed correction (loopx.state.redactions): counted
            self.omitted["redacted fields"] += 1
            return text
        if self.is_public:
            from loopx.privacy.redact import redact

            text, counts = redact(text)
            self.redactions.update(counts)
        return text

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
)
