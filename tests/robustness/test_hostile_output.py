"""A hostile output folder: every command that writes output into it, tried as an attacker
who controls the checkout would.

The corpus: output folders and files built from symbolic links (to folders and files outside
the project), FIFOs, forged manifests (entries naming files outside, files in `.loopx/`, files
whose hash differs), forged staging journals, a user's own files that no manifest lists,
`--out .` (the project root itself) and `--write` into `.loopx/`. It is run through `build`,
`build --check`, `build --overwrite`, `workbench --write` and `publish --to`.

A sentinel tree OUTSIDE the project is hashed before and after every test (every file, link
and folder): no byte of it may change, and no output may contain its marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopx.engine.demo import REV_NEW
from loopx.store import fsio
from tests.conftest import run_cli

MARKER = b"SENTINEL-OUTSIDE-THE-PROJECT-7f3a"
LOOPX = shutil.which("loopx") or str(Path(sys.executable).with_name("loopx"))


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under `folder`, by `lstat`: files by hash, links by target, folders."""
    seen: dict[str, str] = {}
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(base) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                seen[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """The sentinel tree: what must never change. It looks like a build folder on purpose."""
    folder = tmp_path / "outside"
    for rel in (
        "secret.txt",
        "victim.html",
        "team/index.html",
        "team/goals/docs/index.html",
        "goals/launch/index.html",
    ):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(MARKER + b" " + rel.encode())
    (folder / "staging/files/public").mkdir(parents=True)
    (folder / "staging/files/public/index.html").write_bytes(MARKER)
    journal = {"format": 2, "write": {"public/index.html": [sha(MARKER), None]}, "remove": {}}
    (folder / "staging/JOURNAL.json").write_text(json.dumps(journal))  # a valid journal
    before = snapshot(folder)
    yield folder
    assert snapshot(folder) == before, "a byte outside the project changed"


@pytest.fixture
def proj(tmp_path: Path, demo_root: Path, outside: Path) -> Iterator[Path]:
    root = tmp_path / "proj"
    shutil.copytree(demo_root, root)
    yield root
    for base, _, files in os.walk(root):  # os.walk follows no link
        for name in files:
            path = Path(base) / name
            if not path.is_symlink() and path.is_file():
                assert MARKER not in path.read_bytes(), f"{path} holds bytes from outside"


def loopx(root: Path, *args: str) -> Any:
    """`loopx ARGS` run in the project folder (relative paths are the project's)."""
    result = run_cli([*args, "--root", str(root), "--format", "json"], cwd=root)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def build(root: Path, out: Path | str, *extra: str) -> Any:
    return loopx(root, "build", "--out", str(out), "--head", REV_NEW, *extra)


def error(result: Any) -> str:
    code: str = result.json()["error"]["code"]
    return code


def user_files(root: Path) -> dict[str, str]:
    """Everything in the project but loopx's own caches (locks, build memos)."""
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".loopx/cache")}


def ledgers(root: Path) -> dict[str, str]:
    return snapshot(root / ".loopx" / "goals")


# -- links ------------------------------------------------------------------------------------


def test_a_linked_team_folder_is_refused_by_every_command(proj: Path, outside: Path) -> None:
    site = proj / "site"
    assert build(proj, site).exit_code == 0
    shutil.rmtree(site / "team")
    (site / "team").symlink_to(outside)
    public = snapshot(site / "public")
    for extra in ((), ("--overwrite",), ("--force",), ("--check",)):
        result = build(proj, site, *extra)
        assert result.exit_code == 2, (extra, result.stdout)
        assert error(result) == "unsafe_output_path"
        assert result.json()["error"]["details"]["path"].endswith("team")
    assert snapshot(site / "public") == public  # refused before anything was written
    assert not (site / ".loopx-staging").exists()


