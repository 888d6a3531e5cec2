"""Reviewed allow entries, as the scanner applies them: a finding inside an allowed id.

An entry (see `loopx.state.allowances`) says: findings of this kind inside this id are fine.
A finding is exempt only when it lies wholly inside an occurrence of the id as a whole id
(``todo-1`` does not cover ``todo-12``; a Markdown escape such as ``todo\\-1`` is the same id)
in the same decoded view, and only for the entry's kind: the same words elsewhere, in a longer
id, or another kind in the same id are still findings.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass

_ID_CHARS = "A-Za-z0-9_-"  # what continues an id (as the non-public-id matcher bounds it)
_PUNCTUATION = frozenset(string.punctuation)


@dataclass(frozen=True, order=True)
class Allowance:
    """Findings of `kind` inside the id `text` are allowed."""

    kind: str
    text: str


def _pattern(text: str) -> re.Pattern[str]:
    body = "".join((r"\\?" + re.escape(c)) if c in _PUNCTUATION else re.escape(c) for c in text)
    return re.compile(rf"(?<![{_ID_CHARS}]){body}(?![{_ID_CHARS}])")


class Allowed:
    """The allow entries one scanner honours, by kind."""

    def __init__(self, allowances: Iterable[Allowance] = ()) -> None:
        self._by_kind: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
        for allowance in sorted(set(allowances)):
            if allowance.text:
                reach = 2 * len(allowance.text)  # the longest an escaped occurrence can be
                entry = (reach, _pattern(allowance.text))
                self._by_kind.setdefault(allowance.kind, []).append(entry)

    def __bool__(self) -> bool:
        return bool(self._by_kind)

    def covers(self, text: str, kind: str, start: int, end: int) -> bool:
        """True when `text[start:end]`, a finding of `kind`, lies inside an allowed id."""
        for reach, pattern in self._by_kind.get(kind, ()):
            for match in pattern.finditer(text, max(0, end - reach)):
                if match.start() > start:
                    break
                if match.end() >= end:
                    return True
        return False
