"""`loopx publish --git-branch` in scratch git repositories.

The repository under test has a `main` with private history (a private file, a private commit
message, a private author), and the demo project committed. Each test checks what is
reachable from the published branch (`git rev-list --objects`), and that the checked-out
branch, the index and the work tree are left byte for byte as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopx.build.artifacts import Artifact, Site
from loopx.build.boundary import Forbidden, scan_public
from loopx.engine.commands import AddTodo
from loopx.engine.demo import REV_NEW, create_demo
from loopx.store.filestore import FileStore
from tests.conftest import T0, make_ctx, run_cli

PRIVATE_MESSAGE = "PRIVATE-MESSAGE-CANARY: acquisition of Example Corp"
PRIVATE_FILE = b"PRIVATE-BLOB-CANARY: the unreleased roadmap\n"
PRIVATE_AUTHOR = ("Private Person", "private.person@corp.example")
NO_SIGNING = ("-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false")  # whatever ~/.gitconfig says
DEPLOYER = {"NAME": "Docs Deployer", "EMAIL": "docs@example.org"}
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def git(repo: Path, *args: str, input: bytes | None = None) -> str:
    name, email = PRIVATE_AUTHOR
    proc = subprocess.run(
        [
            "git",
            "-c",
            f"user.name={name}",
            "-c",
            f"user.email={email}",
            *NO_SIGNING,
            "-C",
            str(repo),
            *args,
        ],
        capture_output=True,
        input=input,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    )
    return proc.stdout.decode().strip()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project as a git repository whose `main` holds private history."""
    repo = tmp_path_factory.mktemp("repo") / "proj"
    create_demo(repo)
    git(repo, "init", "-q", "-b", "main")
    (repo / "notes").mkdir()
    (repo / "notes/roadmap.txt").write_bytes(PRIVATE_FILE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", PRIVATE_MESSAGE)
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "Second private commit")
    git(repo, "config", "user.email", PRIVATE_AUTHOR[1])  # a configured identity to avoid
    git(repo, "config", "user.name", PRIVATE_AUTHOR[0])
    (repo / "scratch.txt").write_text("an uncommitted change\n")  # a dirty work tree
    (repo / "README.md").write_text("project, edited\n")
    git(repo, "add", "README.md")  # and a staged change in the index
    return repo


@pytest.fixture
def repo(tmp_path: Path, template: Path) -> Path:
    copy = tmp_path / "proj"
    shutil.copytree(template, copy, symlinks=True)
    return copy


def publish(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    result = run_cli(
        ["publish", "--root", str(repo), "--head", REV_NEW, "--format", "json", *args],
        env={"LOOPX_PUBLISH_IDENTITY": None, **(env or {})},
    )
    return result.exit_code, json.loads(result.stdout), result.stderr


def published(repo: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    code, data, err = publish(repo, *args, env=env)
    assert code == 0, data
    return data


def refused(repo: Path, code: str, exit_code: int, *args: str) -> dict:
    status, data, _ = publish(repo, *args)
    assert status == exit_code, data
    assert data["error"]["code"] == code, data
    return data


def snapshot(repo: Path, published_branches: tuple[str, ...] = ("gh-pages",)) -> dict[str, bytes]:
    """The checked-out state: work tree files, the index, HEAD and every ref but the
    published branch.
    (`.loopx/cache` is the ledger's snapshot cache, ignored by git and rebuilt at will.)"""
    out = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".loopx/cache/")):
            out[rel] = path.read_bytes()
    for rel in (".git/index", ".git/HEAD"):
        out[rel] = (repo / rel).read_bytes()
    for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        name, sha = line.split()
        if name.rsplit("/", 1)[-1] not in published_branches:  # (and its remote copies)
            out[name] = sha.encode()
    # (--no-optional-locks: a plain `git status` would refresh the index it is checking)
    out["status"] = git(repo, "--no-optional-locks", "status", "--porcelain").encode()
    return out


def objects(repo: Path, *revs: str) -> set[str]:
    listed = git(repo, "rev-list", "--objects", *revs).splitlines()
    return {line.split()[0] for line in listed}