def test_links_deeper_in_or_in_front_of_the_folder_are_refused(proj: Path, outside: Path) -> None:
    (proj / "site").symlink_to(outside)  # the output folder itself
    assert error(build(proj, "site")) == "unsafe_output_path"
    assert error(build(proj, proj / "site")) == "unsafe_output_path"
    (proj / "site").unlink()
    (proj / "docs").symlink_to(outside)  # a folder between the project and the output
    assert error(build(proj, proj / "docs" / "site")) == "unsafe_output_path"
    fresh = proj / "fresh"  # a folder with a link planted where a goal's folder will go
    (fresh / "public" / "goals").mkdir(parents=True)
    (fresh / "public" / "goals" / "launch").symlink_to(outside / "goals" / "launch")
    assert error(build(proj, fresh)) == "unsafe_output_path"
    (fresh / "public" / "goals" / "launch").unlink()
    (fresh / "public" / "index.html").symlink_to(outside / "victim.html")  # a linked file
    assert error(build(proj, fresh)) == "unsafe_output_path"
    assert error(build(proj, fresh, "--overwrite")) == "unsafe_output_path"


def test_a_fifo_in_the_output_folder_never_hangs_a_build(proj: Path) -> None:
    site = proj / "site"
    (site / "public").mkdir(parents=True)
    os.mkfifo(site / "public" / "index.html")
    os.mkfifo(site / "manifest.json")
    for extra in ((), ("--check",)):
        proc = subprocess.run(
            [LOOPX, "build", "--root", str(proj), "--out", str(site), "--head", "none", *extra],
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 2 and b"unsafe_output_path" in proc.stderr, proc.stderr
        assert b"Traceback" not in proc.stderr


def test_a_planted_staging_folder_never_moves_files_from_outside(proj: Path, outside: Path) -> None:
    site = proj / "site"
    assert build(proj, site).exit_code == 0
    before = snapshot(site)
    (site / "public" / "index.html").unlink()  # what the planted journal would put there
    (site / ".loopx-staging").symlink_to(outside / "staging")
    assert build(proj, site).exit_code == 0
    assert snapshot(site) == before  # the link was dropped; nothing came through it


def test_a_forged_journal_does_no_more_than_a_build_could(proj: Path, outside: Path) -> None:
    site = proj / "site"
    assert build(proj, site).exit_code == 0
    (site / "public" / "notes.txt").write_bytes(b"a user's notes")
    (proj / "README.md").write_bytes(b"the project's readme")
    staging = site / ".loopx-staging"
    (staging / "files" / "public").mkdir(parents=True)
    (staging / "files" / "public" / "index.html").write_bytes(b"<p>forged</p>")
    (staging / "files" / "public" / "evil.html").write_bytes(b"<p>evil</p>")
    index = (site / "public" / "index.html").read_bytes()
    notes = (site / "public" / "notes.txt").read_bytes()
    journal = {
        "format": 2,
        # a staged file whose hash is not the journal's; a target the journal did not see
        "write": {
            "public/index.html": [sha(b"something else"), sha(index)],
            "public/evil.html": [sha(b"<p>evil</p>"), None],
        },
        # a user's file with the wrong hash; paths outside the folder with the right hash
        "remove": {
            "public/notes.txt": sha(b"not the notes"),
            "../outside/secret.txt": sha(MARKER + b" secret.txt"),
            "../README.md": sha(b"the project's readme"),
        },
    }
    (staging / "JOURNAL.json").write_text(json.dumps(journal))
    result = build(proj, site)
    assert result.exit_code == 0
    assert (site / "public" / "notes.txt").read_bytes() == notes
    assert (proj / "README.md").read_bytes() == b"the project's readme"
    assert (site / "public" / "index.html").read_bytes() == index
    assert not (site / "public" / "evil.html").exists()  # the plan named paths it may not
    assert not staging.exists()


# -- forged manifests -------------------------------------------------------------------------


def test_a_forged_manifest_deletes_only_files_a_build_wrote_as_they_were(
    proj: Path, outside: Path
) -> None:
    site = proj / "site"
    assert build(proj, site).exit_code == 0
    manifest = json.loads((site / "manifest.json").read_bytes())
    user = site / "public" / "notes.txt"
    user.write_bytes(b"a user's own notes")
    stale = site / "public" / "goals" / "old" / "index.html"
    stale.parent.mkdir()
    stale.write_bytes(b"<p>an old page of ours</p>")
    ledger = proj / ".loopx" / "goals" / "launch" / "ledger.jsonl"
    secret = outside / "secret.txt"
    forged = {
        "public/notes.txt": sha(b"not the user's notes"),  # the hash of something else
        "public/goals/old/index.html": sha(stale.read_bytes()),  # a real stale file of ours
        "../outside/secret.txt": sha(secret.read_bytes()),  # outside, right hash
        "../../outside/secret.txt": sha(secret.read_bytes()),
        "/etc/hostname": sha(b""),
        "team/../../.loopx/goals/launch/ledger.jsonl": sha(ledger.read_bytes()),
        "team/goals/x/.git/config": sha(b""),
    }
    for path, digest in forged.items():
        manifest["files"][path] = {"sha256": digest, "bytes": 18, "audience": "public"}
    manifest["files"]["public/goals/old/index.html"]["bytes"] = len(stale.read_bytes())
    (site / "manifest.json").write_text(json.dumps(manifest))
    before = ledgers(proj)
    result = build(proj, site)
    assert result.exit_code == 0, result.stdout
    data = result.json()
    assert data["removed"] == ["public/goals/old/index.html"]  # only the one that was ours
    assert not stale.exists() and not stale.parent.exists()
    assert user.read_bytes() == b"a user's own notes"
    assert sorted(data["kept"]) == sorted(set(forged) - {"public/goals/old/index.html"})
    assert ledgers(proj) == before
    text = run_cli(["build", "--root", str(proj), "--out", str(site), "--head", REV_NEW])
    assert text.exit_code == 0  # the forged manifest is gone: the next build is clean


def test_a_linked_folder_listed_in_the_manifest_is_never_followed_to_delete(
    proj: Path, outside: Path
) -> None:
    site = proj / "site"
    assert build(proj, site).exit_code == 0
    manifest = json.loads((site / "manifest.json").read_bytes())
    (site / "elsewhere").symlink_to(outside)
    target = outside / "team" / "index.html"
    manifest["files"]["public/elsewhere/team/index.html"] = {
        "sha256": sha(target.read_bytes()),
        "bytes": target.stat().st_size,
    }
    (site / "public" / "elsewhere").symlink_to(outside)
    (site / "manifest.json").write_text(json.dumps(manifest))
    text = run_cli(["build", "--root", str(proj), "--out", str(site), "--head", REV_NEW])
    assert text.exit_code == 0, text.stderr
    assert "kept 1 file(s)" in text.stdout and "public/elsewhere/team/index.html" in text.stdout


# -- files that are not ours ------------------------------------------------------------------


def test_build_into_the_project_root_never_clobbers_user_files(proj: Path) -> None:
    (proj / "public").mkdir()
    user = {
        "public/index.html": b"<h1>my own site</h1>",
        "public/style.css": b"body { color: hotpink }",
        "manifest.json": b'{"name": "a web app manifest"}',
        "README.md": b"# my project",
    }
    for rel, data in user.items():
        (proj / rel).write_bytes(data)
    before, store = user_files(proj), ledgers(proj)
    result = build(proj, ".")
    assert result.exit_code == 4, result.stdout
    err = result.json()["error"]
    assert err["code"] == "output_not_ours"
    assert {"public/index.html", "public/style.css", "manifest.json"} <= set(
        err["details"]["paths"]
    )
    assert user_files(proj) == before  # not one file written
    forced = build(proj, ".", "--overwrite")
    assert forced.exit_code == 0, forced.stdout
    assert (proj / "README.md").read_bytes() == b"# my project"
    assert ledgers(proj) == store
    assert (proj / "public" / "index.html").read_bytes() != user["public/index.html"]
    assert build(proj, ".").exit_code == 0  # now the manifest is ours
    assert build(proj, ".", "--check").exit_code == 0


def test_output_inside_dot_loopx_is_refused(proj: Path) -> None:
    before = ledgers(proj)
    for out in (proj / ".loopx", proj / ".loopx" / "site", proj / "x" / ".." / ".loopx" / "s"):
        result = build(proj, out, "--overwrite")
        assert error(result) == "output_inside_store", out
    for target in (
        proj / ".loopx" / "goals" / "launch" / "ledger.jsonl",
        proj / ".loopx" / "WORKBENCH.md",
    ):
        for extra in ((), ("--overwrite",)):
            result = loopx(proj, "workbench", "--goal-id", "launch", "--write", str(target), *extra)
            assert result.exit_code == 2 and error(result) == "output_inside_store"
    published = loopx(proj, "publish", "--to", str(proj / ".loopx" / "pub"), "--head", REV_NEW)
    assert error(published) == "output_inside_store"
    assert ledgers(proj) == before
    assert not (proj / ".loopx" / "site").exists() and not (proj / ".loopx" / "pub").exists()


def test_workbench_write_replaces_only_a_workbench(proj: Path, outside: Path) -> None:
    def write(target: Path, *extra: str) -> Any:
        return loopx(proj, "workbench", "--goal-id", "launch", "--write", str(target), *extra)

    docs = proj / "docs"
    assert write(docs / "WORKBENCH.md").exit_code == 0
    assert write(docs / "WORKBENCH.md").exit_code == 0  # ours: replaced
    readme = proj / "README.md"
    readme.write_bytes(b"# my project")
    result = write(readme)
    assert result.exit_code == 4 and error(result) == "output_not_ours"
    assert readme.read_bytes() == b"# my project"
    assert write(readme, "--overwrite").exit_code == 0
    assert readme.read_bytes().startswith(b"<!--")
    (docs / "linked.md").symlink_to(outside / "victim.html")
    (proj / "linkdir").symlink_to(outside)
    for target in (docs / "linked.md", proj / "linkdir" / "WORKBENCH.md"):
        for extra in ((), ("--overwrite",)):
            result = write(target, *extra)
            assert result.exit_code == 2 and error(result) == "unsafe_output_path", target
    assert (docs / "linked.md").is_symlink()
    os.mkfifo(docs / "fifo.md")
    assert error(write(docs / "fifo.md", "--overwrite")) == "unsafe_output_path"


def test_workbench_check_reads_no_link_and_waits_on_no_fifo(proj: Path, outside: Path) -> None:
    def check(target: Path) -> Any:
        return loopx(proj, "workbench", "--goal-id", "launch", "--check", str(target))

    docs = proj / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "linked.md").symlink_to(outside / "secret.txt")
    result = check(docs / "linked.md")
    assert result.exit_code == 2 and error(result) == "unsafe_path"
    assert MARKER.decode() not in result.stdout + result.stderr
    os.mkfifo(docs / "fifo.md")
    result = check(docs / "fifo.md")  # would block forever if the FIFO were opened for reading
    assert result.exit_code == 2 and error(result) == "unsafe_path"
    assert error(check(docs / "absent.md")) == "workbench_missing"


