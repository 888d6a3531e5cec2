"""Carry over what an earlier `loopx build` wrote, so a fresh process re-renders only the goals
whose ledger changed.

The previous manifest says, per goal, the ledger head each file was built from; a memo in
`.loopx/cache/build/` records each file's size and mtime right after it was written. A goal's
files are carried over (not rendered, not read back, not rewritten) only when its ledger head,
the checkout, the audiences it is seen by, the generator and validation are all unchanged and
every one of its files still has the size and mtime the memo recorded; anything else is
rendered again. `loopx build --check` never carries anything: it compares every byte.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from loopx.build import outdir
from loopx.build.artifacts import AnyArtifact, DiskArtifact
from loopx.build.work import BuildCache, project_key
from loopx.model.config import ProjectConfig
from loopx.model.errors import LoopxError
from loopx.model.ids import visible_to
from loopx.projections.base import GENERATOR
from loopx.store import fsio

MEMO_FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent.parent


@cache
def fingerprint() -> str:
    """A digest of everything that decides what a goal's files contain besides its ledger:
    the templates and the code that projects and renders (so a changed template or an
    upgraded loopx never carries over output the new code would not write)."""
    from loopx.resources import resource_dir

    h = hashlib.sha256(GENERATOR.encode())
    folders = [resource_dir("templates")] + [
        _PACKAGE / name for name in ("projections", "render", "privacy", "state", "build")
    ]
    for folder in folders:
        for file in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".pyc"):
            h.update(file.relative_to(folder).as_posix().encode() + b"\0")
            h.update(file.read_bytes())
    return h.hexdigest()


def memo_path(root: Path, out: Path) -> Path:
    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    return root / ".loopx" / "cache" / "build" / f"{key}.json"


def _read(path: Path) -> Any:
    try:
        raw = fsio.read_regular(path, outdir.READ_CAP)
        return orjson.loads(raw) if raw is not None else None
    except (OSError, orjson.JSONDecodeError):
        return None


def load(
    root: Path,
    out: Path,
    audiences: tuple[str, ...],
    head: str | None,
    validate: bool,
    project: ProjectConfig | None = None,
) -> BuildCache | None:
    """A build cache holding the unchanged goals of the last build into `out`, or None (also
    for a manifest or memo of the wrong shape: a forged one only costs a full render)."""
    with outdir.Folder(out) as folder:
        try:
            return _load(root, out, folder, audiences, head, validate, project)
        except (AttributeError, TypeError, KeyError, ValueError):
            return None


def _load(
    root: Path,
    out: Path,
    folder: outdir.Folder,
    audiences: tuple[str, ...],
    head: str | None,
    validate: bool,
    project: ProjectConfig | None = None,
) -> BuildCache | None:
    memo = _read(memo_path(root, out))
    manifest = _read(out / "manifest.json")
    if not isinstance(memo, dict) or not isinstance(manifest, dict):
        return None
    if (
        memo.get("format") != MEMO_FORMAT
        or memo.get("validate") != validate
        or memo.get("fingerprint") != fingerprint()
        or manifest.get("generator") != GENERATOR
        or manifest.get("audiences") != list(audiences)
        or manifest.get("checkout", {}).get("head") != head
        or manifest.get("project") != (project or ProjectConfig()).pages()
    ):
        return None
    pages = project_key(project or ProjectConfig())
    sources: dict[str, Any] = manifest.get("sources", {})
    stats: dict[str, list[int]] = memo.get("files", {})
    by_unit: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for path, meta in manifest.get("files", {}).items():
        if meta.get("goal_id") and meta.get("audience"):
            by_unit.setdefault((meta["audience"], meta["goal_id"]), []).append((path, meta))
    cache = BuildCache()
    for audience in audiences:
        visible = tuple(
            sorted(g for g, s in sources.items() if visible_to(s["visibility"], audience))
        )
        rows = {
            r["goal_id"]: r for r in (_read(out / audience / "index.json") or {}).get("goals", [])
        }
        for goal_id in visible:
            files = by_unit.get((audience, goal_id))
            if not files or goal_id not in rows:
                continue
            artifacts: list[AnyArtifact] = []
            for path, meta in sorted(files):
                file = out / path
                try:
                    st = folder.stat(path)  # a link on the way: not carried over
                except (OSError, LoopxError):
                    break
                if st is None:
                    break
                if stats.get(path) != [st.st_size, st.st_mtime_ns] or st.st_size != meta["bytes"]:
                    break
                artifacts.append(
                    DiskArtifact(
                        path,
                        file,
                        meta["sha256"],
                        meta["bytes"],
                        audience,
                        meta.get("schema"),
                        goal_id,
                    )
                )
            else:
                source = sources[goal_id]
                key = (source["head"], source["revision"], head, visible, validate, pages)
                cache.entries[(audience, goal_id)] = (key, (artifacts, rows[goal_id]))
                cache.written.update((a.path, a.sha256) for a in artifacts)
    return cache


def save(root: Path, out: Path, paths: list[str], validate: bool) -> None:
    """Record the size and mtime of every file just written or kept (best effort: the memo is
    a cache, and without it the next build simply renders everything)."""
    files = {}
    for path in paths:
        try:
            st = os.lstat(out / path)
        except OSError:
            continue
        files[path] = [st.st_size, st.st_mtime_ns]
    target = memo_path(root, out)
    try:
        outdir.cache_dir(root)  # each part a real folder, never a planted link
        if fsio.kind(target) not in ("missing", "file"):
            return
        fsio.write_atomic_nofollow(
            target,
            orjson.dumps(
                {
                    "format": MEMO_FORMAT,
                    "fingerprint": fingerprint(),
                    "validate": validate,
                    "files": files,
                }
            ),
        )
    except (OSError, LoopxError):
        pass
