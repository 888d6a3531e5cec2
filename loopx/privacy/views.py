"""Decoded views of text: what the boundary scanner reads besides the raw bytes.

A secret can hide behind an escape: JSON string escapes, HTML character references, Mermaid
entity codes (``#quot;``), URL percent-encoding (``%255F`` is URL encoding twice), base64 runs
that decode to text, and Unicode compatibility forms (fullwidth ``ｇｈｐ＿`` is ``ghp_``; a
U+200B inside a token hides it from a regex). `views` yields the raw text, each decoding that
changes it, and decodings of those, chained up to `MAX_DEPTH` deep. Each view keeps a map back
to the raw text, built only when a finding needs it, so a finding always points at the raw line
and column.

Decodings are tried only where a cheap test says they can change something: base64 only where
the encoded form of a rule anchor occurs, Unicode only where NFKC or dropping a format character
would change the text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import ahocorasick_rs

from loopx.privacy.rules import RULES

#: Encodings in the order views are scanned; the first that finds a place is reported.
#: A chained view is named by its steps joined with ``+`` (``url+url``, ``json+unicode``).
ENCODINGS = ("plain", "json", "html", "mermaid", "url", "base64", "unicode")

#: How many decodings may be chained to reach a view.
MAX_DEPTH = 3


class View:
    """Text as seen through one or more decodings, with a map from its positions back to the raw
    text (through `parent` for a chained view).

    The map is built only when a finding needs it: most views find nothing.
    """

    __slots__ = ("encoding", "text", "depth", "_raw", "_decoder", "_map", "_parent")

    def __init__(
        self,
        encoding: str,
        text: str,
        raw: str = "",
        decoder: _Decoder | None = None,
        parent: View | None = None,
        depth: int = 0,
    ):
        self.encoding = encoding
        self.text = text
        self.depth = depth  # how many decodings led here (0: the raw text)
        self._raw = raw
        self._decoder = decoder
        self._map: tuple[list[int], list[int], list[int], list[int]] | None = None
        self._parent = parent

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span that decodes to view[start:end] (escapes cut in half are widened)."""
        if self._decoder is None:
            return start, end
        span = self._to_raw(start, at_end=False), self._to_raw(max(start, end - 1), at_end=True)
        return span if self._parent is None else self._parent.raw_span(*span)

    def _to_raw(self, pos: int, *, at_end: bool) -> int:
        if self._map is None:
            self._map = self._build_map()
        vstarts, vends, rstarts, rends = self._map
        i = bisect_right(vstarts, pos) - 1
        if i < 0:
            return pos + 1 if at_end else pos
        if pos < vends[i]:
            return rends[i] if at_end else rstarts[i]
        raw = rends[i] + pos - vends[i]
        return raw + 1 if at_end else raw

    def _build_map(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """Where each decoded escape starts and ends, in the view and in the raw text."""
        assert self._decoder is not None
        vstarts: list[int] = []
        vends: list[int] = []
        rstarts: list[int] = []
        rends: list[int] = []
        shift = 0  # view position minus raw position
        replace = self._decoder.replace
        for match in self._decoder.pattern.finditer(self._raw):
            token = match.group()
            decoded = replace(token)
            if decoded == token:
                continue
            start, end = match.span()
            vstarts.append(start + shift)
            rstarts.append(start)
            shift += len(decoded) - (end - start)
            vends.append(end + shift)
            rends.append(end)
        return vstarts, vends, rstarts, rends


class _Decoder:
    """One escape syntax: the regex of one escape and its (cached) decoding."""

    def __init__(self, encoding: str, pattern: str, replace: Callable[[str], str]) -> None:
        self.encoding = encoding
        self.pattern = re.compile(pattern)
        self.replace = lru_cache(maxsize=4096)(replace)

    def _sub(self, match: re.Match[str]) -> str:
        return self.replace(match.group())

    def view(self, parent: View) -> View | None:
        """`parent`'s text with every escape decoded; None when nothing changed."""
        raw = parent.text
        text = self.pattern.sub(self._sub, raw)
        if text == raw:
            return None
        if parent.depth == 0:
            return View(self.encoding, text, raw, self, depth=1)
        encoding = f"{parent.encoding}+{self.encoding}"
        return View(encoding, text, raw, self, parent, depth=parent.depth + 1)


_JSON_SIMPLE = {
    '\\"': '"',
    "\\\\": "\\",
    "\\/": "/",
    "\\b": "\b",
    "\\f": "\f",
    "\\n": "\n",
    "\\r": "\r",
    "\\t": "\t",
}


def _json_unescape(token: str) -> str:
    simple = _JSON_SIMPLE.get(token)
    if simple is not None:
        return simple
    code = int(token[2:6], 16)
    if len(token) == 12:  # a surrogate pair
        low = int(token[8:12], 16)
        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)


def _url_unescape(token: str) -> str:
    if token == "+":
        return " "
    return bytes.fromhex(token.replace("%", "")).decode("utf-8", errors="replace")