# -- publish --to -----------------------------------------------------------------------------


def test_publish_to_a_folder_follows_the_same_rules(proj: Path, outside: Path) -> None:
    def publish(dest: Path, *extra: str) -> Any:
        return loopx(proj, "publish", "--to", str(dest), "--head", REV_NEW, *extra)

    dest = proj / "pages"
    dest.mkdir()
    (dest / "index.html").write_bytes(b"<h1>the pages I had</h1>")
    (dest / "CNAME").write_bytes(b"status.example.org")
    result = publish(dest)
    assert result.exit_code == 4 and error(result) == "output_not_ours"
    assert result.json()["error"]["details"]["paths"] == ["index.html"]
    assert sorted(p.name for p in dest.iterdir()) == ["CNAME", "index.html"]
    assert publish(dest, "--overwrite").exit_code == 0
    assert publish(dest).exit_code == 0  # now the listing says the files are ours
    listing = json.loads((dest / ".loopx-published").read_bytes())
    assert listing["schema"] == "loopx.published/v1" and "index.html" in listing["files"]
    assert (dest / "CNAME").read_bytes() == b"status.example.org"
    # a forged listing naming files outside, and a linked goals folder
    listing["files"]["../outside/secret.txt"] = {
        "sha256": sha((outside / "secret.txt").read_bytes()),
        "bytes": (outside / "secret.txt").stat().st_size,
    }
    (dest / ".loopx-published").write_text(json.dumps(listing))
    assert publish(dest).json()["kept"] == ["../outside/secret.txt"]
    # publishing into the project root: a listing naming a project file with its right hash
    (proj / "src").mkdir()
    (proj / "src" / "main.py").write_bytes(b"print('hello')\n")
    assert publish(proj, "--overwrite").exit_code == 0
    rooted = json.loads((proj / ".loopx-published").read_bytes())
    rooted["files"]["src/main.py"] = {"sha256": sha(b"print('hello')\n"), "bytes": 15}
    (proj / ".loopx-published").write_text(json.dumps(rooted))
    assert publish(proj).json()["kept"] == ["src/main.py"]
    assert (proj / "src" / "main.py").read_bytes() == b"print('hello')\n"
    shutil.rmtree(dest / "goals")
    (dest / "goals").symlink_to(outside / "goals")
    for extra in ((), ("--overwrite",)):
        assert error(publish(dest, *extra)) == "unsafe_output_path"
    (proj / "linked-pages").symlink_to(outside)
    assert error(publish(proj / "linked-pages")) == "unsafe_output_path"


