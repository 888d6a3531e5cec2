"""Markdown → HTML with markdown-it-py, cached by content (rendering is the costly part)."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use: a call that renders no Markdown skips ~20 ms
    from markdown_it import MarkdownIt


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # commonmark with raw HTML off: text from the ledger can never inject markup.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


@lru_cache(maxsize=65536)
def to_html(text: str) -> str:
    return _parser().render(text)