def assert_nothing_private(repo: Path, branch: str, since: str | None = None) -> None:
    """Nothing of `main`'s history reaches `branch`: no commit, no tree, no blob (but the
    empty blob, which is everyone's), no message, no author; and every commit loopx made
    (after `since`, the site's own earlier history) is by the neutral identity."""
    shared = objects(repo, branch) & objects(repo, "main")
    assert shared <= {EMPTY_BLOB}, shared
    private_blob = git(repo, "hash-object", "--stdin", input=PRIVATE_FILE)
    assert private_blob not in objects(repo, branch)
    log = git(repo, "log", "--format=%an %ae %cn %ce %B", branch)
    assert "PRIVATE" not in log and PRIVATE_AUTHOR[1] not in log and PRIVATE_AUTHOR[0] not in log
    mine = [branch] + ([f"^{since}"] if since else [])
    for line in git(repo, "log", "--format=%an <%ae>|%cn <%ce>", *mine).splitlines():
        assert line == "loopx <loopx@localhost>|loopx <loopx@localhost>"


def files_on(repo: Path, ref: str) -> dict[str, bytes]:
    names = git(repo, "ls-tree", "-r", "--name-only", ref).splitlines()
    return {
        n: subprocess.run(
            ["git", "-C", str(repo), "cat-file", "blob", f"{ref}:{n}"], capture_output=True
        ).stdout
        for n in names
    }


