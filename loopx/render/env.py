"""The one Jinja2 environment: templates from `templates/`, StrictUndefined, autoescaping for
HTML, and every filter registered here."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from loopx.resources import resource_dir


def _md_inline(value: Any) -> str:
    """Escape text for a single Markdown line (tables, bullets): no newlines, no pipes."""
    text = " ".join(str(value).split())
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|"):
        text = text.replace(ch, "\\" + ch)
    return text


def _short(value: Any, width: int = 10) -> str:
    return str(value)[:width] if value else "-"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2.html", "svg")),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # Compiled templates are cached per user (keyed by source checksum): compiling
        # costs a CLI process ~50 ms per template, loading the cached code ~1 ms.
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )
    env.filters["md"] = _md_inline
    env.filters["short"] = _short
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
