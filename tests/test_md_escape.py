"""Ledger text into Markdown (loopx/render/md_escape.py): proved by rendering with markdown-it-py.

Every value, in every context a template puts it (a paragraph, a list item, a table cell, next
to template emphasis, beside other values on one line), renders back as the same text; ids and
paths come back as code spans; http(s) refs as links whose href and text are the ref; any other
scheme as code. And the escaping is minimal: identifiers an agent would grep for stay intact.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.render.md_escape import code, code_cell, fence, one_line, prose, ref, ref_cell
from tests.markdown_oracle import BUILD, STRICT, normalize, shown

HOSTILE = [
    "_visible_width",
    "test_wide.py",
    "is error_code a stable field?",
    "__init__.py",
    "a *b* c",
    "**bold**",
    "2*3*4",
    "snake_case_name_",
    "*",
    "_",
    "***",
    "---",
    "- - -",
    "___",
    "# heading",
    "#hashtag",
    "> quoted",
    "- item",
    "+ item",
    "1. first",
    "2024) year",
    "[x] task",
    "[label]: https://evil.example/",
    "see [the docs](https://x.example/a_b)",
    "![img](https://x.example/i.png)",
    "a | b | c",
    "<script>alert(1)</script>",
    "<https://autolink.example>",
    "a < b > c",
    "x &amp; y &#65; &copy;",
    "AT&T",
    "ends with a backslash \\",
    "C:\\Users\\me\\file_name.txt",
    "back\\*slash",
    "`code` and ``double``",
    "```",
    "~~~",
    "===",
    "line one\nline two\r\n\ttabbed",
    "non-ASCII: ünïcödé — 漢字 😀",
    "   padded   ",
    "(parens) [brackets] {braces}",
    "a_b*c_d*e",
    "*_*_*_",
    "\\",
    "&",
    "<",
    "]",
    "[",
]

PROSE_ALPHABET = st.sampled_from(list("ab _*`[]()<>|&#;\\!-+.1:/=~\n\t") + ["é", "字", "\xa0"])
PROSE = st.one_of(
    st.text(PROSE_ALPHABET, max_size=24),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=24),
)


def _line(value: str) -> str:
    return one_line(value)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_prose_renders_as_itself_in_every_context(value: str) -> None:
    _prose_contexts(value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROSE)
def test_generated_prose_renders_as_itself_in_every_context(value: str) -> None:
    _prose_contexts(value)


def _prose_contexts(value: str) -> None:
    want = _line(value)
    out = prose(value)
    assert "\n" not in out
    for parser in (BUILD, STRICT):
        para = shown(out + "\n", parser)
        assert para.texts == ([want] if want else []), out
        assert not para.html and not para.code and not para.links
        assert set(para.blocks) <= {"paragraph_open", "paragraph_close"}, out
        item = shown(f"- {out}\n", parser)
        assert item.texts == ([want] if want else []), out
        assert set(item.blocks) <= {
            "bullet_list_open",
            "bullet_list_close",
            "list_item_open",
            "list_item_close",
            "paragraph_open",
            "paragraph_close",
        }, out
        cell = shown(f"| a | b |\n|---|---|\n| {out} | x |\n", parser)
        assert cell.texts == ["a", "b", want, "x"], out
        heading = shown(f"# Title: {out}\n", parser)
        assert heading.texts == [f"Title: {want}".rstrip()], out
        mid = shown(f"**Objective:** {out}\n", parser)
        assert mid.texts == [f"Objective: {want}".rstrip()], out


@settings(max_examples=300, deadline=None)
@given(PROSE.filter(lambda v: _line(v)), PROSE.filter(lambda v: _line(v)), PROSE)
def test_values_side_by_side_never_pair_up(a: str, b: str, c: str) -> None:
    """Emphasis or links cannot form across two values or with the template's own `**`."""
    line = f"- {prose(a)}: **{prose(b)}** ({prose(c)})\n"
    result = shown(line)
    assert result.texts == [f"{_line(a)}: {_line(b)} ({_line(c)})"], line
    tokens = [t for t in STRICT.parse(line) if t.type == "inline"][0].children or []
    types = [t.type for t in tokens]
    assert types.count("strong_open") == 1 and "em_open" not in types, line
    inner = types.index("strong_open"), types.index("strong_close")
    bold = "".join(t.content for t in tokens[inner[0] + 1 : inner[1]])
    assert bold == _line(b), line
    assert "link_open" not in types


