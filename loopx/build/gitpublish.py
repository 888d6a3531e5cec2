"""`loopx publish --git-branch`: the public partition as a commit on a history of its own.

Only plumbing runs (fast-import of blobs, update-index on a private index file, write-tree,
commit-tree, update-ref with the expected old value), so no work tree, index or checked-out
branch is ever touched. The first publish to a branch is an orphan commit; a later one's only
parent is the branch's previous commit, and only when that history is the branch's own: a
branch that shares a commit with any other ref (a `gh-pages` made with `git branch gh-pages`
from `main`) is refused, and `--overwrite` replaces it with an orphan commit. Files on the
branch that no loopx publish wrote (each publish's `.loopx-published` lists what it wrote,
with sizes and sha256, so a page edited since is not loopx's any more) are refused too,
unless the publish goes into a subfolder (`--prefix`, the rest is kept) or `--overwrite` says
to replace them. All refusals come from `plan`, before the site is built; `commit` then
writes.

Every public byte of the commit is scanned first: the files (by the build), their names, the
commit message and the author identity.

Why not ghp-import: it commits on top of whatever the branch holds (so a branch created from
`main` publishes all of `main`'s history), writes into a checked-out branch, takes the author
from the user's git config, replaces files it did not write, and scans nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from loopx.engine.clock import from_env, parse
from loopx.model.errors import BoundaryViolation, Conflict, InvalidInput, NotFound
from loopx.render.jsonout import dumps

LISTING = ".loopx-published"  # what a publish wrote; the same shape as `publish --to`'s
LISTING_SCHEMA = "loopx.published/v1"
DEFAULT_IDENTITY = "loopx <loopx@localhost>"
IDENTITY_ENV = "LOOPX_PUBLISH_IDENTITY"
MAX_MESSAGE = 20_000
MAX_LISTING = 8 * 1024 * 1024

_PREFIX_PART = re.compile(r"[A-Za-z0-9._-]{1,100}")
_CNAME = re.compile(r"(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")
_IDENTITY = re.compile(r"([^<>\x00-\x1f\x7f]{1,100}?) *<([^<>\s\x00-\x1f\x7f]{1,254})>")
_REMOTE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# The environment git inherits: no redirection of the repository, index or work tree, and no
# identity but the one loopx sets.
_SCRUBBED = re.compile(r"GIT_(DIR|WORK_TREE|INDEX_FILE|PREFIX|AUTHOR_\w+|COMMITTER_\w+)")


@dataclass(frozen=True)
class BranchTarget:
    """Where and how to commit: what the user asked for, not yet checked."""

    branch: str
    prefix: str = ""
    nojekyll: bool = True
    cname: str | None = None
    message: str | None = None
    identity: str | None = None
    overwrite: bool = False
    push: bool = False
    remote: str | None = None


@dataclass(frozen=True)
class _Entry:
    mode: str
    kind: str
    sha: str
    size: str
    path: str


def check_target(target: BranchTarget) -> BranchTarget:
    """Check every option that needs no repository; return it normalised. Values are never
    echoed in an error (a token pasted into the wrong flag stays unprinted)."""
    branch = target.branch
    if branch in ("@", "HEAD") or "@{" in branch or re.fullmatch(r"[A-Z_]*_HEAD", branch):
        raise InvalidInput(
            "--git-branch must name a branch, not a symbolic name such as HEAD or @",
            code="branch_symbolic",
        )
    if branch.startswith("refs/"):
        raise InvalidInput(
            "--git-branch takes a branch name (gh-pages), not a full ref (refs/heads/…)",
            code="branch_full_ref",
        )
    if not branch or len(branch) > 200 or branch.startswith("-") or not branch.isprintable():
        raise InvalidInput("--git-branch is not a valid branch name", code="invalid_branch")
    prefix = target.prefix.strip("/") if target.prefix else ""
    if target.prefix and not _valid_prefix(prefix):
        raise InvalidInput(
            "--prefix must be a relative folder of letters, digits, '.', '_' and '-' "
            "(no '..', no .git)",
            code="invalid_prefix",
        )
    cname = target.cname.strip().lower() if target.cname is not None else None
    if cname is not None and not _CNAME.fullmatch(cname):
        raise InvalidInput(
            "--cname must be a domain name such as status.example.org", code="invalid_cname"
        )
    if cname is not None and prefix:
        raise InvalidInput(
            "--cname belongs at the root of the site; it cannot be combined with --prefix",
            code="usage_error",
        )
    if target.remote is not None and not _REMOTE.fullmatch(target.remote):
        raise NotFound("--remote names no configured git remote", code="unknown_remote")
    if target.message is not None:
        if not target.message.strip():
            raise InvalidInput("--message is empty", code="empty_text", field="message")
        if len(target.message) > MAX_MESSAGE or "\x00" in target.message:
            raise InvalidInput(
                f"--message is longer than {MAX_MESSAGE} characters or holds a NUL byte",
                code="text_too_long",
                field="message",
            )
    identity = (target.identity or os.environ.get(IDENTITY_ENV) or DEFAULT_IDENTITY).strip()
    match = _IDENTITY.fullmatch(identity)
    if match is None or not match[1].strip():
        raise InvalidInput(
            f"--identity (or {IDENTITY_ENV}) must look like 'Name <email>'",
            code="invalid_identity",
        )
    return replace(target, prefix=prefix, cname=cname, identity=identity)


def _valid_prefix(prefix: str) -> bool:
    parts = prefix.split("/")
    return len(prefix) <= 200 and all(
        _PREFIX_PART.fullmatch(p) and p not in (".", "..") and p.lower() != ".git" for p in parts
    )


def payload(files: dict[str, bytes], target: BranchTarget) -> dict[str, bytes]:
    """What this publish writes, by path on the branch: the files (under the prefix), the
    listing of what it wrote, and (at the root only) `.nojekyll` and `CNAME`."""
    written = dict(files)
    if not target.prefix:
        if target.nojekyll:
            written[".nojekyll"] = b""
        if target.cname:
            written["CNAME"] = f"{target.cname}\n".encode()
    listed = {
        p: {"sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)} for p, d in written.items()
    }
    written[LISTING] = dumps({"schema": LISTING_SCHEMA, "files": listed})
    base = f"{target.prefix}/" if target.prefix else ""
    return {base + p: data for p, data in sorted(written.items())}


def scan_commit(
    scanner: Any,
    target: BranchTarget,
    message: str,
    written: dict[str, bytes],
    typed: Any = None,
) -> None:
    """Scan what the commit carries besides the built pages: file names, the files loopx adds
    (listing, CNAME), the message and the identity; the message and identity also with
    `typed` (when given). A finding refuses with the scanner's code."""
    name, email = _split_identity(target.identity or DEFAULT_IDENTITY)
    findings: list[dict[str, Any]] = []
    parts = [
        ("(commit message)", message),
        ("(file names)", "\n".join(written)),
        ("(commit identity)", name),
    ]
    for label, text in parts:
        findings += [f.to_dict() for f in scanner.scan_text(text, label)]
    # An e-mail address is what an identity's <…> holds, and one given on purpose is published
    # on purpose; anything else in it (a token, a home path, ledger text) is refused.
    findings += [
        f.to_dict() for f in scanner.scan_text(email, "(commit identity)") if f.kind != "email"
    ]
    if typed is not None:
        for label, text in (
            ("(commit message)", message),
            ("(commit identity)", f"{name} {email}"),
        ):
            findings += [f.to_dict() for f in typed.scan_text(text, label)]
    for path in (LISTING, "CNAME"):
        full = f"{target.prefix}/{path}" if target.prefix else path
        if full in written:
            findings += [f.to_dict() for f in scanner.scan_bytes(written[full], full)]
    if findings:
        where = sorted({f["path"] for f in findings})
        kinds = sorted({f["kind"] for f in findings})
        raise BoundaryViolation(
            f"the commit failed the boundary scan in {', '.join(where)}: {len(findings)} "
            f"finding(s) of kind {', '.join(kinds)}; nothing was committed",
            findings=findings[:100],
        )


