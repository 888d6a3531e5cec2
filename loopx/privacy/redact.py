"""Redaction of free text allowed into public output: flagged spans become typed markers.

A title or summary marked public may still hold a token or an address; rather than drop the
field, every span the scanner's rules flag is replaced by ``[redacted:<kind>]`` and counted, so
the artifact's omission note can say how many redactions of which kind were made. The markers
themselves match no rule, so redacted text scans clean.
"""

from __future__ import annotations

from functools import lru_cache

from loopx.privacy.scanner import Hit, Scanner


@lru_cache(maxsize=1)
def _rules_only() -> Scanner:
    return Scanner(machine=False)


def marker(kind: str) -> str:
    """The text that stands in for a redacted span of `kind`."""
    return f"[redacted:{kind}]"


def redact(text: str, *, scanner: Scanner | None = None) -> tuple[str, dict[str, int]]:
    """Replace every span the rules flag with `[redacted:<kind>]`; return text and counts by kind.

    By default only the rules apply, so the result is the same on every machine. Pass a
    `scanner` to also redact its forbidden strings and this machine's user and host names.
    Overlapping spans are merged into one marker, named after the most specific rule.
    """
    hits = (scanner if scanner is not None else _rules_only()).hits(text)
    if not hits:
        return text, {}
    parts: list[str] = []
    counts: dict[str, int] = {}
    last = 0
    for start, end, kind in _merge(hits):
        parts.append(text[last:start])
        parts.append(marker(kind))
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    parts.append(text[last:])
    return "".join(parts), dict(sorted(counts.items()))


def _merge(hits: list[Hit]) -> list[tuple[int, int, str]]:
    """Group overlapping spans; each group is named after its highest-priority, longest hit."""
    groups: list[tuple[int, int, str]] = []
    ordered = sorted(hits, key=lambda h: (h.start, -h.end))
    group: list[Hit] = []
    end = -1
    for hit in [*ordered, None]:
        if hit is not None and group and hit.start < end:
            group.append(hit)
            end = max(end, hit.end)
            continue
        if group:
            best = max(group, key=lambda h: (not h.generic, h.priority, h.end - h.start))
            groups.append((group[0].start, end, best.kind))
        if hit is not None:
            group = [hit]
            end = hit.end
    return groups
