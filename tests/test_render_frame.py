"""Pages rendered into a frame made once per group (`loopx.render.frame`): byte for byte the
whole page, the frame rendered once for the pages that share it, and the whole page again
wherever a frame cannot be made apart from one page."""

from __future__ import annotations

import re
from typing import Any

import jinja2
import pytest

from loopx.render.frame import Framed

BASE = (
    "<title>{% block title %}{% endblock %} · {{ site }}</title>{{ made() }}\n"
    "<nav>{% block nav %}default{% endblock %}</nav>\n<main>{% block main %}{% endblock %}</main>"
)
PAGE = (
    '{% extends "base.html" %}{% block title %}{{ item }}{% endblock %}'
    "{% block nav %}{{ site | upper }}{% endblock %}"
    "{% block main %}{% for i in range(n) %}<p>{{ item }} & {{ i }}</p>{% endfor %}{% endblock %}"
)


def _env(base: str = BASE, page: str = PAGE) -> tuple[jinja2.Environment, list[int]]:
    env = jinja2.Environment(
        loader=jinja2.DictLoader({"base.html": base, "page.html": page}),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
    )
    frames: list[int] = []
    env.globals["made"] = lambda: frames.append(1) or ""
    return env, frames


def _pages(framed: Framed, env: jinja2.Environment, given: list[dict[str, Any]]) -> list[str]:
    return [framed.render(env, inputs) for inputs in given]


GIVEN = [
    {"site": "A&B", "item": "<one>", "n": 2},
    {"site": "A&B", "item": "two", "n": 0},
    {"site": "C", "item": "three", "n": 1},
    {"site": "A&B", "item": "four", "n": 3},
]


def test_pages_are_the_whole_page_and_their_frame_is_rendered_once_a_group() -> None:
    env, frames = _env()
    whole = [env.get_template("page.html").render(**inputs) for inputs in GIVEN]
    frames.clear()
    framed = Framed("page.html", ("site",), holes=("title", "main"))
    assert _pages(framed, env, GIVEN) == whole
    assert "<title>&lt;one&gt; · A&amp;B</title>" in whole[0] and "<nav>A&amp;B</nav>" in whole[0]
    # A&B, then C, then A&B again: for each run of a group its frame, and its first page
    # whole (held to the framed one)
    assert len(frames) == 6


@pytest.mark.parametrize(
    ("base", "page", "why"),
    [
        (BASE.replace("{{ site }}", "{{ item | default('D') }}"), PAGE, "default on a field"),
        (
            BASE,
            PAGE.replace(
                '{% extends "base.html" %}',
                '{% extends "base.html" %}{% set item = "set at the top" %}',
            ),
            "a name the page sets at its top",
        ),
        (
            BASE.replace("{% block title %}{% endblock %}", "{% block title %}T{% endblock %}"),
            PAGE.replace("{% block title %}{{ item }}", "{% block title %}{{ super() }}{{ item }}"),
            "super() in a hole",
        ),
        (
            BASE.replace("{{ site }}", "{{ 'yes' if item is defined else 'no' }}"),
            PAGE,
            "a field asked whether it is defined",
        ),
    ],
)
def test_a_frame_unlike_its_first_page_is_not_used(base: str, page: str, why: str) -> None:
    """What StrictUndefined lets a frame get wrong, the group's first page, rendered whole
    and framed, shows: those pages are rendered whole, every byte as the whole template."""
    env, _ = _env(base, page)
    whole = [env.get_template("page.html").render(**inputs) for inputs in GIVEN]
    framed = Framed("page.html", ("site",), holes=("title", "main"))
    assert _pages(framed, env, GIVEN) == whole, why


@pytest.mark.parametrize(
    ("base", "page", "why"),
    [
        (BASE.replace("{{ site }}", "{{ item }}"), PAGE, "the frame uses a page's field"),
        (BASE + "{{ self.title() }}", PAGE, "a hole placed a second time"),
        (BASE, PAGE.replace("{% block title %}{{ item }}{% endblock %}", ""), "an unfilled hole"),
        (BASE.replace("{% block main %}{% endblock %}", ""), PAGE, "a hole not placed"),
    ],
)
def test_a_page_whose_frame_cannot_be_made_apart_is_rendered_whole(
    base: str, page: str, why: str
) -> None:
    env, frames = _env(base, page)
    whole = [env.get_template("page.html").render(**inputs) for inputs in GIVEN]
    frames.clear()
    framed = Framed("page.html", ("site",), holes=("title", "main"))
    assert _pages(framed, env, GIVEN) == whole, why
    assert len(frames) >= len(GIVEN), why  # each page rendered whole


def test_an_error_in_a_hole_is_raised_as_the_whole_page_raises_it() -> None:
    env, _ = _env()
    framed = Framed("page.html", ("site",), holes=("title", "main"))
    for broken in ({"site": "A", "n": 1}, {"site": "A", "item": "x"}):  # no item; no n
        with pytest.raises(Exception) as whole:
            env.get_template("page.html").render(**broken)
        with pytest.raises(type(whole.value), match=re.escape(str(whole.value))):
            framed.render(env, broken)
