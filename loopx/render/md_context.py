"""Escaping prose with the whole paragraph in view, so it escapes no more than it must.

A `*` or `_` run only emphasises when a partner run exists on the right side of it in the same
paragraph, and a `#` or `1.` only starts a block at the start of a line: a filter that sees one
value alone cannot know either, so `md_escape.prose` escapes every run that could open or
close. Templates do better in two passes. Their filters wrap each value in marker characters
(Unicode noncharacters, which loopx never writes and strips from values): prose as *text*, code
spans and links as *opaque* (emphasis never reaches inside them). `finish` then reads each
block of consecutive lines as a whole and escapes a prose run only when it touches template
emphasis or a run elsewhere in the block could pair with it, block syntax only where the value
starts a line, a `|` only in a table, and the rest as `prose` does, with the real next
character in view.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

from loopx.render import md_escape

TEXT_OPEN, TEXT_CLOSE, OPAQUE_OPEN, OPAQUE_CLOSE = "\ufdd0", "\ufdd1", "\ufdd2", "\ufdd3"
_MARKERS = re.compile("[\ufdd0-\ufdd3]")
_SPLIT = re.compile("([\ufdd0-\ufdd3])")
_TEXT_VALUE = re.compile("\ufdd0([^\ufdd1]*)\ufdd1")
_BLOCKS = re.compile(r"(\n[ \t]*\n)")
# What may stand before a value for the value to start a block: indentation, list markers,
# block quotes.
_LINE_PREFIX = re.compile(r"[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+|>[ \t]?)*")
TEXT, OPAQUE, TEMPLATE = "text", "opaque", "template"
# Template lines that start a paragraph of their own (values start with a marker character,
# so these only ever match the template's own syntax).
_ITEM = re.compile(r" {0,3}(?:[-+*]|(\d{1,9})[.)])(?:[ \t]|$)")
_OWN_BLOCK = re.compile(r" {0,3}(?:#{1,6}(?:[ \t]|$)|>|```|~~~)")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_CLOSING_HASHES = re.compile(r"#+[ \t]*$")
_DELIMITER_ROW = re.compile(r"\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?")


def clean(value: Any) -> str:
    """The value as text, with the marker characters (never written) as U+FFFD."""
    return _MARKERS.sub("\ufffd", str(value))


def prose(value: Any) -> str:
    """Prose, to be escaped by `finish` (one line)."""
    line = md_escape.one_line(clean(value))
    return TEXT_OPEN + line + TEXT_CLOSE if line else ""


def _opaque(rendered: str) -> str:
    return OPAQUE_OPEN + rendered + OPAQUE_CLOSE if rendered else ""


def code(value: Any) -> str:
    return _opaque(md_escape.code(clean(value)))


def code_cell(value: Any) -> str:
    return _opaque(md_escape.code_cell(clean(value)))


def ref(value: Any) -> str:
    return _opaque(md_escape.ref(clean(value)))


def ref_cell(value: Any) -> str:
    return _opaque(md_escape.ref_cell(clean(value)))


def finish(markdown: str) -> str:
    """Resolve the markers a template's filters left: escape each prose value in its context."""
    if not _MARKERS.search(markdown):
        return markdown
    return "".join(
        "\n".join(
            _MARKERS.sub("", unit) if _plain(unit) else _finish_block(unit, table)
            for unit, table in _units(part)
        )
        if _MARKERS.search(part)
        else part
        for part in _BLOCKS.split(markdown)
    )


def _plain(unit: str) -> bool:
    """True when no value in `unit` holds anything that could need an escape."""
    return all(md_escape.is_plain(value) for value in _TEXT_VALUE.findall(unit))


def _units(block: str) -> list[tuple[str, bool]]:
    """The block cut where the template starts a new paragraph: at its headings, list items
    and table rows (a value's own `- ` at a line start is escaped, so it never cuts). Each
    piece holds whole paragraphs: emphasis cannot pair across two pieces. Each comes with
    whether the block holds a table (where a `|` would end a cell)."""
    lines = block.split("\n")
    rows = [
        i
        for i in range(len(lines) - 1)
        if lines[i].startswith("|") and _DELIMITER_ROW.fullmatch(lines[i + 1])
    ]
    if rows and rows[0] > 0:  # a table under other lines: keep the block whole, to be safe
        return [(block, True)]
    table = bool(rows)
    units: list[list[str]] = []
    in_list = False
    for line in lines:
        starts = table or not units
        item = _ITEM.match(line)
        if item:
            number = item.group(1)
            starts = starts or number is None or number == "1" or in_list
            in_list = True
        elif _OWN_BLOCK.match(line) or (units and _OWN_BLOCK.match(units[-1][-1])):
            starts, in_list = True, False
        if starts:
            units.append([line])
        else:
            units[-1].append(line)
    return [("\n".join(unit), table) for unit in units]


