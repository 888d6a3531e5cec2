"""The code fingerprint: a digest of everything besides the ledger that decides what loopx
writes. One module for every cache keyed by code: the build memo (`fingerprint`: every module
of the package, the templates, the schemas, the modules outside the package that define the
registered projections' steps, the third-party packages whose code makes output bytes, the
version), and the boundary's scan memo (`of`: the files it names).

Reading and hashing those ~400 files costs a fresh process ~40 ms, more than the rest of
carrying a build over; so each file's sha256 is remembered beside the build memo (`code.json`,
`remember`), under the file's identity on disk (size, mtime, ctime, inode, device) and bound to
this host's cache mark (`store.snapshots.host_mark`). Any edit to a file changes its ctime,
which no one can set back, and an upgrade makes new files: either way that file is read and
hashed again; a memo a copy or checkout of the project brings counts for nothing. A package's
files are found without importing it (`importlib.util.find_spec` of its top-level name).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Iterable, Iterator
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from loopx.model.ids import hex_digests
from loopx.projections.base import GENERATOR
from loopx.resources import resource_dir
from loopx.store import fsio
from loopx.store.snapshots import host_mark

if TYPE_CHECKING:  # the registry (and the projections it imports) only when fingerprinted
    from loopx.build.registry import Projection

PACKAGE = Path(__file__).resolve().parent.parent
FILE = "code.json"
_CAP = 4 << 20
#: Installed packages whose code decides output bytes: the template engine and its escaping,
#: the JSON writer, the ledger reader.
PACKAGES = ("jinja2", "markupsafe", "orjson", "msgspec")

Identity = tuple[int, int, int, int, int]  # size, mtime, ctime, inode, device


def files(registry: Iterable[Projection] = ()) -> Iterator[tuple[str, Path]]:
    """The source files, by name: the package's modules, the templates, the schemas, every
    module outside the package that defines a step of a projection in `registry`, and the
    files of `PACKAGES`."""
    folders = [("loopx", PACKAGE, ".py")]
    folders += [(name, resource_dir(name), "") for name in ("templates", "schemas")]
    for label, folder, suffix in folders:
        for rel in _walk(str(folder), suffix):
            yield f"{label}/{rel}", folder / rel
    outside = {file for file in map(_defined_in, _steps(tuple(registry))) if file is not None}
    for file in sorted(f for f in outside if PACKAGE not in f.parents):
        yield f"extension/{file.as_posix()}", file
    yield from packages(PACKAGES)


def packages(names: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """Every file of each installed package of `names` (`package/<name>/<path>`), found
    without importing it; a package that is not installed has none."""
    for name in names:
        found = _package(name)
        if found is None:
            continue
        if found.is_dir():
            for rel in _walk(str(found), ""):
                yield f"package/{name}/{rel}", found / rel
        else:
            yield f"package/{name}/{found.name}", found


@cache
def _package(name: str) -> Path | None:
    """The folder of the installed package `name` (or its one module file)."""
    spec = find_spec(name)  # a top-level name: found by the path finders, not imported
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return Path(locations[0])
    return Path(spec.origin) if spec.origin and os.path.isfile(spec.origin) else None


def _walk(top: str, suffix: str) -> list[str]:
    """Every file under `top` whose name ends with `suffix` (not a `.pyc`), by its path
    relative to `top`, in the order of its parts (as sorted `Path`s are). Folders are
    entered, links to folders are not, nor `__pycache__` (compiled files only)."""
    found: list[list[str]] = []
    pending: list[tuple[str, list[str]]] = [(top, [])]
    while pending:
        folder, parts = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append((entry.path, [*parts, entry.name]))
                elif (
                    entry.name.endswith(suffix)
                    and not entry.name.endswith(".pyc")
                    and entry.is_file()
                ):
                    found.append([*parts, entry.name])
    return ["/".join(rel) for rel in sorted(found)]


def _steps(registry: tuple[Projection, ...]) -> Iterator[Any]:
    for p in registry:
        yield p.project
        yield p.links
        for o in p.outputs:
            yield from (o.render, o.inputs, o.make)


def declarations(registry: Iterable[Projection]) -> Iterator[tuple[str, bytes]]:
    """Each projection's declaration: scope, name, audiences, outputs."""
    for p in registry:
        outputs = [[o.path, o.template, o.schema] for o in p.outputs]
        yield f"registry/{p.scope}/{p.name}", orjson.dumps([sorted(p.audiences), outputs])


def sources(registry: Iterable[Projection] = ()) -> Iterator[tuple[str, bytes]]:
    """Every source file's bytes, then the registry's declarations, by name."""
    projections = tuple(registry)
    for name, file in files(projections):
        yield name, file.read_bytes()
    yield from declarations(projections)


