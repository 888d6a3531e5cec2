"""The build memo's fingerprint: a digest of everything besides the ledger that decides what
a build writes (every module of the package, the templates, the schemas, the projections
registered and the modules outside the package that define their steps, the version).

Reading and hashing those ~400 files costs a fresh process ~40 ms, more than the rest of
carrying a build over; so the digest is remembered beside the memo (`fingerprint.json`),
under a key made of each of those files' name and identity on disk (size, mtime, ctime,
inode, device) and of the registry's declarations. Any edit to a source file changes its
ctime, which no one can set back; a new or removed file changes the list: either way the
files are read and hashed again.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from loopx.build import registry
from loopx.build.registry import Projection
from loopx.projections.base import GENERATOR
from loopx.resources import resource_dir
from loopx.store import fsio

PACKAGE = Path(__file__).resolve().parent.parent
FILE = "fingerprint.json"
_CAP = 1 << 16


def files(registry: Iterable[Projection] = ()) -> Iterator[tuple[str, Path]]:
    """The source files, by name: the package's modules, the templates, the schemas, and
    every module outside the package that defines a step of a projection in `registry`."""
    folders = [("loopx", PACKAGE, ".py")]
    folders += [(name, resource_dir(name), "") for name in ("templates", "schemas")]
    for label, folder, suffix in folders:
        for rel in _walk(str(folder), suffix):
            yield f"{label}/{rel}", folder / rel
    outside = {file for file in map(_defined_in, _steps(tuple(registry))) if file is not None}
    for file in sorted(f for f in outside if PACKAGE not in f.parents):
        yield f"extension/{file.as_posix()}", file


def _walk(top: str, suffix: str) -> list[str]:
    """Every file under `top` whose name ends with `suffix` (not a `.pyc`), by its path
    relative to `top`, in the order of its parts (as sorted `Path`s are). Folders are
    entered, links to folders are not."""
    found: list[list[str]] = []
    pending: list[tuple[str, list[str]]] = [(top, [])]
    while pending:
        folder, parts = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
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
    h = hashlib.sha256(version.encode())
    for name, data in files:
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


def fingerprint(folder: Path | None = None) -> str:
    """The digest of this installation's `sources()` and of the projections registered: a
    changed template, schema or module, another version or another set of projections never
    carries over output the new code would not write. With `folder` (the memo's), taken from
    its `fingerprint.json` when every source file is still the one it was computed from."""
    projections = tuple(registry.projections())
    if folder is None:
        return _computed(projections)
    return _remembered(projections, folder)[0]


def remember(folder: Path) -> None:
    """Write `fingerprint.json` in `folder` (a checked real folder) unless it already held
    this digest under this key (best effort: it is a cache)."""
    projections = tuple(registry.projections())
    computed, key, held = _remembered(projections, folder)
    path = folder / FILE
    try:
        if not held and fsio.kind(path) in ("missing", "file"):
            fsio.write_atomic_nofollow(path, orjson.dumps({"key": key, "digest": computed}))
    except OSError:
        pass


@cache
def _computed(projections: tuple[Projection, ...]) -> str:
    return digest(sources(projections))


@cache
def _remembered(projections: tuple[Projection, ...], folder: Path) -> tuple[str, str, bool]:
    """(the digest, its key, whether `fingerprint.json` held it)."""
    key = _identity_key(projections)
    try:
        raw = fsio.read_regular(folder / FILE, _CAP)
        held = orjson.loads(raw) if raw is not None else None
    except (OSError, orjson.JSONDecodeError):
        held = None
    if isinstance(held, dict) and held.get("key") == key and _digest(held.get("digest")):
        return str(held["digest"]), key, True
    return _computed(projections), key, False


def _digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and not value.strip("0123456789abcdef")


def _identity_key(projections: tuple[Projection, ...]) -> str:
    """A digest of the version, each source file's name and identity on disk, and the
    registry's declarations."""
    h = hashlib.sha256(GENERATOR.encode())
    for name, file in files(projections):
        st = os.stat(file)
        seen = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        h.update(orjson.dumps([name, seen]))
    for name, data in declarations(projections):
        h.update(orjson.dumps([name, data.decode()]))
    return h.hexdigest()