class _Block:
    """A block's text without markers, and who owns each stretch of it."""

    def __init__(self, marked: str) -> None:
        pieces: list[str] = []
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, str]] = []
        size, owner, start = 0, TEMPLATE, 0
        for part in _SPLIT.split(marked):
            if part in (TEXT_OPEN, OPAQUE_OPEN):
                owner, start = (TEXT if part == TEXT_OPEN else OPAQUE), size
            elif part in (TEXT_CLOSE, OPAQUE_CLOSE):
                self.spans.append((start, size, owner))
                self.starts.append(start)
                owner = TEMPLATE
            else:
                pieces.append(part)
                size += len(part)
        self.text = "".join(pieces)

    def owner(self, pos: int) -> str:
        i = bisect_right(self.starts, pos) - 1
        if i >= 0:
            start, end, owner = self.spans[i]
            if start <= pos < end:
                return owner
        return TEMPLATE


def _flanks(text: str, i: int, j: int) -> tuple[bool, bool]:
    """(can open, can close) for the run text[i:j], as CommonMark decides it."""
    before = text[i - 1] if i else " "
    after = text[j] if j < len(text) else " "
    marker = text[i]
    space_before, space_after = before in md_escape.SPACES, after in md_escape.SPACES
    punct_before, punct_after = md_escape.punct(before), md_escape.punct(after)
    left = not space_after and (not punct_after or space_before or punct_before)
    right = not space_before and (not punct_before or space_after or punct_after)
    if marker == "*":
        return left, right
    return left and (not right or punct_before), right and (not left or punct_after)


def _emphasis_marks(block: _Block, marks: set[int]) -> None:
    text = block.text
    runs = []  # (start, end, marker, can open, can close, owners)
    for found in md_escape.RUN.finditer(text):
        i, j = found.span()
        owners = {block.owner(k) for k in range(i, j)}
        if owners == {OPAQUE}:
            continue  # inside a code span or a link: never a delimiter outside it
        can_open, can_close = _flanks(text, i, j)
        if owners == {TEMPLATE, TEXT}:
            # A value's run glued to the template's: the value's part is escaped, and what
            # is left of the template's may pair with anything.
            can_open = can_close = True
        runs.append((i, j, text[i], can_open, can_close, owners))
    for n, (i, j, marker, can_open, can_close, owners) in enumerate(runs):
        if TEXT not in owners:
            continue
        mine = [k for k in range(i, j) if block.owner(k) == TEXT]
        if TEMPLATE in owners:
            marks.update(mine)
            continue
        closer_after = can_open and any(r[2] == marker and r[4] for r in runs[n + 1 :])
        opener_before = can_close and any(r[2] == marker and r[3] for r in runs[:n])
        if closer_after or opener_before:
            marks.update(mine)


def _finish_block(marked: str, table: bool) -> str:
    """Escape the values of one unit; a `|` only inside a table, where it would end a cell."""
    block = _Block(marked)
    text = block.text
    marks: set[int] = set()
    _emphasis_marks(block, marks)
    for start, end, owner in block.spans:
        if owner != TEXT:
            continue
        md_escape.inline_marks(text, marks, link_text=False, pipes=table, start=start, stop=end)
        line_start = text.rfind("\n", 0, start) + 1
        closing = _CLOSING_HASHES.search(text, start, end)
        if closing and text[end : end + 1] in ("", "\n") and _HEADING.match(text, line_start):
            # `#`s that end a heading line after a space close the heading: they would vanish
            k = closing.start()
            if k > line_start and text[k - 1] in " \t":
                marks.add(k)
        if _LINE_PREFIX.fullmatch(text, line_start, start):
            value = text[start:end]
            if md_escape.BLOCK_START.match(value):
                marks.add(start)
            ordered = md_escape.ORDERED.match(value)
            if ordered:
                marks.add(start + ordered.start(1))
    _whole_runs(block, marks)
    return md_escape.join(text, marks)


def _whole_runs(block: _Block, marks: set[int]) -> None:
    """A value's `*`/`_` run escaped in part is escaped whole: what is left unescaped of it is
    a new run, with the escaped `*` as its punctuation neighbour, that may open or close what
    the whole run could not (a line's `***` escaped as a thematic break, `\\***`, closes an
    earlier `*1` as emphasis)."""
    if not marks:
        return
    for found in md_escape.RUN.finditer(block.text):
        mine = [k for k in range(*found.span()) if block.owner(k) == TEXT]
        if any(k in marks for k in mine):
            marks.update(mine)
