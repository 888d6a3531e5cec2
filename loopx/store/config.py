"""Find and read the project configuration: `loopx.toml` at the project root, else the
`[tool.loopx]` table of `pyproject.toml` there (the rule ruff and others follow: a tool's own
file wins; with both, `pyproject.toml` is not read). Neither: the defaults.

Both files are untrusted input: opened without following a symlink, regular files only, at
most `CONFIG_CAP` bytes, UTF-8, parsed with the standard library's `tomllib` (`tomli` on
Python 3.10).

The file is read on every call that needs the configuration (the default goal, audience and
output folder); parsing it and checking it against the schema (`jsonschema`) cost a call
about as much as the rest of it (issue 19). So the table found valid is remembered in
`.loopx/cache/config.json` under the digest of all that decides it: the loopx version, the
file's name and bytes, the schema and the code that reads and checks it. A changed file,
schema or loopx is parsed and checked again; an invalid file is never remembered."""

from __future__ import annotations

import hashlib
import re
import stat
import sys
from pathlib import Path
from typing import Any

import orjson

from loopx import __version__
from loopx.model import config as model
from loopx.model.config import ProjectConfig, parse_config, typed_config
from loopx.model.errors import InvalidInput
from loopx.store import fsio
from loopx.store.root import STATE_DIR

CONFIG_FILE = "loopx.toml"
PYPROJECT = "pyproject.toml"
CONFIG_CAP = 1 << 20  # 1 MiB: far beyond any real configuration or pyproject.toml


def _invalid(source: str, why: str) -> InvalidInput:
    return InvalidInput(f"{source}: {why}", code="invalid_config")


def _read(path: Path) -> bytes | None:
    """The bytes of `path`, None when it does not exist. What is there is looked at without
    following a link, then read through fsio's rules (no link, regular file, capped)."""
    found = _read_file(path)
    return None if found is None else found[0]


def _read_file(path: Path) -> tuple[bytes, list[int]] | None:
    """`_read`, with the file's identity on disk (device, inode, size, mtime, ctime)."""
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
    identity = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
    return data, identity


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
    found = _read_file(root / CONFIG_FILE)
    if found is not None:
        return _checked(root, CONFIG_FILE, *found)
    found = _read_file(root / PYPROJECT)
    if found is None:
        return ProjectConfig()
    return _checked(root, PYPROJECT, *found)


def _checked(root: Path, name: str, data: bytes, identity: list[int]) -> ProjectConfig:
    """The configuration the file `name` holds (`data`): the table remembered for exactly
    these bytes in this very file (`identity`), else parsed and checked (then remembered)."""
    source = CONFIG_FILE if name == CONFIG_FILE else f"{PYPROJECT} [tool.loopx]"
    digest = _digest(name, data, identity)
    memo = root / STATE_DIR / "cache" / "config.json"
    fsio.confine(root)  # the memo is reached through no link: never a file outside the project
    remembered = _remembered(memo, digest)
    if remembered is not None:
        table = remembered[0]
        return ProjectConfig() if table is None else typed_config(table, source)
    table = _parse(data, name)
    if name == PYPROJECT:
        tool = table.get("tool", {})
        table = tool.get("loopx") if isinstance(tool, dict) else None
    config = ProjectConfig() if table is None else parse_config(table, source)
    _remember(root, memo, digest, table)
    return config


def _digest(name: str, data: bytes, identity: list[int]) -> str:
    """Of all that decides the configuration a file holds: loopx, the file, the schema and
    the code that parses and checks it; and of the file's identity on disk. The memo is
    trusted without a check, and everything else in the key can be worked out from a
    checkout: a memo a checkout brings (`.loopx/cache/` committed) must not pass a table
    the schema refuses (an output folder outside the project, a branch named like an
    option). A checkout or copy makes new files, whose inode and change time no one can
    predict or set."""
    head = orjson.dumps([__version__, name, sys.version_info[:2], identity])
    body = len(data).to_bytes(8, "big") + data + model.checker_sources(__file__)
    return hashlib.sha256(head + body).hexdigest()


def _remembered(memo: Path, digest: str) -> tuple[Any] | None:
    """(the table,) remembered under `digest`, or None."""
    try:
        held = orjson.loads(fsio.current().read_file(memo, limit=CONFIG_CAP * 4))
    except (OSError, orjson.JSONDecodeError, InvalidInput):  # a link, a special or huge file
        return None
    if not isinstance(held, dict) or held.get("key") != digest or "table" not in held:
        return None
    table = held["table"]
    return (table,) if table is None or isinstance(table, dict) else None


def _remember(root: Path, memo: Path, digest: str, table: Any) -> None:
    """Keep `table` under `digest`, when JSON holds it as it is (TOML's dates it does not);
    a memo that cannot be written only costs the next call a parse."""
    try:
        encoded = orjson.dumps({"key": digest, "table": table})
    except TypeError:
        return
    if orjson.loads(encoded)["table"] != table or not (root / STATE_DIR).is_dir():
        return
    try:
        fsio.current().makedirs(memo.parent)
        fsio.current().write_atomic(memo, encoded)
    except (OSError, InvalidInput):  # InvalidInput: a link on the way (`unsafe_path`)
        pass


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
