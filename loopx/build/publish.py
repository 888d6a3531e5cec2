"""`loopx publish`: ship the public partition only, after the boundary scan passes."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from loopx.build.boundary import enforce, non_public_strings, project_names, scan_public
from loopx.build.pipeline import AUTO, make_site, previous_files, resolve_head
from loopx.build.writer import write_tree
from loopx.model.errors import Conflict, LoopxError

PUBLIC = "public/"


def _public_files(site: Any) -> dict[str, bytes]:
    return {
        path[len(PUBLIC) :]: a.data
        for path, a in site.artifacts.items()
        if a.audience == "public" and path.startswith(PUBLIC)
    }


def publish(
    root: Path,
    *,
    to_dir: Path | None = None,
    git_branch: str | None = None,
    head: str | None = AUTO,
    message: str | None = None,
) -> dict[str, Any]:
    head = resolve_head(root, head)
    site, (goals, _) = make_site(root, ("public",), head)
    forbidden = non_public_strings(goals).with_names(project_names(root))
    enforce(scan_public(site, forbidden), goals, forbidden)
    files = _public_files(site)
    sources = ", ".join(
        f"{g}@{s['revision']}"
        for g, s in sorted(site.sources.items())
        if s["visibility"] == "public"
    )
    result: dict[str, Any] = {"files": len(files), "sources": sources}
    if to_dir is not None:
        to_dir.mkdir(parents=True, exist_ok=True)
        previous = _listed(to_dir)
        files[".loopx-published"] = ("\n".join(sorted(files)) + "\n").encode()
        write_tree(to_dir, files, previous | previous_files(to_dir))
        result["to"] = str(to_dir)
        return result
    assert git_branch is not None
    result["commit"] = _commit_to_branch(
        root, git_branch, files, message or f"loopx publish: {sources or 'no goals'}"
    )
    result["branch"] = git_branch
    return result


def _listed(folder: Path) -> set[str]:
    try:
        names = (folder / ".loopx-published").read_text("utf-8").split("\n")
    except FileNotFoundError:
        return set()
    return {n for n in names if n} | {".loopx-published"}


def _git(
    repo: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, env=env, input=input, check=False
    )
    if proc.returncode != 0:
        # git's own message quotes its arguments (a branch name may be anything): not echoed.
        raise Conflict(
            f"git {args[0]} failed (exit {proc.returncode})",
            code="git_failed",
            exit=proc.returncode,
        )
    return proc.stdout.decode().strip()


def _identity_env(repo: Path) -> dict[str, str]:
    """Use the repository's configured identity; fall back to a loopx one when there is none."""
    env = dict(os.environ)
    for key, field in (("NAME", "user.name"), ("EMAIL", "user.email")):
        configured = (
            subprocess.run(
                ["git", "-C", str(repo), "config", field], capture_output=True, check=False
            ).returncode
            == 0
        )
        if not configured:
            default = "loopx publish" if key == "NAME" else "loopx@localhost"
            env.setdefault(f"GIT_AUTHOR_{key}", default)
            env.setdefault(f"GIT_COMMITTER_{key}", default)
    return env


def _commit_to_branch(repo: Path, branch: str, files: dict[str, bytes], message: str) -> str:
    """Commit exactly `files` as the whole tree of `branch`, without touching the work tree
    or the index (a private index file and plumbing commands)."""
    _git(repo, "check-ref-format", "--branch", branch)
    with tempfile.TemporaryDirectory() as tmp:
        # The files go to a scratch work tree and into a private index in one `git add`:
        # three git processes however many pages there are.
        work = Path(tmp) / "tree"
        for path, data in files.items():
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        work.mkdir(exist_ok=True)
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git_dir = _git(repo, "rev-parse", "--absolute-git-dir")
        _git(
            work,
            "add",
            "--all",
            "--force",
            ".",
            env={**env, "GIT_DIR": git_dir, "GIT_WORK_TREE": str(work)},
        )
        tree = _git(repo, "write-tree", env=env)
    ref = f"refs/heads/{branch}"
    try:
        parent = _git(repo, "rev-parse", "--verify", "-q", ref)
    except LoopxError:
        parent = ""
    if parent and _git(repo, "rev-parse", f"{parent}^{{tree}}") == tree:
        return parent  # nothing changed: no empty commit
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    commit = _git(repo, *args, env=_identity_env(repo))
    _git(repo, "update-ref", ref, commit, *([parent] if parent else []))
    return commit
