"""Ledger text into Markdown that renders as the same text: prose, code spans, links.

Three ways a value reaches a Markdown projection:

- `prose`: free text. Only what would change the rendering is backslash-escaped (CommonMark
  with tables, as `render.markdown` parses it): a leading `#`, `>`, list or ordered-list
  marker, thematic break or fence; `#`s that would close a heading; `*`/`_` runs that could
  open or close emphasis (an intra-word underscore cannot, so `error_code` stays as it is);
  backticks; `[` at the start and `]` before `(` (links, reference definitions, task boxes);
  `<` that could start HTML or an autolink; `&` that would start an entity; backslashes
  before punctuation or at the end; `|` (it would end a table cell). Line breaks become
  spaces: every value sits on one line. Seeing one value alone, it assumes the worst of its
  neighbours; templates go through `md_context`, which sees the whole block and escapes less.
- `code`: identifiers, paths, symbols, commands — a code span whose fence is longer than any
  backtick run inside, padded with a space when the text starts or ends with a backtick.
- `ref`: a reference. An `http`/`https` URL becomes a link whose href is the ref itself (an
  `<…>` autolink when its text would show unchanged, else `[text](<url>)`); any other scheme
  (`javascript:`, `file:`, `data:`, `sha256:`) or free text is a code span, never a link.

`code_cell` and `ref_cell` are for table cells, where an unescaped `|` would end the cell even
inside a code span.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\t\f\v\x85\u2028\u2029"})
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# CommonMark whitespace for flanking (markdown-it's isWhiteSpace).
SPACES = frozenset("\t\n\v\f\r \xa0\u1680\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)
}
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HTTP = re.compile(r"https?://[^\x00-\x20\x7f<>]+", re.IGNORECASE)
# Line starts that are block syntax: headings, quotes, list markers, fences, reference
# definitions, thematic breaks, and lines of `-`, `:`, `=` and `|` alone (a setext underline or
# a table's delimiter row under the line before).
BLOCK_START = re.compile(
    r"#{1,6}(?:\s|$)|>|[-+*](?:\s|$)|~{3,}|\[|[-:=|][-:=| \t]*$|([-*_])(?:[ \t]*\1){2,}[ \t]*$"
)
TRAILING_HASHES = re.compile(r"(?:^|(?<=[ \t]))#+$")
ORDERED = re.compile(r"\d{1,9}([.)])(?:\s|$)")


def one_line(value: Any) -> str:
    """The text on one line: line breaks and tabs as spaces, no surrounding whitespace."""
    return flat(value).strip()


def flat(value: Any) -> str:
    """The text with line breaks and tabs as spaces (what a code span shows)."""
    return str(value).translate(_LINE_BREAKS)


def punct(ch: str) -> bool:
    """ASCII or Unicode punctuation or symbol (markdown-it's isPunctChar)."""
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith(("P", "S"))


def _emphasis(before: str | None, after: str | None, marker: str) -> bool:
    """True when a `marker` run between `before` and `after` could open or close emphasis.

    An unknown neighbour (None: the run touches the end of the value, next to template text)
    counts as a possible partner, so the run is escaped.
    """
    if before is None or after is None:
        return True
    space_before, space_after = before in SPACES, after in SPACES
    punct_before, punct_after = punct(before), punct(after)
    left = not space_after and (not punct_after or space_before or punct_before)
    right = not space_before and (not punct_before or space_after or punct_after)
    if marker == "*":
        return left or right
    return (left and (not right or punct_before)) or (right and (not left or punct_after))


RUN = re.compile(r"\*+|_+")
_NEEDS_LOOK = re.compile(r"[*_`|\\<&\]]")
_SPECIAL = re.compile(r"[`|\\<&\[\]]")


def _emphasis_marks(text: str, marks: set[int], before: str | None, after: str | None) -> None:
    for run in RUN.finditer(text):
        i, j = run.span()
        prev = text[i - 1] if i else before
        nxt = text[j] if j < len(text) else after
        if _emphasis(prev, nxt, text[i]):
            marks.update(range(i, j))


def inline_marks(
    text: str,
    marks: set[int],
    *,
    link_text: bool,
    pipes: bool = True,
    start: int = 0,
    stop: int | None = None,
) -> None:
    """Backticks, pipes, backslashes, `<`, `&` and brackets in text[start:stop] that would
    start something, judged with the characters that follow them (even past `stop`).

    Inside link text every bracket is escaped (an unbalanced one would end the text) and a
    pipe needs none outside a table.
    """
    n = len(text)
    for found in _SPECIAL.finditer(text, start, n if stop is None else stop):
        i = found.start()
        ch, nxt = text[i], text[i + 1] if i + 1 < n else ""
        if ch == "`":
            marks.add(i)
        elif ch == "|":
            if pipes and not link_text:
                marks.add(i)
        elif ch == "\\":
            if nxt in ("", "\n") or nxt in _ASCII_PUNCT:  # before a line break: a hard break
                marks.add(i)
        elif ch == "<":
            if nxt == "" or nxt in "/!?" or (nxt.isascii() and nxt.isalpha()):
                marks.add(i)
        elif ch == "&":
            if _ENTITY.match(text, i):
                marks.add(i)
        elif link_text or (ch == "]" and nxt in ("", "(")):  # a bracket
            marks.add(i)


def join(text: str, marks: set[int]) -> str:
    if not marks:
        return text
    out, last = [], 0
    for i in sorted(marks):
        out.append(text[last:i])
        out.append("\\")
        last = i
    out.append(text[last:])
    return "".join(out)


def is_plain(text: str) -> bool:
    """True when nothing in `text` could start Markdown syntax wherever it stands."""
    if _NEEDS_LOOK.search(text) or BLOCK_START.match(text):
        return False
    return not text[:1].isdigit() and not text.endswith("#")


def prose(value: Any) -> str:
    """Free text that renders as itself on one line, in a paragraph, list item or table cell
    (see the module docstring)."""
    text = one_line(value)
    if is_plain(text):
        return text  # most titles
    marks: set[int] = set()
    if text:
        if BLOCK_START.match(text):
            marks.add(0)
        ordered = ORDERED.match(text)
        if ordered:
            marks.add(ordered.start(1))
        closing = TRAILING_HASHES.search(text)
        if closing:  # in a heading, `#`s after a space at the end would close it and vanish
            marks.add(closing.start())
    _emphasis_marks(text, marks, None, None)
    inline_marks(text, marks, link_text=False)
    return join(text, marks)


def _code(text: str, cell: bool) -> str:
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # A code span drops one space from each end when both ends have one; a backtick at either
    # end would merge with the fence. One space of padding on each side keeps the text intact.
    pad = text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip(" "))
    inner = f" {text} " if pad else text
    if cell:
        inner = inner.replace("|", "\\|")
    return fence + inner + fence


