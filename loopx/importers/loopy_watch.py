"""`loopx import loopy-loop --watch`: keep importing while loopy-loop writes.

A watchdog observer on the `.loopy_loop` folder (or the session folder) only sets a flag; the
loop waits until the tree has been quiet for `debounce` seconds, then runs the same import
again. Imports are idempotent, so a pass over an unchanged tree appends nothing; a failed pass
is reported and the watch goes on. Reads by the importer itself (open/close without write)
are not changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopx.importers.loopy_discover import LOOPY_DIR, discover
from loopx.importers.loopy_loop import ImportReport, import_path
from loopx.importers.loopy_model import Problem
from loopx.model.errors import LoopxError

CHANGES = frozenset({"created", "modified", "deleted", "moved", "closed"})


def watch_root(path: Path) -> Path:
    """The folder to observe for PATH: the session folder (the folder holding it when it
    brings child sessions kept beside it), else its `.loopy_loop` folder."""
    base, project_root, sessions = discover(path)
    top = sessions[0]
    if top == path.expanduser().resolve():
        return top if all(s == top or top in s.parents for s in sessions) else base
    if project_root is not None and (project_root / LOOPY_DIR).is_dir():
        return project_root / LOOPY_DIR
    return base


class _Flag:
    """A watchdog handler that only records that something changed."""

    def __init__(self, changed: threading.Event):
        self.changed = changed

    def dispatch(self, event: Any) -> None:
        if event.event_type in CHANGES and not str(event.src_path).endswith(".lock"):
            self.changed.set()


def _import(store: Any, path: Path, goal_id: str | None) -> ImportReport:
    try:
        return import_path(store, path, goal_id)
    except LoopxError as err:
        return ImportReport(problems=[Problem(path.name, err.message, "error")])
    except OSError:  # the tree changed under the reader (a folder renamed or removed)
        return ImportReport(problems=[Problem(path.name, "could not be read; retrying", "error")])


def watch(
    store: Any,
    path: Path,
    on_report: Callable[[ImportReport], None],
    *,
    goal_id: str | None = None,
    debounce: float = 0.5,
    stop: threading.Event | None = None,
) -> None:
    """Import PATH now and again after every quiet change, until `stop` is set (or Ctrl-C)."""
    from watchdog.observers import Observer

    stop = stop or threading.Event()
    changed = threading.Event()
    observed = watch_root(path)
    observer = Observer()
    observer.schedule(_Flag(changed), str(observed), recursive=True)  # type: ignore[arg-type]
    observer.start()
    try:
        on_report(_import(store, path, goal_id))
        while not stop.is_set():
            if not changed.wait(timeout=0.1):
                continue
            while changed.is_set() and not stop.is_set():  # settle: quiet for `debounce`
                changed.clear()
                stop.wait(debounce)
            if stop.is_set():
                break
            on_report(_import(store, path, goal_id))
    finally:
        observer.stop()
        observer.join(timeout=5)