# -- a race: a folder swapped for a link while the build writes ------------------------------


class SwapOnFirstReplace(fsio.FileSystem):
    """Swaps `site/team` for a link to a folder outside, just before the first rename."""

    def __init__(self, folder: Path, target: Path) -> None:
        self.folder, self.target, self.swapped = folder, target, False

    def replace(self, src: Path, dst: Path) -> None:
        if not self.swapped:
            self.swapped = True
            (self.folder / "team").rename(self.folder / "team.moved")
            (self.folder / "team").symlink_to(self.target)
        super().replace(src, dst)


def test_a_folder_swapped_for_a_link_mid_write_still_gets_nothing_outside(
    proj: Path, outside: Path
) -> None:
    """Each folder is opened once, without following a link, and files are renamed through
    its descriptor: a folder swapped for a link after the check keeps receiving the files."""
    from loopx.build.pipeline import build as build_fn

    site = proj / "site"
    assert build(proj, site, "--audience", "team").exit_code == 0
    page = site / "team" / "goals" / "docs" / "index.html"
    page.write_bytes(b"<p>edited</p>")  # so the next build has a file to replace in team/
    (site / "team" / "index.html").write_bytes(b"<p>edited</p>")
    swap = SwapOnFirstReplace(site, outside / "team")
    previous = fsio.install(swap)
    try:
        build_fn(proj, site, audiences=("team",), head=REV_NEW, reuse=False)
    finally:
        fsio.install(previous)
    assert swap.swapped
    moved = site / "team.moved"
    assert b"edited" not in (moved / "goals" / "docs" / "index.html").read_bytes()
    assert b"edited" not in (moved / "index.html").read_bytes()