def test_the_first_publish_is_an_orphan_with_only_public_files(repo: Path) -> None:
    before = snapshot(repo)
    data = published(repo, "--git-branch", "gh-pages")
    commit = data["commit"]
    assert git(repo, "rev-parse", "gh-pages") == commit
    assert git(repo, "rev-list", "--parents", "-n1", commit) == commit  # no parent
    files = files_on(repo, "gh-pages")
    assert "index.html" in files and "goals/launch/status.json" in files
    assert files[".nojekyll"] == b""
    assert not any(p.startswith(("team/", "goals/docs", "goals/security-review")) for p in files)
    listing = json.loads(files[".loopx-published"])
    assert listing["schema"] == "loopx.published/v1"  # the shape `publish --to` writes
    assert listing["files"] == {
        p: {"sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)}
        for p, d in files.items()
        if p != ".loopx-published"
    }
    assert_nothing_private(repo, "gh-pages")
    assert snapshot(repo) == before
    assert data["changed"] and data["parent"] is None and data["next"].endswith("gh-pages")
    # The commit time comes from loopx's clock (LOOPX_NOW), not the machine's.
    assert git(repo, "log", "-1", "--format=%aI %cI", "gh-pages") == (
        "2026-03-01T12:00:00+00:00 2026-03-01T12:00:00+00:00"
    )


def test_a_later_publish_has_the_previous_publish_as_its_only_parent(repo: Path) -> None:
    first = published(repo, "--git-branch", "gh-pages")["commit"]
    assert published(repo, "--git-branch", "gh-pages")["changed"] is False  # no empty commit
    assert git(repo, "rev-parse", "gh-pages") == first
    ctx = make_ctx(FileStore(repo))
    from loopx.engine import todos

    todos.add_todo(
        ctx, AddTodo(goal_id="launch", title="Announce the release", visibility="public")
    )
    before = snapshot(repo)
    second = published(repo, "--git-branch", "gh-pages")
    assert second["changed"] and second["parent"] == first
    assert git(repo, "rev-list", "--parents", "-n1", "gh-pages").split() == [
        second["commit"],
        first,
    ]
    assert_nothing_private(repo, "gh-pages")
    assert snapshot(repo) == before


def test_a_branch_created_from_main_is_refused_then_replaced_with_overwrite(repo: Path) -> None:
    git(repo, "branch", "gh-pages")  # the common first step that used to publish all of main
    main_head = git(repo, "rev-parse", "main")
    before = snapshot(repo)
    refused(repo, "branch_shares_history", 4, "--git-branch", "gh-pages")
    assert git(repo, "rev-parse", "gh-pages") == main_head
    assert snapshot(repo) == before
    # --prefix does not lift it: keeping "the rest" would keep main's files.
    refused(repo, "branch_shares_history", 4, "--git-branch", "gh-pages", "--prefix", "status")
    data = published(repo, "--git-branch", "gh-pages", "--overwrite")
    assert data["replaced_history"] and data["parent"] is None
    assert git(repo, "rev-list", "--count", "gh-pages") == "1"
    assert "notes/roadmap.txt" not in files_on(repo, "gh-pages")
    assert_nothing_private(repo, "gh-pages")
    assert snapshot(repo) == before


def test_shared_history_with_a_tag_or_a_remote_branch_is_refused(repo: Path) -> None:
    lone = _commit(repo, {"private.txt": PRIVATE_FILE}, "a private release")
    git(repo, "tag", "v0.1-private", lone)
    git(repo, "branch", "pages", lone)
    refused(repo, "branch_shares_history", 4, "--git-branch", "pages")
    git(repo, "tag", "-d", "v0.1-private")
    git(repo, "update-ref", "refs/remotes/origin/release", lone)
    refused(repo, "branch_shares_history", 4, "--git-branch", "pages")
    # The branch's own copy on a remote is not "another branch".
    git(repo, "update-ref", "-d", "refs/remotes/origin/release")
    git(repo, "update-ref", "refs/remotes/origin/pages", lone)
    assert published(repo, "--git-branch", "pages", "--overwrite")["parent"] == lone


def test_checked_out_branches_are_never_touched(repo: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(second))
    (second / "wip.txt").write_text("work in progress\n")
    before, before_second = (
        snapshot(repo),
        {p.name: p.read_bytes() for p in second.iterdir() if p.is_file()},
    )
    feature = git(repo, "rev-parse", "feature")
    refused(repo, "branch_checked_out", 4, "--git-branch", "main")
    refused(repo, "branch_checked_out", 4, "--git-branch", "feature")
    refused(repo, "branch_checked_out", 4, "--git-branch", "main", "--overwrite")
    assert git(repo, "rev-parse", "feature") == feature
    assert snapshot(repo) == before
    assert {p.name: p.read_bytes() for p in second.iterdir() if p.is_file()} == before_second
    # A branch checked out nowhere is fine, from any work tree.
    assert published(repo, "--git-branch", "gh-pages")["changed"]


def test_symbolic_full_and_invalid_branch_names_are_refused(repo: Path) -> None:
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    before = snapshot(repo)
    for name in ("HEAD", "@", "@{-1}", "main@{upstream}", "ORIG_HEAD", "FETCH_HEAD", "alias"):
        refused(repo, "branch_symbolic", 2, "--git-branch", name)
    for name in ("refs/heads/main", "refs/heads/gh-pages", "refs/tags/x"):
        refused(repo, "branch_full_ref", 2, "--git-branch", name)
    for name in ("a..b", "-x", "x.lock", "a b", "a~1", "a:b", "", "x" * 300, "a\x01b", "/x"):
        refused(repo, "invalid_branch", 2, "--git-branch", name)
    assert snapshot(repo) == before
    refs = git(repo, "for-each-ref", "--format=%(refname)").splitlines()
    assert refs == ["refs/heads/alias", "refs/heads/main"]


def _commit(repo: Path, files: dict[str, bytes], message: str, base: str | None = None) -> str:
    """A commit made with plumbing and a scratch index (the repository's index untouched):
    `base`'s tree (if any) with `files` added, and `base` as parent."""
    env = {
        **os.environ,
        "GIT_INDEX_FILE": str(repo.parent / "scratch-index"),
        **{f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in DEPLOYER.items()},
    }
    Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)

    def run(*args: str, input: bytes | None = None) -> str:
        return (
            subprocess.run(
                ["git", "-C", str(repo), *args],
                input=input,
                env=env,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )

    if base:
        run("read-tree", base)
    for path, data in files.items():
        sha = run("hash-object", "-w", "--stdin", input=data)
        run("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")
    tree = run("write-tree")
    return run("commit-tree", "--no-gpg-sign", tree, *(["-p", base] if base else []), "-m", message)


def _mkdocs_site(repo: Path) -> str:
    """An existing Pages branch as `mkdocs gh-deploy` leaves it: its own history."""
    files = {
        "index.html": b"<h1>Docs</h1>\n",
        ".nojekyll": b"",
        "CNAME": b"docs.example.org\n",
        "assets/app.css": b"body{}\n",
        "404.html": b"<h1>Not found</h1>\n",
    }
    commit = _commit(repo, files, "Deployed 1a2b3c with MkDocs version: 1.6.0")
    git(repo, "update-ref", "refs/heads/gh-pages", commit)
    return commit


def test_an_existing_pages_site_is_kept_with_prefix_and_refused_without(repo: Path) -> None:
    docs = _mkdocs_site(repo)
    docs_files = files_on(repo, "gh-pages")
    before = snapshot(repo)
    data = refused(repo, "branch_foreign_files", 4, "--git-branch", "gh-pages")
    assert data["error"]["details"]["count"] == 5
    assert git(repo, "rev-parse", "gh-pages") == docs
    first = published(repo, "--git-branch", "gh-pages", "--prefix", "status")
    assert first["parent"] == docs  # the site's own history continues
    files = files_on(repo, "gh-pages")
    assert {p: files[p] for p in docs_files} == docs_files  # every other byte kept
    assert "status/index.html" in files and "status/.loopx-published" in files
    assert "status/.nojekyll" not in files and "status/CNAME" not in files
    assert_nothing_private(repo, "gh-pages", since=docs)
    # A later publish replaces only what the previous one wrote.
    ctx = make_ctx(FileStore(repo))
    from loopx.engine import todos

    todos.add_todo(ctx, AddTodo(goal_id="launch", title="Write the changelog", visibility="public"))
    before = snapshot(repo)
    second = published(repo, "--git-branch", "gh-pages", "--prefix", "status/")
    assert second["parent"] == first["commit"]
    assert {p: v for p, v in files_on(repo, "gh-pages").items() if p in docs_files} == docs_files
    assert snapshot(repo) == before


def test_a_foreign_file_in_the_prefix_is_refused_unless_overwrite(repo: Path) -> None:
    _mkdocs_site(repo)
    published(repo, "--git-branch", "gh-pages", "--prefix", "status")
    # Someone adds their own file inside loopx's folder.
    tip = _commit(repo, {"status/notes.html": b"mine\n"}, "hand edit", base="gh-pages")
    git(repo, "update-ref", "refs/heads/gh-pages", tip)
    data = refused(
        repo, "branch_foreign_files", 4, "--git-branch", "gh-pages", "--prefix", "status"
    )
    assert data["error"]["details"]["count"] == 1
    # A file standing where the prefix folder must go is foreign as well.
    refused(repo, "branch_foreign_files", 4, "--git-branch", "gh-pages", "--prefix", "index.html/x")
    done = published(repo, "--git-branch", "gh-pages", "--prefix", "status", "--overwrite")
    assert done["parent"] == tip
    after = files_on(repo, "gh-pages")
    assert "status/notes.html" not in after and after["index.html"] == b"<h1>Docs</h1>\n"


def test_overwrite_without_prefix_replaces_the_tree_but_keeps_the_sites_history(
    repo: Path,
) -> None:
    docs = _mkdocs_site(repo)
    data = published(
        repo, "--git-branch", "gh-pages", "--overwrite", "--cname", "Status.Example.org"
    )
    assert data["parent"] == docs and not data["replaced_history"]
    files = files_on(repo, "gh-pages")
    assert "assets/app.css" not in files and "404.html" not in files
    assert files["CNAME"] == b"status.example.org\n"
    assert "CNAME" in json.loads(files[".loopx-published"])["files"]
    # Now the branch is loopx's: the next publish needs no flag, and may drop the CNAME.
    again = published(repo, "--git-branch", "gh-pages", "--no-nojekyll")
    assert ".nojekyll" not in files_on(repo, "gh-pages") and "CNAME" not in files_on(
        repo, "gh-pages"
    )
    assert again["parent"] == data["commit"]


def test_push_lands_in_a_bare_remote_and_nothing_private_goes_with_it(
    repo: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    before = snapshot(repo)
    # A real `loopx` process, as a user runs it.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopx",
            "publish",
            "--root",
            str(repo),
            "--head",
            REV_NEW,
            "--git-branch",
            "gh-pages",
            "--push",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "LOOPX_NOW": T0},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("published ") and lines[1] == "pushed to origin"
    assert lines[2].startswith("next: on GitHub: Settings > Pages")
    local = git(repo, "rev-parse", "gh-pages")
    assert git(remote, "rev-parse", "gh-pages") == local
    assert git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/gh-pages"
    remote_objects = {
        line.split()[0] for line in git(remote, "rev-list", "--objects", "--all").splitlines()
    }
    assert remote_objects & objects(repo, "main") <= {EMPTY_BLOB}
    assert snapshot(repo) == before
    # A clone that has only origin/gh-pages continues the remote's history.
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-D", "gh-pages")
    from loopx.engine import todos

    todos.add_todo(
        make_ctx(FileStore(repo)), AddTodo(goal_id="launch", title="Tweet it", visibility="public")
    )
    data = published(repo, "--git-branch", "gh-pages", "--push")
    assert data["parent"] == local and git(remote, "rev-parse", "gh-pages") == data["commit"]


def test_push_refusals_name_the_reason_not_the_remote(repo: Path, tmp_path: Path) -> None:
    refused(repo, "unknown_remote", 3, "--git-branch", "gh-pages", "--push")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "upstream", str(remote))
    refused(repo, "unknown_remote", 3, "--git-branch", "gh-pages", "--push", "--remote", "nope")
    refused(repo, "unknown_remote", 3, "--git-branch", "gh-pages", "--remote", "-bad")
    # The remote has a gh-pages this clone has not fetched: a plain push is rejected.
    other = tmp_path / "other"
    shutil.copytree(repo, other, symlinks=True)
    # (the same ledger, clock and identity make the very same commit: another message)
    published(
        other, "--git-branch", "gh-pages", "--push", "--remote", "upstream", "--message", "Other"
    )
    data = refused(
        repo, "push_failed", 4, "--git-branch", "gh-pages", "--push", "--remote", "upstream"
    )
    assert data["error"]["details"]["reason"] == "fetch first"
    assert str(remote) not in json.dumps(data)


