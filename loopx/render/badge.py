"""A flat SVG badge (label | message) from a shields.io endpoint document: the same picture
shields.io draws, made here so the badge works without a third-party service."""

from __future__ import annotations

from typing import Any

from loopx.render.env import environment

# Advance widths of Verdana at 11 px, rounded up, by character class: enough for a box the
# text fits in; exactness is not needed, determinism is.
_NARROW = set("fijlrtI!.,:;'|() ")
_WIDE = set("mwMWO@%&GQDHNU")
MAX_TEXT = 80


def text_width(text: str) -> int:
    return sum(4 if c in _NARROW else 10 if c in _WIDE else 7 for c in text)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def to_svg(doc: dict[str, Any]) -> str:
    label, message = _clip(str(doc["label"])), _clip(str(doc["message"]))
    left, right = text_width(label) + 12, text_width(message) + 12
    return (
        environment()
        .get_template("badge.svg")
        .render(
            label=label,
            message=message,
            colour=doc["color"],
            left=left,
            right=right,
            width=left + right,
        )
    )
