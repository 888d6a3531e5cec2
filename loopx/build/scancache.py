"""What `loopx scan` remembers between runs: the ledger's forbidden strings.

Gathering them means folding every goal and reading every private blob (private text is
matched as itself), which costs more than scanning a public build. The strings only change
when a ledger does, so they are kept, keyed by each ledger's change token (a file's size,
modification time and inode, or a database head; blobs are content-addressed: new ones arrive
only with new events) and by the loopx version.
The file holds private text, so it lives in the private partition that never leaves this
host: ``.loopx/private/cache/scan/forbidden.json``. A missing, unreadable, oversized or stale
file is rebuilt; a symlink or non-regular file there is never followed, only replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any

import orjson

from loopx import __version__
from loopx.build.boundary import Forbidden
from loopx.store import fsio
from loopx.store.base import Store
from loopx.store.root import STATE_DIR
from loopx.store.select import change_token

MAX_BYTES = 512 * 1024 * 1024


def _path(project: Path) -> Path:
    return project / STATE_DIR / "private" / "cache" / "scan" / "forbidden.json"


def key(store: Store) -> list[Any]:
    """What the cached strings depend on: the version and every ledger's change token (a
    file's identity, or a database head), as JSON-comparable lists."""
    return [__version__, [[g, *change_token(store, g)] for g in store.goal_ids()]]


def load(project: Path, wanted: list[Any]) -> Forbidden | None:
    """The cached forbidden strings when they were gathered for exactly `wanted`."""
    try:
        fd = os.open(_path(project), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        data = fsio.current().read_from(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        cached = orjson.loads(data)
        if cached["key"] != wanted:
            return None
        return Forbidden(frozenset(cached["texts"]), frozenset(cached["ids"]))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def save(project: Path, wanted: list[Any], forbidden: Forbidden) -> None:
    """Keep the strings for the next scan; a cache that cannot be written is no error."""
    path = _path(project)
    data = orjson.dumps(
        {"key": wanted, "texts": sorted(forbidden.texts), "ids": sorted(forbidden.ids)}
    )
    with contextlib.suppress(OSError):
        for folder in (path.parent.parent, path.parent):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                return
            if not folder.exists():
                fsio.current().mkdir(folder)
        fsio.current().write_atomic(path, data)
