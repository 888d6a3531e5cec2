"""Where team output would leave the team: a git work tree that says it is public.

A file written inside a git work tree is one `git add` from being pushed. loopx cannot ask a
forge whether a repository is public, so it goes by what the work tree says: `git config
loopx.visibility public` declares it public (team output is refused there), `team` or
`private` declares it not public (silence), and otherwise a remote on a public forge host
(github.com, gitlab.com, codeberg.org, bitbucket.org) earns a warning. Paths git ignores are
never committed, so they are never warned about.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loopx.engine import git
from loopx.model.errors import BoundaryViolation

PUBLIC_FORGES = ("bitbucket.org", "codeberg.org", "github.com", "gitlab.com")
SETTING = "loopx.visibility"
# The variables that can give git a repository its walk up from the folder would not find
# (git(1), "The Git Repository"): the repository itself, its common part, the work tree. The
# others either act inside a repository already found (GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY),
# only stop the walk early (GIT_CEILING_DIRECTORIES, GIT_DISCOVERY_ACROSS_FILESYSTEM), or have
# nothing to do with finding one (GIT_SSL_CAINFO, GIT_AUTHOR_NAME, GIT_TERMINAL_PROMPT).
_REDIRECTING = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE")
_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?(?P<host>[^:/]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Exposure:
    declared: bool  # the work tree's config says public (refuse), not just a public-forge remote
    reason: str  # never the remote's URL, which may carry a credential


def _existing_folder(target: Path) -> Path:
    folder = target.absolute()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return folder


def _outside_any_repository(folder: Path) -> bool:
    """Whether git could find no repository for `folder`, told without starting it (a
    `git rev-parse` costs a build a process): git looks for one in the folder's real path
    and each folder above it, as a `.git` entry or a folder that is a git directory (which
    has a `HEAD`). Only when none of them holds either, the path is already the real one
    and no variable points git elsewhere (`_REDIRECTING`: `GIT_DIR`, `GIT_WORK_TREE`, …) is
    the answer no; otherwise git is asked. Nothing is followed: each name is `lstat`ed."""
    if any(os.environ.get(name) is not None for name in _REDIRECTING):
        return False
    if os.path.realpath(folder) != str(folder):
        return False
    for parent in (folder, *folder.parents):
        for name in (".git", "HEAD"):
            try:
                os.lstat(parent / name)
            except FileNotFoundError:
                continue
            except OSError:  # unreadable or not a folder on the way: ask git
                return False
            return False
    return True


def _host(url: str) -> str:
    match = _HOST.match(url.strip())
    return match["host"].lower() if match else ""


def exposure(target: Path, *, directory: bool = False) -> Exposure | None:
    """How writing team output to `target` (a file, or a folder when `directory`) could make
    it public."""
    folder = _existing_folder(target)
    if _outside_any_repository(folder):
        return None
    if git.work_tree_root(folder) is None or git.is_ignored(
        folder, target.absolute(), directory=directory
    ):
        return None
    declared = (git.config_value(folder, SETTING) or "").lower()
    if declared == "public":
        return Exposure(True, f"its git config sets {SETTING}=public")
    if declared in ("team", "private"):
        return None
    hosts = sorted({_host(u) for u in git.remote_urls(folder)} & set(PUBLIC_FORGES))
    if hosts:
        return Exposure(False, f"it has a {hosts[0]} remote")
    return None


def guard_team_output(
    target: Path, warn: Callable[[str], None], *, directory: bool = False
) -> None:
    """Refuse team output into a work tree declared public; warn when it may be public."""
    found = exposure(target, directory=directory)
    if found is None:
        return
    if found.declared:
        raise BoundaryViolation(
            f"refusing to write team output into a public git work tree ({found.reason}); "
            "write --audience public output there, or write outside the work tree",
            code="public_work_tree",
        )
    warn(
        f"loopx: warning: writing team output into a git work tree that may be public "
        f"({found.reason}); if the repository is public this publishes team text. Use "
        f"--audience public, or `git config {SETTING} team` if it is not public."
    )
