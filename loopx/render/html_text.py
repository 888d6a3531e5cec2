"""Values on an HTML page that shows what a Markdown file of the build shows once rendered
(`html/review.html` beside `review.md`): the same normalisation the Markdown filters apply
(`md_context`, `md_escape`), then HTML escaping instead of Markdown escaping.

A prose value in Markdown is put on one line and shows verbatim once rendered (the escapes
are read back); a code span shows its text with line breaks as spaces; a renderer shows a
NUL as U+FFFD, and the Markdown filters replace their own marker characters with it. These
do the same, so the two files show the same text.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from loopx.render import md_escape
from loopx.render.changes import described
from loopx.render.md_context import clean


def _shown(value: Any) -> str:
    return clean(value).replace("\0", "\ufffd")


def line(value: Any) -> str:
    """Prose on one line, as a Markdown prose value shows (the page escapes it)."""
    return md_escape.one_line(_shown(value))


def code(value: Any) -> Markup:
    """An identifier or path as `<code>`, as a Markdown code span shows it (nothing for an
    empty value, which a code span cannot hold)."""
    text = md_escape.flat(_shown(value))
    return Markup(f"<code>{escape(text)}</code>") if text else Markup()


def change(change: dict[str, Any]) -> Markup:
    """A change from `loopx diff` as one line of HTML: ids as code, the rest as text (the
    same sentence `render.changes.change_markdown` writes in Markdown)."""
    return Markup(described(change, code, lambda value: escape(line(value))))
