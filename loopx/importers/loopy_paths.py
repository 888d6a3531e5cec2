"""The import source as the importer sees it: through `fsio`'s file rules.

An import source is another tool's folder, so it is untrusted like a checkout: the source
root is confined (`fsio.confine`), so no link is followed below it (a linked file or folder
is reported, never read or entered — which also makes discovery cycle-free: without links a
folder tree has no cycles); only regular files are read, FIFOs and devices are refused
without blocking, and every read is capped at `MAX_SOURCE_BYTES`.
"""

from __future__ import annotations

from pathlib import Path

from loopx.store import fsio

MAX_SOURCE_BYTES = 32 * 1024 * 1024


def exists(path: Path) -> bool:
    """Something is at `path` itself (a link counts: reading it is then refused, loudly)."""
    try:
        return fsio.current().lstat(path) is not None
    except fsio.UnsafePath:
        return False  # reached through a link: not part of the source


def is_dir(path: Path) -> bool:
    """`path` is a folder, reached without following a link."""
    try:
        return fsio.current().is_dir(path)
    except fsio.UnsafePath:
        return False


def is_file(path: Path) -> bool:
    """`path` is a regular file, reached without following a link."""
    try:
        return fsio.current().is_file(path)
    except fsio.UnsafePath:
        return False


def subdirs(folder: Path) -> list[Path]:
    """The real folders (not links to folders) in `folder`, sorted by name."""
    return [folder / name for name, kind in _entries(folder) if kind == "dir"]


def files(folder: Path, suffix: str = "") -> list[Path]:
    """Everything in `folder` that is not a folder and whose name ends in `suffix`, sorted:
    links and special files included, so that reading them reports the refusal."""
    return [
        folder / name for name, kind in _entries(folder) if kind != "dir" and name.endswith(suffix)
    ]


def _entries(folder: Path) -> list[tuple[str, str]]:
    if not is_dir(folder):
        return []
    try:
        return fsio.current().listdir(folder)
    except (OSError, fsio.UnsafePath):
        return []


def read(path: Path) -> bytes:
    """The bytes of regular file `path`: `fsio.UnsafePath`, `fsio.TooLarge` or `OSError`
    (`FileNotFoundError` when nothing is there) otherwise."""
    return fsio.current().read_file(path, limit=MAX_SOURCE_BYTES)