@pytest.mark.parametrize(
    "message",
    [
        "deploy ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "deployed by jane.doe@corp.example",
        "built in /home/jane/work/proj",
        "Done: Documentation pass",  # a team-only goal title of the demo's ledger
        "Write the threat model first",  # a private todo title (in the private blob store)
        "see Write%20the%20threat%20model",  # … URL-encoded
    ],
)
def test_a_message_with_anything_non_public_is_refused(repo: Path, message: str) -> None:
    before = snapshot(repo)
    status, data, err = publish(repo, "--git-branch", "gh-pages", "--message", message)
    assert status == 7 and data["error"]["code"] == "public_boundary_violation"
    assert message not in json.dumps(data) and message not in err
    assert data["error"]["details"]["findings"][0]["path"] == "(commit message)"
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gh-pages") == ""
    assert snapshot(repo) == before


def test_the_message_and_identity_are_configurable(repo: Path) -> None:
    data = published(
        repo,
        "--git-branch",
        "gh-pages",
        "--message",
        "Status page for 0.1",
        "--identity",
        "Status Bot <status-bot@users.noreply.github.com>",
    )
    log = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", data["commit"])
    assert log == (
        "Status Bot <status-bot@users.noreply.github.com>|"
        "Status Bot <status-bot@users.noreply.github.com>|Status page for 0.1"
    )
    (repo / "x").write_text("")
    env_data = published(
        repo,
        "--git-branch",
        "pages2",
        env={"LOOPX_PUBLISH_IDENTITY": "Pages <pages@example.org>"},
    )
    assert git(repo, "log", "-1", "--format=%an <%ae>", env_data["commit"]) == (
        "Pages <pages@example.org>"
    )
    for bad in ("no email", "<a@b.c>", "A <a@b.c> extra", "A\n <a@b.c>"):
        refused(repo, "invalid_identity", 2, "--git-branch", "gh-pages", "--identity", bad)
    status, data2, _ = publish(
        repo, "--git-branch", "gh-pages", "--identity", "Jane in /home/jane <jane@example.org>"
    )
    assert status == 7 and data2["error"]["details"]["findings"][0]["path"] == "(commit identity)"


