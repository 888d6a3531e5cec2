"""Write a build folder so that it is all-old or all-new.

New and changed files are first written under `<out>/.loopx-staging/`; a journal listing them
is written last (the commit point); then each staged file replaces its target, the files of
the previous build that are gone are removed, and the staging folder is dropped. An error
before the journal leaves the old folder untouched; an error after it is finished by rolling
forward, immediately or by the next writer (`recover`). Unchanged files are never rewritten.
Only files the previous manifest listed are ever deleted: user files in the folder are safe.
Every file operation goes through `loopx.store.fsio`, so fault tests can break any of them;
an `OSError` comes out as `StorageError` (`io_error`). Durability costs two syncs per write,
not one per file: the staged bytes are flushed before the journal lands (so a power cut can
never roll forward an empty file), and the renames before the journal is removed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from loopx.model.errors import LoopxError
from loopx.store import fsio

STAGING = ".loopx-staging"
JOURNAL = "JOURNAL.json"


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    recovered: bool = False


def _target(out: Path, rel: str) -> Path:
    """`out/rel` for a relative POSIX path that stays inside `out` (checked by its parts)."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise LoopxError("artifact path escapes the output folder", code="invalid_path")
    return out.joinpath(*parts)


def _same(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False


def recover(out: Path) -> bool:
    """Finish (roll forward) or discard an interrupted write. True when it rolled forward."""
    staging = out / STAGING
    fs = fsio.current()
    with fsio.guard("finish an interrupted write of the output folder"):
        if not staging.is_dir():
            return False
        journal = staging / JOURNAL
        rolled = False
        if journal.is_file():
            plan = orjson.loads(fs.read_file(journal))
            _apply(out, staging, plan["write"], plan["remove"])
            fs.sync_all(out)
            rolled = True
        _discard(fs, staging)
    return rolled


def _discard(fs: fsio.FileSystem, staging: Path) -> None:
    """Drop the staging folder, its journal first: without a journal it is only litter."""
    with contextlib.suppress(FileNotFoundError):
        fs.unlink(staging / JOURNAL)
    fs.remove_tree(staging)


def _write(fs: fsio.FileSystem, path: Path, data: bytes) -> None:
    fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        fs.write_all(fd, data)
    finally:
        fs.close(fd)


def _apply(out: Path, staging: Path, write: list[str], remove: list[str]) -> None:
    fs = fsio.current()
    made: set[Path] = set()
    for rel in write:
        src = staging / "files" / rel
        if src.exists():  # already moved by an earlier, interrupted roll-forward
            dst = _target(out, rel)
            if dst.parent not in made:
                fs.makedirs(dst.parent)
                made.add(dst.parent)
            fs.replace(src, dst)
    for rel in remove:
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(_target(out, rel))


def write_tree(
    out: Path,
    files: Mapping[str, Any],
    previous: set[str],
    *,
    trusted: frozenset[str] | set[str] = frozenset(),
) -> WriteReport:
    """Make `out` hold exactly `files` (plus anything not in `previous`), all at once.

    Values are bytes, or artifacts whose `.data` is read only when the file must be compared.
    `trusted` names files this process itself wrote with the same content in its last build
    (`loopx serve`): they are not read back to compare.
    """
    with fsio.guard("write the output folder"):
        return _write_tree(out, files, previous, trusted)


def _write_tree(
    out: Path, files: Mapping[str, Any], previous: set[str], trusted: frozenset[str] | set[str]
) -> WriteReport:
    report = WriteReport(recovered=recover(out))
    changed: dict[str, bytes] = {}
    for rel, value in files.items():
        if rel in trusted:
            continue  # not even read: an artifact carried over may never be loaded
        data = value if isinstance(value, bytes) else value.data
        if not _same(_target(out, rel), data):
            changed[rel] = data
    report.unchanged = len(files) - len(changed)
    stale = sorted(rel for rel in previous - files.keys() if _target(out, rel).exists())
    if not changed and not stale:
        return report
    fs = fsio.current()
    staging = out / STAGING
    try:
        made: set[Path] = set()
        for rel in sorted(changed):
            path = staging / "files" / rel
            if path.parent not in made:
                fs.makedirs(path.parent)
                made.add(path.parent)
            _write(fs, path, changed[rel])  # staging is discarded unless the journal lands
        plan = {"write": sorted(changed), "remove": stale}
        fs.sync_all(staging)  # every staged byte is durable before the commit point
        fs.write_atomic(staging / JOURNAL, orjson.dumps(plan), sync=True)
    except Exception:
        with contextlib.suppress(OSError):
            _discard(fs, staging)  # nothing replaced yet: all-old
        raise
    _apply(out, staging, plan["write"], stale)  # after the journal: roll forward
    fs.sync_all(out)  # the renames are durable before the journal goes
    _discard(fs, staging)
    _prune_empty_dirs(fs, out, stale)
    report.written = sorted(changed)
    report.removed = stale
    return report


def _prune_empty_dirs(fs: fsio.FileSystem, out: Path, removed: list[str]) -> None:
    for rel in removed:
        parent = _target(out, rel).parent
        while parent != out and parent.is_dir():
            try:
                fs.rmdir(parent)
            except OSError:
                break
            parent = parent.parent
