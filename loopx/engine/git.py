"""What the engine asks of git: the checkout's HEAD and whether it is dirty.

`subprocess` is imported when git is first run: a call that resolves no HEAD (`loopx review`
without `--head`) does not pay its import (issue 19)."""

from __future__ import annotations

from pathlib import Path


def _git(workspace: Path, *args: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def head_revision(workspace: Path) -> str | None:
    """The commit checked out in `workspace`, or None outside a git checkout."""
    return _git(workspace, "rev-parse", "--verify", "-q", "HEAD") or None


AUTO = "auto"  # `--head auto`: the checkout's own HEAD


def resolve_head(root: Path, head: str | None) -> str | None:
    """`auto`: the git HEAD of the project folder, if it is a checkout; else as given."""
    if head != AUTO:
        return head
    return head_revision(root)


def _exit_code(workspace: Path, *args: str) -> int | None:
    """How `git -C workspace ARGS` exited (None when git could not run)."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(workspace), *args], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.returncode


def is_ancestor(workspace: Path, older: str, newer: str) -> bool | None:
    code = _exit_code(workspace, "merge-base", "--is-ancestor", older, newer)
    return {0: True, 1: False}.get(code) if code is not None else None


def head_and_dirty(workspace: Path) -> tuple[str | None, bool | None]:
    """HEAD and whether tracked files changed, from a single `git status` (one process)."""
    out = _git(workspace, "status", "--porcelain=v2", "--branch", "--untracked-files=no")
    if out is None:
        return None, None
    head, dirty = None, False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            oid = line[len("# branch.oid ") :].strip()
            head = oid if oid != "(initial)" else None
        elif not line.startswith("#"):
            dirty = True
    return head, (dirty if head else None)


def work_tree_root(path: Path) -> Path | None:
    """The top folder of the git work tree `path` is in, or None outside one."""
    out = _git(path, "rev-parse", "--show-toplevel")
    return Path(out) if out else None


def checkout_root(path: Path) -> Path:
    """Where workspace facts are observed: the work tree's top folder when `path` is inside
    one (so a command run from a subfolder sees the same files), else `path` itself."""
    return work_tree_root(path) or path


def config_value(path: Path, key: str) -> str | None:
    """A git config value as the work tree at `path` sees it (None when unset)."""
    return _git(path, "config", "--get", key) or None


def remote_urls(path: Path) -> list[str]:
    out = _git(path, "config", "--get-regexp", r"^remote\..*\.url$") or ""
    return sorted({line.split(None, 1)[1] for line in out.splitlines() if " " in line})


def is_ignored(workspace: Path, path: Path, *, directory: bool = False) -> bool:
    """Whether git ignores `path` (under the work tree of `workspace`; as a folder when
    `directory`, so a `site/` pattern matches a folder that does not exist yet)."""
    name = str(path) + ("/" if directory else "")
    return _exit_code(workspace, "check-ignore", "-q", name) == 0