# One percent-encoded character: ASCII, a whole UTF-8 sequence, or a stray byte.
_PERCENT = (
    r"%[0-7][0-9a-fA-F]"
    r"|%[cCdD][0-9a-fA-F]%[89abAB][0-9a-fA-F]"
    r"|%[eE][0-9a-fA-F](?:%[89abAB][0-9a-fA-F]){2}"
    r"|%[fF][0-7](?:%[89abAB][0-9a-fA-F]){3}"
    r"|%[0-9a-fA-F]{2}"
)
_JSON = _Decoder(
    "json",
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}"
    r"|\\[\"\\/bfnrt]",
    _json_unescape,
)
_HTML = _Decoder(
    "html",
    r"&(?:#[0-9]{1,8};?|#[xX][0-9a-fA-F]{1,8};?|[A-Za-z][A-Za-z0-9]{1,31};?)",
    html.unescape,
)
_URL = _Decoder("url", _PERCENT, _url_unescape)
_URL_PLUS = _Decoder("url", r"\+|" + _PERCENT, _url_unescape)  # form encoding: '+' is a space
_JOINED_BY_PLUS = re.compile(r"[^\s+]\+[^\s+]")  # words joined by '+': maybe form-encoded

# Mermaid labels (loopx.render.graph) write `"`, `<`, `>` and `&` as named entity codes.
_MERMAID_NAMED = {"#quot;": '"', "#lt;": "<", "#gt;": ">", "#amp;": "&"}


def _mermaid_unescape(token: str) -> str:
    return _MERMAID_NAMED.get(token, token)


_MERMAID = _Decoder("mermaid", r"(?<!&)#(?:quot|lt|gt|amp);", _mermaid_unescape)
# Whether any of those codes occurs: one pass that stops only at a '#', where four substring
# tests of a page cost six times as much (a page is full of '#').
_MERMAID_HINT = re.compile(r"#(?:quot|lt|gt|amp);")


def _base64_text(token: str) -> str:
    """The text a base64 run stands for, when it is printable text; else the run itself."""
    body = token.rstrip("=")
    if len(body) % 4 == 1 or _HEX_RUN.fullmatch(body):
        return token  # not base64 of anything, or a hash / revision
    padded = body + "=" * (-len(body) % 4)
    try:
        data = (
            base64.urlsafe_b64decode(padded)
            if "-" in body or "_" in body
            else base64.b64decode(padded, validate=True)
        )
    except (binascii.Error, ValueError):
        return token
    if len(data) < 16 or not all(32 <= b < 127 for b in data):
        return token
    return data.decode("ascii")


# A run long enough to hold a token (16+ bytes), with both letters and digits or case (hex ids
# and words rarely decode to printable text and are left as they are).
# Greedy runs are maximal, so no look-around is needed (it would cost a check per character).
_BASE64 = _Decoder("base64", r"[A-Za-z0-9+/_-]{24,4096}={0,2}", _base64_text)
_HEX_RUN = re.compile(r"[0-9a-fA-F]+")


def _unicode_fold(char: str) -> str:
    if unicodedata.category(char) == "Cf":
        return ""  # zero-width space/joiner, soft hyphen, word joiner, bidi marks
    return unicodedata.normalize("NFKC", char)


_UNICODE = _Decoder("unicode", r"[^\x00-\x7f]", _unicode_fold)
# Every format character (category Cf, Unicode 15), which NFKC keeps: soft hyphen, zero-width
# and bidi marks, word joiners, BOM, tags; a test checks the class against `unicodedata`.
_FORMAT = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)


_ASCII = bytes(range(128))


def _unicode_hint(text: str) -> bool:
    """Whether NFKC or dropping format characters would change `text` (every check in C).
    Format characters are none of them ASCII, so they are looked for among the text's
    other characters only: its UTF-8 less every ASCII byte (each other character's bytes
    are all >= 0x80) is those characters in order, a few on a page (its `·` and `›`). A
    regex over the whole text took 29 ms for a build's 6 MB of public pages, this 8 ms."""
    if not unicodedata.is_normalized("NFKC", text):
        return True
    others = text.encode("utf-8", "surrogatepass").translate(None, _ASCII)
    return _FORMAT.search(others.decode("utf-8", "surrogatepass")) is not None


# What may follow each decoding in a chain: an escape can hide inside another (`%255F` is URL
# twice; a JSON string holds HTML; a page holds Mermaid), and any of them can hide fullwidth or
# zero-width characters. Base64 is decoded only where it sits in the raw text (JSON escapes
# nothing of its alphabet but `/`).
_NEXT: dict[str, tuple[str, ...]] = {
    "plain": ("json", "html", "mermaid", "url", "base64", "unicode"),
    "json": ("html", "url", "unicode"),
    "html": ("mermaid", "unicode"),
    "url": ("url", "unicode"),
    "mermaid": ("unicode",),
    "base64": (),
    "unicode": (),
}


