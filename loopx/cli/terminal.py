"""Text for a terminal: no byte of a ledger, an import or a checkout can drive it.

Every value loopx prints in text mode may come from an untrusted source, and a terminal
obeys what it is sent: ESC starts colour, cursor moves and OSC sequences (window titles,
hyperlinks, on some terminals clipboard writes), CR and backspace overwrite what is on
screen, bidi overrides reorder it, and a newline inside a title would look like a row of
its own. So text output goes through two functions:

- `field()`: a value inside a record — every control character, newline included, and
  every bidi control becomes a visible escape (`\\n`, `\\x1b`, `\\u202e`), so a record stays on
  its line;
- `document()`: a whole output (records joined by newlines, a Markdown document) — the
  same, but newlines and tabs are kept as layout.
"""

from __future__ import annotations

import os
import re
from typing import IO, Any

# C0 (but for the two a document keeps), DEL, C1, the bidi embeddings, overrides and
# isolates, the marks that steer them, and the Unicode line and paragraph separators.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# The two patterns, compiled on first use: most values are printable text, which holds none
# of these characters (every one of them is unprintable), and a JSON call compiles neither.
_PATTERNS: dict[bool, re.Pattern[str]] = {}


def _unsafe(in_field: bool) -> re.Pattern[str]:
    found = _PATTERNS.get(in_field)
    if found is None:
        found = _PATTERNS[in_field] = re.compile(f"[{_UNSAFE}\t\n]" if in_field else f"[{_UNSAFE}]")
    return found


def field(value: str) -> str:
    """`value` on one line with nothing a terminal would act on."""
    if value.isprintable():
        return value
    pattern = _unsafe(True)
    return pattern.sub(_escape, value) if pattern.search(value) else value


def document(text: str) -> str:
    """`text` with its lines kept and nothing else a terminal would act on."""
    if text.isprintable():
        return text
    pattern = _unsafe(False)
    return pattern.sub(_escape, text) if pattern.search(text) else text


def fields_in_place(data: Any) -> None:
    """Apply `field()` to every string value inside `data` (dicts and lists, in place)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            pairs: Any = item.items()
        elif isinstance(item, list):
            pairs = enumerate(item)
        else:
            continue
        for key, value in list(pairs):
            if isinstance(value, str):
                safe = field(value)
                if safe is not value:
                    item[key] = safe
            elif isinstance(value, dict | list):
                stack.append(value)


def paint(text: str, stream: IO[str] | None = None, **style: Any) -> str:
    """`text` styled (click.style) when `stream` is a terminal and NO_COLOR is unset."""
    if os.environ.get("NO_COLOR") is not None:
        return text
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        tty = False
    if not tty:
        return text
    import click  # only on a terminal

    return click.style(text, **style)