def _defined_in(step: Any) -> Path | None:
    """The module file that defines `step` (a function's own code says; anything else is
    asked of `inspect`), resolved."""
    if step is None:
        return None
    code = getattr(step, "__code__", None)
    if code is not None:
        return _resolved(code.co_filename)
    try:
        name = inspect.getsourcefile(step)
    except TypeError:  # a builtin
        return None
    return _resolved(name) if name else None


@cache
def _resolved(name: str) -> Path | None:
    """The file, resolved, if there is one (not for code made from a string)."""
    path = Path(name).resolve()
    return path if os.path.isfile(path) else None


def digest(files: Iterable[tuple[str, bytes]], version: str = GENERATOR) -> str:
    """A digest of the version and of each named file's bytes."""
    return _combined(((name, hashlib.sha256(data).hexdigest()) for name, data in files), version)


def _combined(hashed: Iterable[tuple[str, str]], version: str) -> str:
    """`digest`, of each file's name and sha256."""
    h = hashlib.sha256(version.encode() + b"\0")
    h.update("".join(f"{name}\0{sha}\n" for name, sha in hashed).encode())
    return h.hexdigest()


def fingerprint(folder: Path | None = None) -> str:
    """The digest of this installation's `sources()` and of the projections registered: a
    changed template, schema, module or package, another version or another set of
    projections never carries over output the new code would not write. With `folder` (the
    build memo's), each file's hash is taken from its `code.json` while the file is still
    the one it was computed from."""
    from loopx.build import registry

    return _fingerprint(tuple(registry.projections()), folder)


@cache
def _fingerprint(projections: tuple[Projection, ...], folder: Path | None) -> str:
    hashed = _memo(folder).hashed(files(projections))
    hashed += [(n, hashlib.sha256(d).hexdigest()) for n, d in declarations(projections)]
    return _combined(hashed, GENERATOR)


def of(named: Iterable[tuple[str, Path]], folder: Path | None = None, version: str = "") -> str:
    """The digest of the named files (and `version`), their hashes remembered in the memo of
    `folder` as `fingerprint`'s are."""
    return _combined(_memo(folder).hashed(named), version)


def memo_folder(root: Path) -> Path:
    """Where the build memo, and `code.json` with it, live (`.loopx/cache/build`)."""
    return root / ".loopx" / "cache" / "build"


def remember(folder: Path) -> None:
    """Write `code.json` in `folder` (a checked real folder) when a file was hashed that it
    did not hold as it is (best effort: it is a cache)."""
    _memo(folder).save()


class _Memo:
    """Each source file's sha256 under its identity on disk: read from `code.json` in the
    memo folder when it names this host's mark, else empty."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.held: dict[str, list[Any]] = {}
        self.asked: set[str] = set()  # what this process looked up: all a save keeps
        self.changed = False
        if folder is None:
            return
        mark = host_mark(folder.parent, create=False)
        try:
            raw = fsio.read_regular(folder / FILE, _CAP)
            memo = orjson.loads(raw) if raw is not None else None
        except (OSError, orjson.JSONDecodeError):
            memo = None
        if mark and isinstance(memo, dict) and memo.get("host") == mark:
            held = memo.get("files")
            self.held = held if isinstance(held, dict) else {}

    def hashed(self, named: Iterable[tuple[str, Path]]) -> list[tuple[str, str]]:
        """(name, sha256) of each named file, read and hashed only when its identity is not
        the one remembered."""
        out = []
        for name, file in named:
            st = os.stat(file)
            seen = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
            key = str(file)
            self.asked.add(key)
            held = self.held.get(key)
            if type(held) is list and held[:5] == seen and _is_sha(held[5:]):
                out.append((name, held[5]))
                continue
            sha = hashlib.sha256(file.read_bytes()).hexdigest()
            self.held[key] = [*seen, sha]
            self.changed = True
            out.append((name, sha))
        return out

    def save(self) -> None:
        if self.folder is None or not (self.changed or self.held.keys() - self.asked):
            return
        self.held = {k: v for k, v in self.held.items() if k in self.asked}
        mark = host_mark(self.folder.parent)
        path = self.folder / FILE
        try:
            if mark and fsio.kind(path) in ("missing", "file"):
                fsio.write_atomic_nofollow(path, orjson.dumps({"host": mark, "files": self.held}))
                self.changed = False
        except OSError:
            pass


def _is_sha(rest: list[Any]) -> bool:
    return len(rest) == 1 and hex_digests(rest)


@cache
def _memo(folder: Path | None) -> _Memo:
    return _Memo(folder)