def code(value: Any) -> str:
    """A code span showing the text verbatim (line breaks become spaces)."""
    return _code(flat(value), cell=False)


def code_cell(value: Any) -> str:
    return _code(flat(value), cell=True)


def is_web_url(text: str) -> bool:
    """An http(s) URL that can be a link: no whitespace, control characters, `<` or `>`."""
    return _HTTP.fullmatch(text) is not None


def _autolink_safe(url: str) -> bool:
    # markdown-it shows an autolink's text decoded (percent escapes, punycode hosts): only a
    # URL with neither shows as itself. Nothing is escaped inside an autolink.
    return url.isascii() and "%" not in url and "xn--" not in url.lower()


def _destination(url: str) -> str:
    out = []
    for i, ch in enumerate(url):
        if ch in "\\<>" or (ch == "&" and _ENTITY.match(url, i)):
            out.append("\\")
        out.append(ch)
    return "".join(out)


def _link_text(url: str) -> str:
    marks: set[int] = set()
    _emphasis_marks(url, marks, "[", "]")
    inline_marks(url, marks, link_text=True)
    return join(url, marks)


def _ref(value: Any, cell: bool) -> str:
    text = str(value).translate(_LINE_BREAKS)
    if not is_web_url(text):
        return _code(text, cell)
    out = f"<{text}>" if _autolink_safe(text) else f"[{_link_text(text)}](<{_destination(text)}>)"
    return out.replace("|", "\\|") if cell else out


def ref(value: Any) -> str:
    """An http(s) URL as a link to itself; anything else as a code span."""
    return _ref(value, cell=False)


def ref_cell(value: Any) -> str:
    return _ref(value, cell=True)


def fence(text: Any) -> str:
    """A code-block fence longer than any backtick run in `text` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", str(text))), default=0)
    return "`" * max(3, longest + 1)