def _decoders(text: str, allowed: tuple[str, ...], base64: bool | None = None) -> list[_Decoder]:
    """The decodings in `allowed` that could change `text` (cheap tests first); `base64` says
    whether an encoded anchor occurs, when the caller already knows."""
    found = []
    if "json" in allowed and "\\" in text:
        found.append(_JSON)
    if "html" in allowed and "&" in text:
        found.append(_HTML)
    if "mermaid" in allowed and _MERMAID_HINT.search(text) is not None:
        found.append(_MERMAID)
    if "url" in allowed and "%" in text:
        found.append(_URL)
        if "+" in text:
            found.append(_URL_PLUS)
    elif "url" in allowed and "+" in text and _JOINED_BY_PLUS.search(text):
        found.append(_URL_PLUS)
    if "base64" in allowed and (_base64_hint(text) if base64 is None else base64):
        found.append(_BASE64)
    if "unicode" in allowed and not text.isascii() and _unicode_hint(text):
        found.append(_UNICODE)
    return found


# Base64 is decoded only where the encoded form of a rule anchor (a token prefix such as
# `ghp_`, a keyword such as `password`) occurs: whatever alignment the anchor had in the
# encoded bytes, some of its base64 characters are fixed. One automaton pass finds them, so
# text without them (nearly all of it) pays no regex pass over every run of letters.
_URLSAFE = str.maketrans("+/", "-_")


def _encoded_segments(word: bytes) -> set[str]:
    """The base64 characters fixed by `word` at each of the three byte alignments."""
    found = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\x00" * shift + word + b"\x00\x00\x00").decode()
        first = -(-8 * shift // 6)  # the first sextet made of `word`'s bits only
        last = 8 * (shift + len(word)) // 6
        segment = encoded[first:last]
        if len(segment) >= 5:
            found.update({segment, segment.translate(_URLSAFE)})
    return found


@lru_cache(maxsize=1)
def base64_segments() -> tuple[str, ...]:
    """The encoded forms of every rule anchor of four or more characters: those of the table
    worked out ahead (`loopx.privacy.b64table`, ~0.02 s a process less) when it was made from
    these very anchors, else worked out now."""
    words = _anchor_words()
    from loopx.privacy import b64table

    if anchors_digest(words) == b64table.WORDS:
        return tuple(b64table.SEGMENTS.split())
    return segments_of(words)


def _anchor_words() -> list[str]:
    return sorted({a for rule in RULES for a in rule.anchors if len(a) >= 4 and a.isascii()})


def anchors_digest(words: list[str]) -> str:
    """What the table is keyed by: a digest of the anchor words it was made from."""
    return hashlib.sha256("\n".join(words).encode()).hexdigest()


def segments_of(words: list[str]) -> tuple[str, ...]:
    """The base64 segments of `words`, worked out."""
    return tuple(sorted({s for w in words for s in _encoded_segments(w.encode())}))


def table_source() -> str:
    """The text of `loopx/privacy/b64table.py` for the rules as they are (its test says
    when it is out of date: `python -c "from loopx.privacy.views import table_source as t;
    print(t(), end='')" > loopx/privacy/b64table.py`)."""
    import textwrap  # only here: a tool's, never a scan's (an import a process spares)

    words = _anchor_words()
    lines = textwrap.wrap(" ".join(segments_of(words)), 88, break_on_hyphens=False)
    body = "\n".join(f'    "{line} "' for line in lines)  # joined, the spaces stay
    return (
        '"""The base64 segments of the rule anchors (`loopx.privacy.views.base64_segments`),\n'
        "worked out ahead; used only while `WORDS` is the digest of the anchor words they were\n"
        'made from. Generated by `loopx.privacy.views.table_source`: do not edit."""\n\n'
        f'WORDS = "{anchors_digest(words)}"\n'
        f"SEGMENTS = (\n{body}\n)\n"
    )


@lru_cache(maxsize=1)
def _base64_anchors() -> Any:
    return ahocorasick_rs.AhoCorasick(  # an NFA: as quick to search, far quicker to build
        list(base64_segments()), implementation=ahocorasick_rs.Implementation.ContiguousNFA
    )


def _base64_hint(text: str) -> bool:
    try:
        return bool(_base64_anchors().find_matches_as_indexes(text))
    except UnicodeEncodeError:
        return True


def views(text: str, base64: bool | None = None) -> Iterator[View]:
    """The raw text, then each decoding of it that differs from it, then decodings of those
    (breadth first, up to `MAX_DEPTH` steps; a text reached twice is scanned once). `base64`:
    whether the raw text holds an encoded anchor, when the caller's scan already found out."""
    root = View("plain", text)
    seen = {text}
    queue = [root]
    for view in queue:
        if view.depth >= MAX_DEPTH:
            continue
        last = view.encoding.rsplit("+", 1)[-1]
        hint = base64 if view is root else None
        for decoder in _decoders(view.text, _NEXT[last], hint):
            child = decoder.view(view)
            if child is None:
                continue
            if child.text not in seen:
                seen.add(child.text)
                queue.append(child)
    yield from queue
