"""The stores a command opens, its acting context and how it reads stored text (no click).

One store per project however often a command asks (the default goal, then the write), and
one for the life of a long-running caller (the MCP server), which still sees every other
process's writes (a store reads the ledger on every call); `close_stores` closes them when
the command ends.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

_OPENED: dict[tuple[Path, str], Any] = {}


def open_store(root: Path | None) -> Any:
    """The project's store (files, or PostgreSQL when configured), closed when the command ends."""
    from loopx.store.root import find_root
    from loopx.store.select import configured
    from loopx.store.select import open_store as select

    found = find_root(root)
    key = (found, configured(found))
    store = _OPENED.get(key)
    if store is None:
        store = _OPENED[key] = select(found, key[1])
    return store


def close_stores() -> None:
    if not _OPENED:  # `--help`, a usage error: nothing opened, no store module to import
        return
    from loopx.store.select import close

    while _OPENED:
        close(_OPENED.popitem()[1])


def context(root: Path | None, agent_id: str, session_id: str) -> Any:
    from loopx.engine.clock import from_env
    from loopx.engine.core import Context

    return Context(open_store(root), from_env(), agent_id=agent_id, session_id=session_id)


def text_resolver(store: Any) -> Callable[[Any], str]:
    """Display text for stored values as the operator reads them: the private audience's
    lens, private text read from this host's blob store."""
    from loopx.privacy.audience import Lens

    return Lens("private", store.get_blob).text
