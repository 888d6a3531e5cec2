"""Shared pieces of the hostile-checkout tests: a sentinel tree outside the project, hashed
before and after, and a lure project in it whose every byte carries a marker.

A link planted in the project points into the sentinel tree. If loopx ever followed one, the
marker would show up in its output, the project's files or its blobs; if it ever wrote through
one, the sentinel tree's hashes would change.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from tests.conftest import run_cli

MARKER = "OUTSIDE-7d1e9a"
SECRET = f"a secret outside the project {MARKER}\n".encode()


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under `root` (links not followed) with what it is: a file's sha256 and
    size, a link's target, a FIFO, a folder."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                out[rel] = "link -> " + os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                out[rel] = f"file {info.st_size} {digest} {oct(info.st_mode)}"
            elif stat.S_ISDIR(info.st_mode):
                out[rel] = "dir"
            else:
                out[rel] = f"special {oct(info.st_mode)}"
    return out


def regular_files(root: Path) -> dict[str, bytes]:
    """The bytes of every regular file under `root`, reached without following a link
    (files over 64 MiB are the sparse ones the cases plant: their hash stands for them)."""
    out: dict[str, bytes] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                rel = path.relative_to(root).as_posix()
                out[rel] = b"" if info.st_size > (64 << 20) else path.read_bytes()
    return out


def leaked(root: Path) -> list[str]:
    """Files under `root` holding the marker (links are not read)."""
    return sorted(rel for rel, data in regular_files(root).items() if MARKER.encode() in data)


def ok(args: list[str], **kw: object) -> str:
    got = run_cli(args, **kw)  # type: ignore[arg-type]
    assert got.exit_code == 0, (args, got.stdout, got.stderr)
    return got.stdout


def make_project(root: Path, goal_id: str, title: str, secret_body: bytes | None = None) -> None:
    """A project with goal `goal_id` (a todo t1, evidence with a private body when given)."""
    r = ["--root", str(root)]
    ok(["init", *r])
    ok(["goal", "create", "--goal-id", goal_id, "--title", title, "--objective", title, *r])
    ok(["todo", "add", "--goal-id", goal_id, "--todo-id", "t1", "--title", title, *r])
    if secret_body is not None:
        body = root.parent / f"{goal_id}-body.txt"
        body.write_bytes(secret_body)
        ok(
            ["evidence", "add", "--goal-id", goal_id, "--kind", "log", "--summary", "a log"]
            + ["--file", str(body), "--todo-id", "t1", "--evidence-id", "ev1", *r]
        )
        body.unlink()


def sentinel(base: Path) -> Path:
    """The tree outside the project: plain files, a folder, and a lure project whose goal
    `h` (title, objective, todo, evidence body) carries the marker."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "folder").mkdir()
    (outside / "folder" / "index.html").write_bytes(b"<p>" + SECRET + b"</p>")
    make_project(outside / "lure", "h", f"lure {MARKER}", SECRET)
    return outside
