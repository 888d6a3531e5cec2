"""Escaping with the whole block in view (loopx/render/md_context.py), proved with markdown-it-py.

Values are marked by the filters, composed with template syntax (list items, bold, headings,
tables, several values on one line and across lines), resolved by `finish` and parsed back: each
value shows as written, the template's own structure survives, and escapes appear only where
the value's text would otherwise change the rendering.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.render.md_context import code, code_cell, finish, prose, ref
from loopx.render.md_escape import one_line
from tests.markdown_oracle import STRICT, shown

VALUE = st.text(
    st.sampled_from(list("ab _*`[]()<>|&#;\\!-+.1:/=~\n") + ["é", "\ufdd0"]),
    min_size=1,
    max_size=14,
).filter(lambda v: one_line(v).replace("\ufdd0", "") != "")
IDENT = st.text(st.sampled_from(list("ab_*`|.-")), min_size=1, max_size=8).filter(
    lambda v: v.strip(" ") != ""
)


def _shown(value: str) -> str:
    return one_line(value).replace("\ufdd0", "\ufffd")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUE, VALUE, VALUE, VALUE, VALUE, VALUE, IDENT, IDENT)
def test_a_document_of_values_renders_each_as_written(
    a: str, b: str, c: str, d: str, e: str, f: str, ident: str, cell: str
) -> None:
    doc = finish(
        f"# Title: {prose(a)}\n\n"
        f"**Objective:** {prose(b)}\n\n"
        f"- {prose(a)}: **{prose(b)}** ({prose(c)})\n"
        f"- {code(ident)} **open** p2: {prose(d)}\n"
        f"1. {prose(e)}\n"
        f"2. {prose(f)}\n\n"
        f"{prose(c)}\n{prose(a)}\n\n"
        f"Before the table: {prose(f)}\n"
        f"| x | y | z |\n|---|---|---|\n| {prose(d)} | {code_cell(cell)} | {prose(a)} |\n\n"
        f"> From {code(ident)}: {prose(e)}\n"
    )
    result = shown(doc)
    want = [
        f"Title: {_shown(a)}",
        f"Objective: {_shown(b)}",
        f"{_shown(a)}: {_shown(b)} ({_shown(c)})",
        f"{ident} open p2: {_shown(d)}",
        _shown(e),
        _shown(f),
        f"{_shown(c)}\n{_shown(a)}",
        f"Before the table: {_shown(f)}",
        "x",
        "y",
        "z",
        _shown(d),
        cell,
        _shown(a),
        f"From {ident}: {_shown(e)}",
    ]
    assert result.texts == want, doc
    assert not result.html and not result.links, doc
    assert result.code == [ident, cell, ident], doc
    assert result.blocks.count("blockquote_open") == 1, doc
    assert result.blocks.count("heading_open") == 1, doc
    assert result.blocks.count("bullet_list_open") == 1, doc
    assert result.blocks.count("ordered_list_open") == 1, doc
    assert result.blocks.count("table_open") == 1, doc
    item = [t for t in STRICT.parse(doc) if t.type == "inline"][2].children or []
    types = [t.type for t in item]
    assert types.count("strong_open") == 1 and "em_open" not in types, doc
    first, last = types.index("strong_open"), types.index("strong_close")
    assert "".join(t.content for t in item[first + 1 : last]) == _shown(b), doc


def test_only_what_could_pair_is_escaped() -> None:
    assert finish(f"- {prose('Fix _visible_width in test_wide.py')}\n") == (
        "- Fix _visible_width in test_wide.py\n"
    )
    assert finish(f"{prose('2*3 = 6')}\n") == "2*3 = 6\n"  # a lone star pairs with nothing
    assert finish(f"{prose('see *notes*')}\n") == "see \\*notes\\*\n"
    assert finish(f"- {prose('_a')}: {prose('b_')}\n") == "- \\_a: b\\_\n"  # across values
    assert finish(f"**{prose('*x')}**\n") == "**\\*x**\n"  # glued to the template's bold
    # Lines of one paragraph are one context; "2." does not start a list after a paragraph.
    assert finish(f"{prose('_a')}\n{prose('b_')}\n") == "\\_a\nb\\_\n"
    assert finish(f"{prose('_a')}\n2. {prose('b_')}\n") == "\\_a\n2. b\\_\n"
    # Emphasis cannot pair across list items: each stays as written.
    assert finish(f"- {prose('_a')}\n- {prose('b_')}\n") == "- _a\n- b_\n"
    # A pipe only needs an escape in a table, where it would end the cell.
    assert finish(f"- {prose('a | b')}\n") == "- a | b\n"
    assert finish(f"| x |\n|---|\n| {prose('a | b')} |\n") == "| x |\n|---|\n| a \\| b |\n"
    # Block syntax only where the value starts a line.
    assert finish(f"- {prose('# x')}\n") == "- \\# x\n"
    assert finish(f"Title: {prose('# x')}\n") == "Title: # x\n"
    assert finish(f"| {prose('1. x')} |\n") == "| 1. x |\n"
    assert finish(f"{prose('1. x')}\n") == "1\\. x\n"
    # A value's backslash at the end of a line would be a hard break.
    assert finish(f"{prose('a')} {prose('b')}\n{prose('c')}\n")  # (smoke: joined lines)
    assert finish(f"x {prose('end' + chr(92))}\nnext\n") == "x end\\\\\nnext\n"


def test_a_run_escaped_in_part_is_escaped_whole() -> None:
    # "***" on a line of its own is a thematic break, so its first star needs an escape; the
    # two stars left after it then close an earlier "*1" unless they are escaped too (a
    # hypothesis example: the paragraph rendered as emphasis).
    doc = finish(f"{prose('*1')}\n{prose('***')}\n")
    assert doc == "*1\n\\*\\*\\*\n"
    assert shown(doc).texts == ["*1\n***"]


def test_code_and_links_are_opaque_to_emphasis() -> None:
    """Runs inside code spans and links never pair with a value's."""
    doc = finish(f"- {code('todo_a')} {prose('b_')} {ref('https://x.example/a_b')}\n")
    assert doc == "- `todo_a` b_ <https://x.example/a_b>\n"


def test_marker_characters_in_values_are_replaced() -> None:
    assert finish(f"{prose('a' + chr(0xFDD0) + 'b')}\n") == "a\ufffdb\n"
    assert finish(f"{code('a' + chr(0xFDD3))}\n") == "`a\ufffd`\n"