def test_a_plain_publish_listing_lets_files_be_replaced_but_never_deleted(proj: Path) -> None:
    """The listing an older loopx wrote, or the one `publish --git-branch` keeps on a branch,
    names files but has no hashes: they may be replaced, never deleted."""
    dest = proj / "pages"
    (dest / "goals" / "old").mkdir(parents=True)
    (dest / "index.html").write_bytes(b"<h1>an older publish</h1>")
    (dest / "goals" / "old" / "index.html").write_bytes(b"<h1>an old goal</h1>")
    (dest / ".loopx-published").write_bytes(b"index.html\ngoals/old/index.html\n")
    result = loopx(proj, "publish", "--to", str(dest), "--head", REV_NEW)
    assert result.exit_code == 0, result.stdout
    assert result.json()["kept"] == ["goals/old/index.html"]
    assert (dest / "goals" / "old" / "index.html").read_bytes() == b"<h1>an old goal</h1>"
    assert (dest / "index.html").read_bytes() != b"<h1>an older publish</h1>"
    listing = json.loads((dest / ".loopx-published").read_bytes())
    assert listing["schema"] == "loopx.published/v1"


def test_a_linked_cache_folder_holds_no_lock_or_memo_outside(proj: Path, outside: Path) -> None:
    """The output folder's lock and the carry-over memo live in `.loopx/cache/build/`: a
    checkout that makes `.loopx/cache` a link gets a refusal, not files outside."""
    shutil.rmtree(proj / ".loopx" / "cache", ignore_errors=True)
    (proj / ".loopx" / "cache").symlink_to(outside)
    result = build(proj, proj / "site")
    assert result.exit_code == 2 and error(result) == "unsafe_output_path"
    assert not (proj / "site" / "manifest.json").exists()