def _split_identity(identity: str) -> tuple[str, str]:
    match = _IDENTITY.fullmatch(identity)
    assert match is not None  # checked by check_target
    return match[1].strip(), match[2]


class _Git:
    """git in one repository, with a clean environment; a failure never echoes git's own
    message (it quotes arguments, and a branch name or remote URL may hold anything)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.env = {k: v for k, v in os.environ.items() if not _SCRUBBED.fullmatch(k)}
        self.env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")

    def run(
        self, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                ["git", "-C", str(self.repo), *args],
                capture_output=True,
                env={**self.env, **(env or {})},
                input=input,
                check=False,
            )
        except FileNotFoundError:
            raise Conflict("git is not installed", code="git_failed") from None

    def out(
        self, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
    ) -> bytes:
        proc = self.run(*args, env=env, input=input)
        if proc.returncode != 0:
            raise Conflict(
                f"git {args[0]} failed (exit {proc.returncode})",
                code="git_failed",
                exit=proc.returncode,
            )
        return proc.stdout

    def text(self, *args: str, **kw: Any) -> str:
        return self.out(*args, **kw).decode("utf-8", "replace").strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args).returncode == 0

    def resolve(self, ref: str) -> str | None:
        proc = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
        return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _checked_out(git: _Git) -> set[str]:
    lines = git.text("worktree", "list", "--porcelain").splitlines()
    return {line[len("branch ") :] for line in lines if line.startswith("branch ")}


def _check_repository(git: _Git, target: BranchTarget) -> str | None:
    """Refusals that need the repository. Returns the remote to use (or None: no remote)."""
    if not git.ok("rev-parse", "--git-dir"):
        raise InvalidInput(
            "the project folder is not inside a git repository (git init first)",
            code="not_a_git_repository",
        )
    if not git.ok("check-ref-format", "--branch", target.branch):
        raise InvalidInput("--git-branch is not a valid branch name", code="invalid_branch")
    ref = f"refs/heads/{target.branch}"
    if git.ok("symbolic-ref", "-q", ref):
        raise InvalidInput(
            "--git-branch names a symbolic ref (an alias of another branch)",
            code="branch_symbolic",
        )
    if ref in _checked_out(git):
        raise Conflict(
            "the branch is checked out in a work tree; loopx never moves a checked-out branch "
            "(publish to another branch, such as gh-pages)",
            code="branch_checked_out",
        )
    remotes = git.text("remote").splitlines()
    if target.remote is not None and target.remote not in remotes:
        raise NotFound("--remote names no configured git remote", code="unknown_remote")
    if target.push and not remotes:
        raise NotFound(
            "--push needs a git remote (git remote add origin URL)", code="unknown_remote"
        )
    if target.remote is not None:
        return target.remote
    return "origin" if "origin" in remotes else (remotes[0] if remotes else None)


def _shares_history(git: _Git, base: str, branch: str) -> bool:
    """True when a commit reachable from `base` is reachable from any other ref (a local or
    remote branch, a tag, a stash) than the branch itself and its copies on remotes."""
    refs = git.text("for-each-ref", "--format=%(objecttype) %(*objecttype) %(refname)").splitlines()
    own = {f"refs/heads/{branch}"}
    others = []
    for line in refs:
        kind, peeled, name = line.split(" ", 2)
        if name in own or re.fullmatch(r"refs/remotes/[^/]+/" + re.escape(branch), name):
            continue
        if "commit" in (kind, peeled):
            others.append(name)
    if not others:
        return False
    total = int(git.text("rev-list", "--count", base))
    stdin = "".join(f"^{name}\n" for name in others).encode()
    alone = int(git.text("rev-list", "--count", "--stdin", base, input=stdin))
    return alone < total


def _tree(git: _Git, commit: str) -> list[_Entry]:
    raw = git.out("ls-tree", "-r", "-z", "-l", "--full-tree", commit)
    entries = []
    for record in raw.split(b"\x00"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, sha, size = meta.decode().split()
        entries.append(_Entry(mode, kind, sha, size, path.decode("utf-8", "surrogateescape")))
    return entries


def _in_zone(path: str, prefix: str) -> bool:
    """Is `path` in what this publish replaces: everything, or the prefix folder (and any
    file standing where one of the prefix's folders must go)?"""
    if not prefix:
        return True
    return path == prefix or path.startswith(prefix + "/") or prefix.startswith(path + "/")


def _foreign(git: _Git, entries: list[_Entry], prefix: str) -> list[str]:
    """Paths in the replaced zone that no loopx publish wrote: none of the branch's
    `.loopx-published` listings (at the root, or in the folder of a `--prefix` publish) names
    them with the size and sha256 they have now (a page edited by hand is not loopx's)."""
    listed: dict[str, tuple[str, int]] = {}
    for e in entries:
        folder, _, name = e.path.rpartition("/")
        if name == LISTING and e.kind == "blob" and int(e.size) <= MAX_LISTING:
            base = f"{folder}/" if folder else ""
            listed.update({base + p: v for p, v in _listing(git.out("cat-file", "blob", e.sha))})
            listed[e.path] = ("", -1)  # the listing itself is loopx's
    zone = [e for e in entries if _in_zone(e.path, prefix)]
    check = [e for e in zone if e.path in listed and listed[e.path][1] == _size(e)]
    digests = _sha256s(git, [e.sha for e in check])
    ours = {e.path for e in check if digests.get(e.sha) == listed[e.path][0]}
    ours |= {path for path, (_, size) in listed.items() if size == -1}
    return sorted(e.path for e in zone if e.path not in ours)


def _listing(raw: bytes) -> list[tuple[str, tuple[str, int]]]:
    """The (path, (sha256, size)) pairs of a listing; nothing for anything else."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(doc, dict) or doc.get("schema") != LISTING_SCHEMA:
        return []
    files = doc.get("files")
    out = []
    for path, meta in (files if isinstance(files, dict) else {}).items():
        if isinstance(meta, dict):
            sha, size = meta.get("sha256"), meta.get("bytes")
            if isinstance(sha, str) and isinstance(size, int) and not isinstance(size, bool):
                out.append((path, (sha, size)))
    return out


def _size(entry: _Entry) -> int:
    return int(entry.size) if entry.kind == "blob" and entry.size.isdigit() else -2


def _sha256s(git: _Git, blobs: list[str]) -> dict[str, str]:
    """sha256 of each blob's bytes, read through one `git cat-file --batch`."""
    if not blobs:
        return {}
    raw = git.out("cat-file", "--batch", input="".join(f"{b}\n" for b in blobs).encode())
    out: dict[str, str] = {}
    at = 0
    while at < len(raw):
        eol = raw.index(b"\n", at)
        sha, _, size = raw[at:eol].decode().split(" ")
        body = raw[eol + 1 : eol + 1 + int(size)]
        out[sha] = hashlib.sha256(body).hexdigest()
        at = eol + 1 + int(size) + 1
    return out


def _write_tree(git: _Git, kept: list[_Entry], written: dict[str, bytes]) -> str:
    """Store the new files as blobs and build the tree in a private index: the repository's
    own index is never read or written.

    The blobs go in through one `git fast-import` stream (one pack, no scratch files: writing
    a thousand small files costs more than all of git's work), which reports each blob's
    hash through its marks file.
    """
    stream = bytearray()
    for mark, data in enumerate(written.values(), start=1):
        stream += b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n"
    stream += b"done\n"
    with tempfile.TemporaryDirectory(prefix="loopx-publish-") as tmp:
        folder = Path(tmp)
        marks = folder / "marks"
        git.out("fast-import", "--quiet", "--done", f"--export-marks={marks}", input=bytes(stream))
        blob = dict(line.split() for line in marks.read_text("ascii").splitlines())
        records = [f"{e.mode} {e.kind} {e.sha}\t{e.path}" for e in kept]
        records += [f"100644 blob {blob[f':{i}']}\t{p}" for i, p in enumerate(written, start=1)]
        env = {"GIT_INDEX_FILE": str(folder / "index")}
        data = "".join(f"{r}\x00" for r in records).encode("utf-8", "surrogateescape")
        git.out("update-index", "-z", "--index-info", env=env, input=data)
        return git.text("write-tree", env=env)


def _identity_env(identity: str) -> dict[str, str]:
    name, email = _split_identity(identity)
    when = f"{int(parse(from_env().now()).timestamp())} +0000"
    env = {}
    for role in ("AUTHOR", "COMMITTER"):
        env.update({f"GIT_{role}_NAME": name, f"GIT_{role}_EMAIL": email, f"GIT_{role}_DATE": when})
    return env


@dataclass(frozen=True)
class Plan:
    """A target that passed every check, and what the commit will stand on."""

    target: BranchTarget
    remote: str | None  # where to push and whose copy of the branch to continue
    local: str | None  # the branch's commit now (update-ref expects it still)
    parent: str | None  # the new commit's only parent, or None: an orphan
    kept: tuple[_Entry, ...]  # entries of the old tree outside the replaced zone
    replaced_history: bool  # --overwrite of a branch that shared history


def plan(repo: Path, target: BranchTarget) -> Plan:
    """Every check and refusal, before anything is built: options, repository, branch name,
    work trees, remote, shared history and files the previous publish did not write."""
    target = check_target(target)
    git = _Git(repo)
    remote = _check_repository(git, target)
    local = git.resolve(f"refs/heads/{target.branch}")
    base = local
    if base is None and remote is not None:
        base = git.resolve(f"refs/remotes/{remote}/{target.branch}")
    if base is None:
        return Plan(target, remote, local, None, (), False)
    if _shares_history(git, base, target.branch):
        if not target.overwrite:
            raise Conflict(
                "the branch shares history with another branch or tag (was it created from "
                "main?); publishing on it would publish that history. Use another branch, "
                "delete this one, or --overwrite to replace it with a fresh history",
                code="branch_shares_history",
            )
        return Plan(target, remote, local, None, (), True)  # nothing of the old tree is kept
    entries = _tree(git, base)
    foreign = _foreign(git, entries, target.prefix)
    if foreign and not target.overwrite:
        raise Conflict(
            f"the branch holds {len(foreign)} file(s) that no earlier loopx publish wrote"
            f"{' in the prefix folder' if target.prefix else ''} (see git ls-tree -r "
            "--name-only on the branch); publish into a subfolder with --prefix DIR to keep "
            "them, or --overwrite to replace them",
            code="branch_foreign_files",
            count=len(foreign),
        )
    kept = tuple(e for e in entries if not _in_zone(e.path, target.prefix))
    return Plan(target, remote, local, base, kept, False)


def commit(
    repo: Path,
    planned: Plan,
    files: dict[str, bytes],
    *,
    scanner: Any,
    default_message: str,
    typed: Any = None,
) -> dict[str, Any]:
    """Commit `files` (the public partition, by relative path) as `plan` says.

    Scans what the commit adds, writes the tree and the commit, then moves the branch with
    update-ref and the old value (a branch moved meanwhile is never overwritten). Objects
    written before a refusal are unreachable, left to git's garbage collection.
    """
    target = planned.target
    message = target.message if target.message is not None else default_message
    written = payload(files, target)
    scan_commit(scanner, target, message, written, typed)
    git = _Git(repo)
    tree = _write_tree(git, list(planned.kept), written)
    parent = planned.parent
    env = _identity_env(target.identity or DEFAULT_IDENTITY)
    if parent is not None and git.text("rev-parse", f"{parent}^{{tree}}") == tree:
        sha, changed = parent, False  # nothing changed: no empty commit
    else:
        args = ["commit-tree", "--no-gpg-sign", tree] + (["-p", parent] if parent else [])
        sha = git.text(*args, env=env, input=message.rstrip("\n").encode() + b"\n")
        changed = True
    if sha != planned.local:
        _move_branch(git, target.branch, sha, planned.local, env)
    result: dict[str, Any] = {
        "commit": sha,
        "branch": target.branch,
        "changed": changed,
        "parent": parent,
        "prefix": target.prefix or None,
        "replaced_history": planned.replaced_history,
        "pushed": False,
    }
    if target.push:
        assert planned.remote is not None
        _push(git, planned.remote, target.branch, force=planned.replaced_history)
        result.update(pushed=True, remote=planned.remote)
    result["next"] = _next_step(target, planned.remote)
    return result


def _move_branch(git: _Git, branch: str, sha: str, old: str | None, env: dict[str, str]) -> None:
    """Point the branch at `sha` if it still points at `old` (update-ref checks it)."""
    ref = f"refs/heads/{branch}"
    if ref in _checked_out(git):  # checked out while the site was being built
        raise Conflict("the branch is checked out in a work tree", code="branch_checked_out")
    args = ("--no-deref", "-m", "loopx publish", ref, sha, old or "")
    update = git.run("update-ref", *args, env=env)
    if update.returncode != 0:
        raise Conflict(
            "git update-ref failed: the branch moved during the publish, or another git "
            "process holds its lock; nothing was changed, run the publish again",
            code="git_failed",
        )


def _next_step(target: BranchTarget, remote: str | None) -> str:
    """What the user does next: turn on Pages after a push, else push."""
    if target.push:
        where = f"/{target.prefix}/" if target.prefix else "/"
        return (
            f"on GitHub: Settings > Pages > Deploy from a branch: {target.branch}, folder / "
            f"(root); the pages are at {where}"
        )
    if remote is not None:
        return f"git push {remote} {target.branch}"
    return f"git remote add origin URL && git push origin {target.branch}"


def _push(git: _Git, remote: str, branch: str, *, force: bool) -> None:
    refspec = f"{'+' if force else ''}refs/heads/{branch}:refs/heads/{branch}"
    proc = git.run("push", "--porcelain", remote, refspec)
    if proc.returncode != 0:
        # Only git's fixed wording of a refusal is repeated, never the remote's own text.
        reason = re.search(rb"\t\[rejected\] \(([a-z -]{1,40})\)", proc.stdout)
        why = reason[1].decode() if reason else None
        raise Conflict(
            f"git push failed (exit {proc.returncode})"
            + (f": {why}" if why else "")
            + (" (git fetch the branch, then publish again)" if why == "fetch first" else ""),
            code="push_failed",
            reason=why,
        )
