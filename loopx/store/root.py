"""Find the project root the way git finds a repository: `.loopx/` here or in a parent."""

from __future__ import annotations

import os
from pathlib import Path

from loopx.model.errors import NotFound

STATE_DIR = ".loopx"


def find_root(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    """`explicit` (from `--root`), else `LOOPX_ROOT`, else the nearest folder holding `.loopx/`."""
    named = explicit or os.environ.get("LOOPX_ROOT")
    if named:
        root = Path(named).expanduser().resolve()
        if not (root / STATE_DIR).is_dir():
            raise NotFound(
                "no loopx project at the given root (run `loopx init` there first)",
                code="root_not_found",
            )
        return root
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR).is_dir():
            return folder
    raise NotFound(
        "no .loopx/ folder here or in any parent (run `loopx init`, or pass --root)",
        code="root_not_found",
    )


def init_root(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    named = explicit or os.environ.get("LOOPX_ROOT")
    return Path(named).expanduser().resolve() if named else (cwd or Path.cwd()).resolve()