def test_other_option_refusals(repo: Path, tmp_path: Path) -> None:
    for prefix in ("../up", "a/../b", ".git", "a/.git/b", "a b", "a//b"):
        refused(repo, "invalid_prefix", 2, "--git-branch", "gh-pages", "--prefix", prefix)
    for cname in ("not a domain", "http://x.org", "localhost", "x" * 300 + ".org"):
        refused(repo, "invalid_cname", 2, "--git-branch", "gh-pages", "--cname", cname)
    refused(
        repo, "usage_error", 2, "--git-branch", "gh", "--prefix", "s", "--cname", "a.example.org"
    )
    for flag in (["--prefix", "s"], ["--push"], ["--message", "m"], ["--no-nojekyll"]):
        refused(repo, "usage_error", 2, "--to", str(tmp_path / "out"), *flag)
    assert not (tmp_path / "out").exists()
    refused(repo, "empty_text", 2, "--git-branch", "gh-pages", "--message", "  ")
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    refused(plain, "not_a_git_repository", 2, "--git-branch", "gh-pages")
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gh-pages") == ""


def test_a_public_only_build_scans_its_manifest() -> None:
    """In a public-only build the manifest sits beside nothing but the public folder, so the
    whole folder may be served: it is scanned like a public file (not in a team build)."""
    leak = b'{"note": "mail jane.doe@corp.example"}\n'
    site = Site()
    site.add(Artifact("public/index.html", b"<h1>Status</h1>\n", "public"))
    site.add(Artifact("manifest.json", leak, None))
    findings = scan_public(site, Forbidden(frozenset(), frozenset()))
    assert [(f["path"], f["kind"]) for f in findings] == [("manifest.json", "email")]
    site.add(Artifact("team/index.html", b"<h1>Team</h1>\n", "team"))
    assert scan_public(site, Forbidden(frozenset(), frozenset())) == []


