"""Ledger text into Markdown that renders as the same text: prose, code spans, links.

Three ways a value reaches a Markdown projection:

- `prose`: free text. Only what would change the rendering is backslash-escaped (CommonMark
  with tables, as `render.markdown` parses it): a leading `#`, `>`, list or ordered-list
  marker, thematic break or fence; `*`/`_` runs that could open or close emphasis (an
  intra-word underscore cannot, so `error_code` stays as it is); backticks; `[` at the start
  and `]` before `(` (links, reference definitions, task boxes); `<` that could start HTML or
  an autolink; `&` that would start an entity; backslashes before punctuation or at the end;
  `|` (it would end a table cell). Line breaks become spaces: every value sits on one line.
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
_SPACES = frozenset("\t\n\v\f\r \xa0\u1680\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)
}
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HTTP = re.compile(r"https?://[^\x00-\x20\x7f<>]+", re.IGNORECASE)
_BLOCK_START = re.compile(
    r"#{1,6}(?:\s|$)|>|[-+*](?:\s|$)|~{3,}|\[|=+\s*$|([-*_])(?:[ \t]*\1){2,}[ \t]*$"
)
_ORDERED = re.compile(r"\d{1,9}([.)])(?:\s|$)")


def one_line(value: Any) -> str:
    """The text on one line: line breaks and tabs as spaces, no surrounding whitespace."""
    return str(value).translate(_LINE_BREAKS).strip()


def _punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith(("P", "S"))


def _emphasis(before: str | None, after: str | None, marker: str) -> bool:
    """True when a `marker` run between `before` and `after` could open or close emphasis.

    An unknown neighbour (None: the run touches the end of the value, next to template text)
    counts as a possible partner, so the run is escaped.
    """
    if before is None or after is None:
        return True
    space_before, space_after = before in _SPACES, after in _SPACES
    punct_before, punct_after = _punct(before), _punct(after)
    left = not space_after and (not punct_after or space_before or punct_before)
    right = not space_before and (not punct_before or space_after or punct_after)
    if marker == "*":
        return left or right
    return (left and (not right or punct_before)) or (right and (not left or punct_after))


_RUN = re.compile(r"\*+|_+")
_NEEDS_LOOK = re.compile(r"[*_`|\\<&\]]")
_SPECIAL = re.compile(r"[`|\\<&\[\]]")


def _emphasis_marks(text: str, marks: set[int], before: str | None, after: str | None) -> None:
    for run in _RUN.finditer(text):
        i, j = run.span()
        prev = text[i - 1] if i else before
        nxt = text[j] if j < len(text) else after
        if _emphasis(prev, nxt, text[i]):
            marks.update(range(i, j))


def _inline_marks(text: str, marks: set[int], *, link_text: bool) -> None:
    """Backticks, pipes, backslashes, `<`, `&` and brackets that would start something.

    Inside link text every bracket is escaped (an unbalanced one would end the text) and a
    pipe needs none outside a table.
    """
    n = len(text)
    for found in _SPECIAL.finditer(text):
        i = found.start()
        ch, nxt = text[i], text[i + 1] if i + 1 < n else ""
        if ch == "`" or (ch == "|" and not link_text):
            marks.add(i)
        elif ch == "\\":
            if nxt == "" or nxt in _ASCII_PUNCT:
                marks.add(i)
        elif ch == "<":
            if nxt == "" or nxt in "/!?" or (nxt.isascii() and nxt.isalpha()):
                marks.add(i)
        elif ch == "&":
            if _ENTITY.match(text, i):
                marks.add(i)
        elif link_text or (ch == "]" and nxt in ("", "(")):
            marks.add(i)


def _join(text: str, marks: set[int]) -> str:
    if not marks:
        return text
    out, last = [], 0
    for i in sorted(marks):
        out.append(text[last:i])
        out.append("\\")
        last = i
    out.append(text[last:])
    return "".join(out)


def prose(value: Any) -> str:
    """Free text that renders as itself on one line, in a paragraph, list item or table cell
    (see the module docstring)."""
    text = one_line(value)
    if not _NEEDS_LOOK.search(text) and not _BLOCK_START.match(text) and not text[:1].isdigit():
        return text  # most titles: nothing that could start Markdown syntax
    marks: set[int] = set()
    if text:
        if _BLOCK_START.match(text):
            marks.add(0)
        ordered = _ORDERED.match(text)
        if ordered:
            marks.add(ordered.start(1))
    _emphasis_marks(text, marks, None, None)
    _inline_marks(text, marks, link_text=False)
    return _join(text, marks)


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
    return _code(str(value).translate(_LINE_BREAKS), cell=False)


def code_cell(value: Any) -> str:
    return _code(str(value).translate(_LINE_BREAKS), cell=True)


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
    _inline_marks(url, marks, link_text=True)
    return _join(url, marks)


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
