"""What `loopx scan` remembers between runs: the ledger's forbidden strings.

Gathering them means folding every goal and reading every private blob (private text is
matched as itself), which costs more than scanning a public build. The strings only change
when a ledger does, so they are kept, keyed by each ledger's size, modification time and inode
(blobs are content-addressed: new ones arrive only with new events) and by the loopx version.
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
from loopx.store.filestore import FileStore

MAX_BYTES = 512 * 1024 * 1024


def _path(store: FileStore) -> Path:
    return store.state_dir / "private" / "cache" / "scan" / "forbidden.json"


def key(store: FileStore) -> list[Any]:
    """What the cached strings depend on: the version and every ledger file's identity."""
    files = []
    for goal_id in store.goal_ids():
        info = os.stat(store.ledger_path(goal_id), follow_symlinks=False)
        files.append([goal_id, info.st_size, info.st_mtime_ns, info.st_ino])
    return [__version__, files]


def load(store: FileStore, wanted: list[Any]) -> Forbidden | None:
    """The cached forbidden strings when they were gathered for exactly `wanted`."""
    try:
        fd = os.open(_path(store), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
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


def save(store: FileStore, wanted: list[Any], forbidden: Forbidden) -> None:
    """Keep the strings for the next scan; a cache that cannot be written is no error."""
    path = _path(store)
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