def test_the_listing_lists_every_file_with_its_bytes(repo: Path) -> None:
    data = published(repo, "--git-branch", "gh-pages")
    files = files_on(repo, data["commit"])
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopx",
            "build",
            "--root",
            str(repo),
            "--head",
            REV_NEW,
            "--audience",
            "public",
            "--out",
            str(repo.parent / "site"),
        ],
        capture_output=True,
        env={**os.environ, "LOOPX_NOW": T0},
    )
    assert build.returncode == 0, build.stderr
    public = repo.parent / "site/public"
    for path in public.rglob("*"):
        if path.is_file():
            rel = path.relative_to(public).as_posix()
            assert hashlib.sha256(files[rel]).digest() == hashlib.sha256(path.read_bytes()).digest()


def test_files_any_loopx_publish_wrote_are_loopx_files(repo: Path) -> None:
    """A publish to the root after one into a prefix folder replaces that folder too: its
    listing says loopx wrote it. A hand-made file beside them is still refused."""
    published(repo, "--git-branch", "gh-pages", "--prefix", "status")
    root = published(repo, "--git-branch", "gh-pages")
    files = files_on(repo, "gh-pages")
    assert root["parent"] is not None and not any(p.startswith("status/") for p in files)
    tip = _commit(repo, {"status/notes.html": b"mine\n"}, "hand edit", base="gh-pages")
    git(repo, "update-ref", "refs/heads/gh-pages", tip)
    data = refused(repo, "branch_foreign_files", 4, "--git-branch", "gh-pages")
    assert data["error"]["details"]["count"] == 1


