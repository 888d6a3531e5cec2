"""What a Markdown document shows once rendered, read back from markdown-it-py's tokens.

The oracle for the round-trip tests: the code spans, links (href and text) and the plain text
of every inline run, from the parser the build uses (commonmark + tables) and from a stricter
one with raw HTML on (as GitHub renders it), where an unescaped `<tag>` would vanish into
markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

BUILD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
STRICT = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table")


@dataclass
class Shown:
    code: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (href, text)
    texts: list[str] = field(default_factory=list)  # plain text of each inline run
    html: list[str] = field(default_factory=list)  # raw HTML that would pass through
    blocks: list[str] = field(default_factory=list)  # block token types, in order

    def has_text(self, value: str) -> bool:
        return any(value in t for t in self.texts)

    def has_link(self, url: str) -> bool:
        return (normalize(url), url) in self.links


def normalize(url: str) -> str:
    """The href markdown-it writes for `url` (percent-encoding what a URL may not hold)."""
    return str(BUILD.normalizeLink(url))


def _inline(token: Token, shown: Shown) -> str:
    out: list[str] = []
    link: tuple[str, list[str]] | None = None
    for child in token.children or []:
        piece = ""
        if child.type in ("text", "code_inline"):
            piece = child.content
            if child.type == "code_inline":
                shown.code.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            piece = "\n"
        elif child.type == "html_inline":
            shown.html.append(child.content)
        elif child.type == "image":
            piece = "\x00image\x00"
        elif child.type == "link_open":
            link = (str(child.attrGet("href")), [])
        elif child.type == "link_close" and link is not None:
            shown.links.append((link[0], "".join(link[1])))
            link = None
        if link is not None:
            link[1].append(piece)
        out.append(piece)
    return "".join(out)


def shown(markdown: str, parser: MarkdownIt = STRICT) -> Shown:
    result = Shown()
    for token in parser.parse(markdown):
        if token.type == "inline":
            result.texts.append(_inline(token, result))
        else:
            result.blocks.append(token.type)
            if token.type == "html_block":
                result.html.append(token.content)
            if token.type in ("fence", "code_block"):
                result.texts.append(token.content)
    return result
