"""Where loopy-loop sessions are: a project root, a `.loopy_loop` folder or one session
folder → the session folders to read, parents before their children. Only listings and
`children.json`'s ids are read here; always in sorted order.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from loopx.model.errors import NotFound

LOOPY_DIR = ".loopy_loop"
SESSION_MARKERS = ("session.json", "state.json", "goal.md", "control.json", "events.jsonl")


def is_session_dir(path: Path) -> bool:
    return path.is_dir() and (
        any((path / name).is_file() for name in SESSION_MARKERS) or (path / "iterations").is_dir()
    )


def _nested(session_dir: Path) -> list[Path]:
    """A session folder and every child session nested under it, parents first."""
    out = [session_dir]
    children = session_dir / "children"
    if children.is_dir():
        for child in sorted(children.iterdir()):
            if not child.name.startswith(".") and is_session_dir(child):
                out.extend(_nested(child))
    return out


def _named_children(session_dir: Path) -> list[str]:
    """The child session ids `children.json` names, read leniently (the reader reports a bad
    file); only plain folder names."""
    try:
        data = orjson.loads((session_dir / "children.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
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
    sessions_dir: Path | None = None
    if (path / LOOPY_DIR / "sessions").is_dir():
        base, root, sessions_dir = path, path, path / LOOPY_DIR / "sessions"
    elif (path / "sessions").is_dir() and (path.name == LOOPY_DIR or not is_session_dir(path)):
        base, root, sessions_dir = path, path.parent, path / "sessions"
    elif path.name == "sessions" and path.parent.name == LOOPY_DIR:
        base, root, sessions_dir = path, path.parent.parent, path
    elif is_session_dir(path):
        anchor = next((p for p in path.parents if p.name == LOOPY_DIR), None)
        return path.parent, anchor.parent if anchor else None, _family(path)
    else:
        raise NotFound(
            "no loopy-loop sessions found (expected a project root holding .loopy_loop/, "
            "a .loopy_loop folder or a session folder)",
            code="source_not_found",
        )
    found: list[Path] = []
    for entry in sorted(sessions_dir.iterdir()):
        if not entry.name.startswith(".") and is_session_dir(entry):
            found.extend(_nested(entry))
    if not found:
        raise NotFound(
            "no loopy-loop sessions found under .loopy_loop/sessions", code="no_sessions"
        )
    return base, root, found
