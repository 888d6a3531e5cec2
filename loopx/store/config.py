"""Find and read the project configuration: `loopx.toml` at the project root, else the
`[tool.loopx]` table of `pyproject.toml` there (the rule ruff and others follow: a tool's own
file wins; with both, `pyproject.toml` is not read). Neither: the defaults.

Both files are untrusted input: opened without following a symlink, regular files only, at
most `CONFIG_CAP` bytes, UTF-8, parsed with the standard library's `tomllib` (`tomli` on
Python 3.10)."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path
from typing import Any

from loopx.model.config import ProjectConfig, parse_config
from loopx.model.errors import InvalidInput
from loopx.store import fsio

CONFIG_FILE = "loopx.toml"
PYPROJECT = "pyproject.toml"
CONFIG_CAP = 1 << 20  # 1 MiB: far beyond any real configuration or pyproject.toml


def _invalid(source: str, why: str) -> InvalidInput:
    return InvalidInput(f"{source}: {why}", code="invalid_config")


def _read(path: Path) -> bytes | None:
    """The bytes of `path`, None when it does not exist. What is there is looked at without
    following a link, then read through fsio's rules (no link, regular file, capped)."""
    source = path.name
    with fsio.guard(f"read {source}"):
        info = fsio.current().lstat(path)
        if info is None:
            return None
        if stat.S_ISLNK(info.st_mode):
            raise _invalid(source, "is a symlink (loopx reads only a regular file)")
        if not stat.S_ISREG(info.st_mode):
            raise _invalid(source, "is not a regular file")
        if info.st_size > CONFIG_CAP:
            raise _invalid(source, f"is larger than the limit of {CONFIG_CAP} bytes")
        data = fsio.read_regular(path, CONFIG_CAP)
    if data is None:  # replaced or grown between the look and the read
        raise _invalid(source, "changed while loopx read it; try again")
    return data


def _parse(data: bytes, source: str) -> dict[str, Any]:
    # Imported here: most projects have no configuration file, and every call reads it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(source, "is not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # Keep only the position: the parser's message may quote the offending text.
        where = re.search(r"\(at (line \d+, column \d+|end of document)\)", str(err))
        at = f" ({where.group(0)[1:-1]})" if where else ""
        raise _invalid(source, f"is not valid TOML{at}") from None


def load_config(root: Path) -> ProjectConfig:
    """The configuration of the project at `root` (the folder holding `.loopx/`)."""
    data = _read(root / CONFIG_FILE)
    if data is not None:
        return parse_config(_parse(data, CONFIG_FILE), CONFIG_FILE)
    data = _read(root / PYPROJECT)
    if data is None:
        return ProjectConfig()
    tool = _parse(data, PYPROJECT).get("tool", {})
    table = tool.get("loopx") if isinstance(tool, dict) else None
    if table is None:
        return ProjectConfig()
    return parse_config(table, f"{PYPROJECT} [tool.loopx]")


def config_source(root: Path) -> tuple[str, bytes] | None:
    """The file the project's configuration is read from, and its bytes: `loopx.toml`, else
    a `pyproject.toml` with a `[tool.loopx]` table; None when the defaults apply."""
    data = _read(root / CONFIG_FILE)
    if data is not None:
        return CONFIG_FILE, data
    data = _read(root / PYPROJECT)
    if data is None:
        return None
    tool = _parse(data, PYPROJECT).get("tool", {})
    return (PYPROJECT, data) if isinstance(tool, dict) and "loopx" in tool else None


def store_config(store: Any) -> ProjectConfig:
    """The configuration of the project a store lives in (none for a store without a root)."""
    root = getattr(store, "root", None)
    return ProjectConfig() if root is None else load_config(Path(root))
