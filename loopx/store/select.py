"""Which store a project uses: its `.loopx/` files (the default) or a PostgreSQL database.

The choice is `LOOPX_STORE` when set, else `.loopx/store.json` (written by `loopx init
--store`), else the file store. A PostgreSQL URL is recorded and accepted only without a
password: libpq supplies it from `PGPASSWORD`, `~/.pgpass` or a service file, so no secret
ever lands in the project folder, the ledger, a projection, an error or a log.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from loopx.model.errors import InvalidInput, TooLarge
from loopx.store import fsio
from loopx.store.base import Store
from loopx.store.root import STATE_DIR

CONFIG = "store.json"
MAX_CONFIG = 4096
_SCHEMES = ("postgresql://", "postgres://")


def check_url(url: str) -> str:
    """`url` if it is a PostgreSQL URL without a password; never echoes it back.

    Parsed here with the standard library (libpq's URI form), so a file-store project
    never imports the database driver.
    """
    from urllib.parse import parse_qs, urlsplit

    if url == "file":
        return url
    if not url.startswith(_SCHEMES):
        raise InvalidInput(
            "a store is `file` or a postgresql:// URL", code="invalid_store", field="store"
        )
    try:
        parts = urlsplit(url)
        query = parse_qs(parts.query, keep_blank_values=True)
        userinfo = parts.netloc.rpartition("@")[0]
        password = ":" in userinfo or "password" in query
    except ValueError:  # a bad port or bracket: urllib's message may quote the URL
        raise InvalidInput(
            "the store URL is not a valid PostgreSQL URL", code="invalid_store", field="store"
        ) from None
    if password:
        raise InvalidInput(
            "the store URL carries a password: leave it out and let libpq supply it "
            "(PGPASSWORD, ~/.pgpass or a service file)",
            code="store_url_password",
            field="store",
        )
    return url


def configured(root: Path) -> str:
    """The store this project uses: `file` or a PostgreSQL URL."""
    named = os.environ.get("LOOPX_STORE")
    if named:
        return check_url(named)
    path = root / STATE_DIR / CONFIG
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InvalidInput(f"{STATE_DIR}/{CONFIG} is not a regular file", code="invalid_store")
    with fsio.guard("read the store choice"):
        try:
            raw = fsio.current().read_file(path, limit=MAX_CONFIG)
        except FileNotFoundError:
            return "file"
        except TooLarge:
            raise InvalidInput(f"{STATE_DIR}/{CONFIG} is too large", code="invalid_store") from None
    try:
        data = orjson.loads(raw)
        url = data["store"] if isinstance(data, dict) else None
    except (orjson.JSONDecodeError, KeyError):
        url = None
    if not isinstance(url, str):
        raise InvalidInput(
            f"{STATE_DIR}/{CONFIG} must be a small JSON object with a `store` string",
            code="invalid_store",
        )
    return check_url(url)


def record(root: Path, url: str) -> None:
    """Write this host's store choice (atomically) after checking it, and keep it out of git.

    The choice is per host (each one runs `loopx init --store`): a checkout that carried it
    would decide, for whoever clones it, which server receives their private content.
    """
    check_url(url)
    data = orjson.dumps({"store": url}, option=orjson.OPT_SORT_KEYS) + b"\n"
    fs = fsio.current()
    ignore = root / STATE_DIR / ".gitignore"
    with fsio.guard("record the store"):
        try:
            kept = fs.read_file(ignore) if ignore.is_file() and not ignore.is_symlink() else b""
        except FileNotFoundError:
            kept = b""
        if CONFIG.encode() not in kept.splitlines():
            lines = kept if not kept or kept.endswith(b"\n") else kept + b"\n"
            fs.write_atomic(ignore, lines + CONFIG.encode() + b"\n", sync=True)
        fs.write_atomic(root / STATE_DIR / CONFIG, data, sync=True)


def open_store(root: Path, url: str | None = None, *, connections: int = 1) -> Any:
    """The project's store: the file store, or a PostgreSQL store caching snapshots locally —
    for a short-lived process (`connections` 1) through the store broker
    (`loopx/store/broker.py`) when one can be used, else one connection of its own; a
    long-running caller asks for a pool of `connections`."""
    from loopx.store.filestore import FileStore

    url = check_url(url) if url is not None else configured(root)
    if url == "file":
        return FileStore(root)
    cache_dir = root / STATE_DIR / "cache" / "postgres"
    if connections == 1:  # a short-lived process: through this user's store broker if it can
        from loopx.store.broker_client import connect

        brokered = connect(url, root=root, cache_dir=cache_dir)
        if brokered is not None:
            return brokered
    from loopx.store.postgres import PostgresStore

    return PostgresStore(url, root=root, cache_dir=cache_dir, max_connections=connections)


def close(store: Store | Any) -> None:
    """Release a store's connections (nothing to do for the file store)."""
    closer = getattr(store, "close", None)
    if callable(closer):
        closer()


def change_token(store: Any, goal_id: str) -> tuple[Any, ...]:
    """A cheap value that changes whenever the goal's ledger does (for build caches): the
    ledger file's size, mtime, ctime and inode (an mtime can be set back, a ctime cannot),
    or the database's head (seq, sum, offset)."""
    head = getattr(store, "head", None)
    if callable(head):
        cursor = head(goal_id)
        return ("head",) if cursor is None else ("head", cursor.seq, cursor.head, cursor.offset)
    with fsio.guard("read the ledger"):
        st = store.ledger_path(goal_id).stat()
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