def test_the_project_configuration_fills_in_the_flags_and_flags_win(
    repo: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "upstream", str(remote))
    (repo / "loopx.toml").write_text(
        '[publish]\ngit_branch = "pages"\nprefix = "status"\n'
        'remote = "upstream"\npush = true\nidentity = "Status Bot <bot@example.org>"\n'
    )
    data = published(repo, "--no-push")  # the flag beats push = true
    assert (data["branch"], data["prefix"], data["pushed"]) == ("pages", "status", False)
    files = files_on(repo, "pages")
    assert "status/index.html" in files and "status/.nojekyll" not in files
    author = git(repo, "log", "-1", "--format=%an <%ae>", "pages")
    assert author == "Status Bot <bot@example.org>"
    pushed = published(repo)
    assert pushed["pushed"] and pushed["remote"] == "upstream"
    assert git(remote, "rev-parse", "pages") == git(repo, "rev-parse", "pages")
    with (repo / "loopx.toml").open("a") as fh:
        fh.write('cname = "status.example.org"\nnojekyll = false\n')
    refused(repo, "usage_error", 2)  # a CNAME belongs at the root, not under a prefix
    other = published(repo, "--git-branch", "gh-pages", "--prefix", "", "--no-push")
    assert other["branch"] == "gh-pages" and not other["prefix"]
    files = files_on(repo, "gh-pages")
    assert files["CNAME"] == b"status.example.org\n" and ".nojekyll" not in files
    # --to publishes into a folder: the [publish] settings are not used (and not misuse).
    folder = published(repo, "--to", str(tmp_path / "out"))
    assert folder["files"] > 0 and (tmp_path / "out" / "index.html").is_file()
    (repo / "loopx.toml").write_text('[publish]\nremote = "-x"\n')
    assert refused(repo, "invalid_config", 2, "--git-branch", "gh-pages")["error"]["message"] == (
        "loopx.toml: publish.remote must be a remote name"
    )


def test_a_page_edited_by_hand_is_no_longer_loopx_s(repo: Path) -> None:
    """The listing records each file's sha256: a page changed on the branch since is kept
    from being replaced (unless --overwrite), like a file loopx never wrote."""
    published(repo, "--git-branch", "gh-pages")
    page = files_on(repo, "gh-pages")["index.html"]
    edited = _commit(repo, {"index.html": page + b"<!-- fixed a typo -->\n"}, "edit", "gh-pages")
    git(repo, "update-ref", "refs/heads/gh-pages", edited)
    data = refused(repo, "branch_foreign_files", 4, "--git-branch", "gh-pages")
    assert data["error"]["details"]["count"] == 1
    # A listing that is not loopx's (not its schema) vouches for nothing.
    forged = _commit(repo, {".loopx-published": b"index.html\n"}, "forged", "gh-pages")
    git(repo, "update-ref", "refs/heads/gh-pages", forged)
    assert (
        refused(repo, "branch_foreign_files", 4, "--git-branch", "gh-pages")["error"]["details"][
            "count"
        ]
        == len(files_on(repo, "gh-pages")) - 1
    )
    assert published(repo, "--git-branch", "gh-pages", "--overwrite")["parent"] == forged
    assert published(repo, "--git-branch", "gh-pages")["changed"] is False


def _readme_block(after: str) -> str:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    start = readme.index("```bash\n", readme.index(after)) + len("```bash\n")
    return readme[start : readme.index("```\n", start)]


def test_the_readme_publishing_commands_work_as_written(repo: Path, tmp_path: Path) -> None:
    """The README's gh-pages block, run verbatim by bash (real `loopx` and `git` processes)
    in the scratch repository, with a bare repository as `origin`."""
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    block = _readme_block("**From a `gh-pages` branch")
    assert block.count("loopx publish") == 3
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "LOOPX_NOW": T0,
    }
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", block],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "next: git push origin gh-pages" in proc.stdout
    local = git(repo, "rev-parse", "gh-pages")
    files = files_on(repo, "gh-pages")
    assert files["CNAME"] == b"status.example.org\n" and "index.html" in files
    assert "status/index.html" in files
    # the last publish (into status/) was not pushed: the remote has the one before it
    assert git(remote, "rev-parse", "gh-pages") == git(repo, "rev-parse", "gh-pages~1")
    assert git(repo, "rev-list", "--count", local) == "3"
    assert_nothing_private(repo, "gh-pages")
