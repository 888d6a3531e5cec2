"""The one Jinja2 environment: templates from `templates/`, StrictUndefined, autoescaping for
HTML, and every filter registered here."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from loopx.render import html_text, md_context, md_escape
from loopx.render.changes import change_markdown
from loopx.resources import resource_dir


def _short(value: Any, width: int = 10) -> str:
    return str(value)[:width] if value else "-"


def _ticks(value: Any) -> Markup:
    """Plain text whose `backticked` parts are identifiers: escaped, those parts as <code>."""
    import re

    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(str(value)))))


def _when(value: Any) -> str:
    """A ledger timestamp for people: `2026-03-01 12:00 UTC` (the ledger's own time, so the
    page stays deterministic)."""
    text = str(value or "")
    if len(text) < 16 or text[10] != "T":
        return text or "-"
    return f"{text[:10]} {text[11:16]} UTC"


def _time(value: Any) -> Markup:
    """A ledger timestamp as a `<time>` element for people (`_when`), `–` when unset: what
    every page shows of a date (`parts.when` is this; a todo page calls it directly, as a
    macro call costs a page as much as a dozen fields)."""
    if not value:
        return Markup("–")
    if type(value) is str:  # a ledger time: escaped as `Markup.format` escapes it, without
        # its Python-level formatter (a third of a todo page's escaping cost)
        return Markup(f'<time datetime="{escape(value)}">{escape(_when(value))}</time>')
    return Markup('<time datetime="{}">{}</time>').format(value, _when(value))


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2.html", "svg", "xml")),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # The templates are the installed package's: a build asks for one per page, and
        # checking its file's time on every ask costs a build ~25,000 stat calls.
        auto_reload=False,
        # Compiled templates are cached per user (keyed by source checksum): compiling
        # costs a CLI process ~50 ms per template, loading the cached code ~1 ms.
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )
    # Markdown: `md` for prose, `code` for identifiers and paths, `ref` for references (a link
    # only for http/https); the `_cell` forms inside tables; `fence` for code blocks. They mark
    # what they return; `render` escapes the prose once the whole document is known.
    env.filters["md"] = md_context.prose
    env.filters["code"] = md_context.code
    env.filters["code_cell"] = md_context.code_cell
    env.filters["ref"] = md_context.ref
    env.filters["ref_cell"] = md_context.ref_cell
    env.filters["fence"] = md_escape.fence
    env.filters["one_line"] = md_escape.one_line
    env.filters["change_md"] = change_markdown
    # HTML pages that show what a Markdown file shows (`html_text`): escaped by the page.
    env.filters["line"] = html_text.line
    env.filters["code_html"] = html_text.code
    env.filters["change_html"] = html_text.change
    env.filters["short"] = _short
    env.filters["when"] = _when
    env.filters["time"] = _time
    env.filters["ticks"] = _ticks
    # The components every page shares (`html/parts.html`: dates, commit links, freshness),
    # as `parts` in every template: the module `{% import %}` would give, made once. Each
    # import looks for new globals in a ChainMap (~25 us a page, thousands of pages a build).
    env.globals["parts"] = env.get_template("html/parts.html").module
    return env


def render(template: str, **context: Any) -> str:
    return md_context.finish(environment().get_template(template).render(**context))