def test_identifiers_stay_verbatim_in_prose() -> None:
    """What the issue saw escaped needs no escape in CommonMark: intra-word underscores."""
    for text in ("is error_code a stable field?", "tests/test_wide.py", "snake_case_name"):
        assert prose(text) == text
    assert prose("a * b") == "a * b"  # a lone star between spaces emphasises nothing
    assert prose("__init__.py") == "\\_\\_init\\_\\_.py"  # would be bold: escaped
    assert prose("a | b") == "a \\| b"
    assert prose("<b>") == "\\<b>"
    assert prose("a < b") == "a < b"


@pytest.mark.parametrize(
    "value",
    [
        "loopx/engine/handoff.py",
        "_visible_width",
        "a`b",
        "`leading",
        "trailing`",
        "``double`` run",
        "` both `",
        " spaced ",
        "pipe|in|it",
        "back\\slash|pipe",
        "<>&*_[]()#",
        "ünï 漢字",
    ],
)
def test_code_spans_keep_the_text(value: str) -> None:
    _code_contexts(value)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("ab `|\\_*<> ")), min_size=1, max_size=16))
def test_generated_code_spans_keep_the_text(value: str) -> None:
    _code_contexts(value)


def _code_contexts(value: str) -> None:
    if not value.strip(" "):
        return  # an all-space code span is not shown as code; no id or path is blank
    span = code(value)
    assert shown(f"see {span} here\n").code == [value], span
    assert shown(f"- {span}: title\n").code == [value], span
    cell = shown(f"| a |\n|---|\n| {code_cell(value)} |\n")
    assert cell.code == [value], code_cell(value)


def test_code_spans_use_a_longer_fence_and_pad_only_when_needed() -> None:
    assert code("todo_a") == "`todo_a`"
    assert code("a`b") == "``a`b``"
    assert code("`x") == "`` `x ``"
    assert code("a``b") == "```a``b```"
    assert code_cell("a|b") == "`a\\|b`"
    assert fence("echo `x` ```y```") == "````"
    assert fence("plain") == "```"


URLS = [
    "https://github.com/acme/my_repo/pull/1",
    "https://example.com/wiki/Foo_(bar)",
    "http://example.com/a*b*c",
    "https://example.com/search?q=a%20b&x=1",
    "https://例え.jp/パス",
    "https://example.com/[brackets]",
    "https://example.com/back\\slash",
    "https://example.com/a|b",
    "HTTPS://EXAMPLE.COM/UPPER",
    "https://xn--r8jz45g.jp/",
    "https://example.com/&amp;",
    "https://example.com/`tick`",
]


@pytest.mark.parametrize("url", URLS)
def test_web_refs_link_to_themselves(url: str) -> None:
    _ref_contexts(url)


def test_a_ref_with_an_underscore_is_an_autolink_with_the_exact_href() -> None:
    url = "https://github.com/acme/my_repo/pull/1"
    assert ref(url) == f"<{url}>"
    assert shown(f"- {ref(url)}\n").links == [(url, url)]


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("a_-.~()[]*`|\\%&;#?=/:") + ["é", "字"]), max_size=20))
def test_generated_web_refs_link_to_themselves(path: str) -> None:
    _ref_contexts("https://example.com/" + path)


def _ref_contexts(url: str) -> None:
    for rendered in (f"- {ref(url)}\n", f"| a |\n|---|\n| {ref_cell(url)} |\n"):
        result = shown(rendered)
        assert result.links == [(normalize(url), url)], rendered
        assert not result.html
    if url.isascii() and all(c.isalnum() or c in "-._~:/?#@!$&'()*+,;=" for c in url):
        # nothing to percent-encode: the href is the ref, byte for byte
        assert shown(ref(url) + "\n").links[0][0] == url


@pytest.mark.parametrize(
    "value",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "sha256:" + "ab" * 32,
        "ftp://example.com/x_y",
        "see PR 12",
        "https://example.com/with space",
        "https://example.com/<tag>",
        "https://",
        "mailto:me@example.com",
    ],
)
def test_other_refs_are_code_never_links(value: str) -> None:
    for rendered in (f"- {ref(value)}\n", f"| a |\n|---|\n| {ref_cell(value)} |\n"):
        result = shown(rendered)
        assert result.links == [] and not result.html, rendered
        assert result.code == [value], rendered
