"""Rendered Markdown kept under `.loopx/` so that a call whose input did not change imports
no template engine (issue 19: Jinja2's import is about a fifth of a `loopx review`).

A cache file holds its key on the first line, then the text. The key is a digest of all that
decides the text: the loopx version, the template's source, the code of the filters and of
the template engine, and the projected data itself (canonical JSON). So a changed ledger,
template, filter or Jinja2 never reuses old text: the data differs, or the sources do. Text a
private-audience view may hold is kept in the private partition, which never leaves this
host. Reading and writing go through the store's file rules; a cache that cannot be written
only costs the next call a render.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import orjson

from loopx import __version__
from loopx.resources import resource_dir
from loopx.store import fsio
from loopx.store.snapshots import host_mark

_PACKAGE = Path(__file__).resolve().parent.parent


def code_sources(modules: Iterable[str]) -> bytes:
    """The source of loopx modules (`render/env.py`, …, relative to the package) and of the
    template engine and its escaping (each `__init__.py` names its version), found without
    importing them."""
    parts = [(_PACKAGE / name).read_bytes() for name in modules]
    for engine in ("jinja2", "markupsafe"):  # the template engine and its escaping
        spec = find_spec(engine)
        if spec is not None and spec.origin:
            parts.append(Path(spec.origin).read_bytes())
    return b"".join(len(p).to_bytes(8, "big") + p for p in parts)


def key(name: str, template: str, code: bytes, data: Any) -> str:
    """The digest of everything that decides the text `template` renders from `data`."""
    source = (resource_dir("templates") / template).read_bytes()
    return hashlib.sha256(
        orjson.dumps([__version__, name, template])
        + len(source).to_bytes(8, "big")
        + source
        + code
        + orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()


def here(store: Any, digest: str) -> str:
    """`digest` (of `key`) bound to this host: everything `key` is made of can be worked out
    from a checkout (its ledger, its HEAD), so text a checkout brings in `.loopx/cache/`
    under the right key (a forged handoff digest for the next agent to follow) must never
    match. The mark (`store.snapshots.host_mark`: the identity of the cache folder's `host`
    file) is one no copy of the folder reproduces."""
    state_dir = getattr(store, "state_dir", None)
    mark = host_mark(state_dir / "cache") if state_dir is not None else ""
    return hashlib.sha256(f"{mark}\n{digest}".encode()).hexdigest()


def location(store: Any, audience: str, *parts: str) -> Path | None:
    """`.loopx/cache/PARTS` (under `.loopx/private/` for the private audience); None for a
    store without a state folder (PostgreSQL), which then renders on every call."""
    state_dir = getattr(store, "state_dir", None)
    if state_dir is None or not host_mark(state_dir / "cache"):
        return None  # no host mark to bind the text to (`here`): nothing is cached
    base = state_dir / "private" if audience == "private" else state_dir
    path: Path = base.joinpath("cache", *parts)
    return path


def reuse(path: Path | None, digest: str, render: Callable[[], str]) -> str:
    """The text cached at `path` under `digest`, else `render()` (then cached)."""
    if path is not None:
        # Through the store's file rules: a linked or special cache file is `unsafe_path`.
        try:
            cached = fsio.current().read_file(path, limit=fsio.MAX_READ).decode("utf-8")
            if cached.startswith(digest + "\n"):
                return cached[len(digest) + 1 :]
        except (OSError, UnicodeDecodeError):
            pass
    out = render()
    if path is not None:
        try:
            fsio.current().makedirs(path.parent)
            fsio.current().write_atomic(path, (digest + "\n" + out).encode("utf-8"))
        except OSError:
            pass  # the cache is an optimisation; failing to write it is never an error
    return out
