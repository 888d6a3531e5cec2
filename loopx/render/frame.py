"""Pages of one template that differ in a few blocks only (a goal's todo pages): the page
around those blocks, its frame, is rendered once for the group, and each page renders just
its own blocks into the frame's holes, byte for byte what rendering the whole page gives.

Why: the base page and the blocks a group's pages share (its inheritance, its links) cost
each render about as much as the page's own fields, thousands of pages a build.

Safe by construction: a frame is rendered from the inputs its pages share alone, so with
StrictUndefined a frame that would use one page's field fails, and those pages are then
rendered whole; so they are when a hole is not placed exactly once, by the block itself
(as `{{ self.title() }}` would place it a second time). What StrictUndefined lets pass (a
page's field asked whether it `is defined`, or read through `default`; a name the template
sets at its top, which only the frame's render sees; `super()` in a hole) is caught on the
group's first page, which is rendered whole and framed: when the two differ, the group's
pages are rendered whole. A page the frame fails on is rendered whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jinja2

__all__ = ["Framed"]


class Framed:
    """The template `name`, for pages that agree on the inputs `shared` and differ in the
    blocks `holes`. Keeps the frame of the last group it rendered: a build renders one
    goal's pages one after the other."""

    def __init__(self, name: str, shared: tuple[str, ...], holes: tuple[str, ...]) -> None:
        self.name, self.shared, self.holes = name, shared, holes
        self._last: tuple[jinja2.Template, tuple[Any, ...], _Frame | None] | None = None

    def render(self, env: jinja2.Environment, inputs: dict[str, Any]) -> str:
        template = env.get_template(self.name)
        group = tuple(inputs[k] for k in self.shared)
        last = self._last
        # the same objects for every page of a group: the comparison is one of identities
        if last is not None and last[0] is template and last[1] == group:
            frame = last[2]
            return template.render(**inputs) if frame is None else frame.render(inputs)
        shared = {k: inputs[k] for k in self.shared}
        frame = _Frame.make(template, shared, self.holes)
        whole = template.render(**inputs)
        # The group's first page is rendered both ways: a frame that gives it other bytes
        # (a page field read through `default`, a name the page's template sets at its top,
        # `super()` in a hole) is not used for the group.
        if frame is not None and frame.render(inputs) != whole:
            frame = None
        self._last = (template, group, frame)
        return whole


class _Mark(str):
    """A hole in a frame while it is rendered: told from the page's text by its type."""


class _Frame:
    """The text of a page around its holes, [(text, the hole after it or None)], and what
    each page's blocks are given besides the page's inputs (the template's globals)."""

    def __init__(
        self,
        template: jinja2.Template,
        given: dict[str, Any],
        pieces: list[tuple[str, str | None]],
    ) -> None:
        self.template, self.given, self.pieces = template, given, pieces

    @classmethod
    def make(
        cls, template: jinja2.Template, shared: dict[str, Any], holes: tuple[str, ...]
    ) -> _Frame | None:
        """The frame of the pages given `shared`, or None when it cannot be made apart from
        one page (see the module's docstring)."""
        if not all(name in template.blocks for name in holes):
            return None  # a hole the page does not fill itself
        given = dict(template.globals)  # flat: a page's context then copies no ChainMap
        ctx = template.new_context({**given, **shared}, shared=True)
        marks = {_Mark(f"\0{name}\0"): name for name in holes}
        for mark, name in marks.items():
            ctx.blocks[name] = [_placing(mark)]
        pieces: list[tuple[str, str | None]] = []
        text: list[str] = []
        try:
            for piece in template.root_render_func(ctx):
                if isinstance(piece, _Mark):
                    pieces.append(("".join(text), marks[piece]))
                    text = []
                else:
                    text.append(piece)
        except Exception:  # UndefinedError, or what an undefined field led to
            return None
        pieces.append(("".join(text), None))
        placed = sorted(name for _, name in pieces if name is not None)
        if placed != sorted(holes) or any(m in t for t, _ in pieces for m in marks):
            return None
        return cls(template, given, pieces)

    def render(self, inputs: dict[str, Any]) -> str:
        template = self.template
        blocks = template.blocks
        try:
            ctx = template.new_context({**self.given, **inputs}, shared=True)
            out: list[str] = []
            for text, hole in self.pieces:
                out.append(text)
                if hole is not None:
                    out.extend(blocks[hole](ctx))
            return "".join(out)
        except Exception:  # what the frame cannot render, the whole template may
            return template.render(**inputs)


def _placing(mark: _Mark) -> Any:
    """A block that yields only its mark."""

    def block(ctx: Any) -> Iterator[str]:
        yield mark

    return block
