"""Where loopy-loop sessions are: a project root, a `.loopy_loop` folder or one session
folder → the session folders to read, parents before their children. Only listings and
`children.json`'s ids are read here; always in sorted order.

The folder named is confined (`fsio.confine`) before anything is looked at, and every probe
goes through `loopy_paths`: a linked folder is never entered (so `children/x -> ..` adds no
session and no cycle), and a folder is visited once however it is reached.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from loopx.importers import loopy_paths
from loopx.model.errors import NotFound
from loopx.store import fsio

LOOPY_DIR = ".loopy_loop"
SESSION_MARKERS = ("session.json", "state.json", "goal.md", "control.json", "events.jsonl")


def is_session_dir(path: Path) -> bool:
    return loopy_paths.is_dir(path) and (
        any(loopy_paths.exists(path / name) for name in SESSION_MARKERS)
        or loopy_paths.is_dir(path / "iterations")
    )


def _nested(session_dir: Path) -> list[Path]:
    """A session folder and every child session nested under it, parents first (depth
    first, without recursion: a deep tree cannot exhaust the stack)."""
    out: list[Path] = []
    pending = [session_dir]
    while pending:
        folder = pending.pop()
        out.append(folder)
        children = [
            child
            for child in loopy_paths.subdirs(folder / "children")
            if not child.name.startswith(".") and is_session_dir(child)
        ]
        pending.extend(reversed(children))
    return out


def _named_children(session_dir: Path) -> list[str]:
    """The child session ids `children.json` names, read leniently (the reader reports a bad
    file); only plain folder names."""
    try:
        data = orjson.loads(loopy_paths.read(session_dir / "children.json"))
    except (OSError, orjson.JSONDecodeError, fsio.UnsafePath, fsio.TooLarge):
        return []
    records = data.get("children") if isinstance(data, dict) else data
    if not isinstance(records, list):
        return []
    ids = {r.get("session_id") for r in records if isinstance(r, dict)}
    return sorted(i for i in ids if isinstance(i, str) and i not in (".", "..") and "/" not in i)


def _family(session_dir: Path) -> list[Path]:
    """A session folder with every child it has: nested under it, or named in its
    `children.json` and kept beside it. A session's writes depend on its children, so they
    are read with it whatever PATH names it."""
    out: list[Path] = []
    pending = [session_dir]
    while pending:
        for folder in _nested(pending.pop(0)):
            if folder in out:
                continue
            out.append(folder)
            for sid in _named_children(folder):
                sibling = folder.parent / sid
                if sibling not in out and is_session_dir(sibling):
                    pending.append(sibling)
    return out


def discover(path: Path) -> tuple[Path, Path | None, list[Path]]:
    """(base, project root, session folders) for a project root, `.loopy_loop` or session."""
    path = path.expanduser().resolve()
    if not path.exists():
        raise NotFound("the path to import does not exist", code="source_not_found")
    fsio.confine(path)
    return _locate(path)


def _locate(path: Path) -> tuple[Path, Path | None, list[Path]]:
    sessions_dir: Path | None = None
    if loopy_paths.is_dir(path / LOOPY_DIR / "sessions"):
        base, root, sessions_dir = path, path, path / LOOPY_DIR / "sessions"
    elif loopy_paths.is_dir(path / "sessions") and (
        path.name == LOOPY_DIR or not is_session_dir(path)
    ):
        base, root, sessions_dir = path, path.parent, path / "sessions"
    elif path.name == "sessions" and path.parent.name == LOOPY_DIR:
        base, root, sessions_dir = path, path.parent.parent, path
    elif is_session_dir(path):
        anchor = next((p for p in path.parents if p.name == LOOPY_DIR), None)
        project = anchor.parent if anchor else None
        fsio.confine(project or path.parent)  # siblings, the project's goal file, state.json
        return path.parent, project, _family(path)
    else:
        raise NotFound(
            "no loopy-loop sessions found (expected a project root holding .loopy_loop/, "
            "a .loopy_loop folder or a session folder)",
            code="source_not_found",
        )
    fsio.confine(root)
    found: list[Path] = []
    for entry in loopy_paths.subdirs(sessions_dir):
        if not entry.name.startswith(".") and is_session_dir(entry):
            found.extend(_nested(entry))
    if not found:
        raise NotFound(
            "no loopy-loop sessions found under .loopy_loop/sessions", code="no_sessions"
        )
    return base, root, found
