"""`loopx build` and `loopx scan` parsed without click (`loopx.cli.quick`) do what click's
path does.

Each argument list of the table runs twice on two copies of one project, once as `main`
runs it and once with the quick parser switched off (click reads every call): the exit
code, stdout and stderr must be the same, and so must every file of the project after it
(the output folders, the ledgers; the host caches aside). Their option tables are held to
their click declarations in tests/test_quick_dispatch.py with the others.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from loopx.cli import quick
from loopx.privacy.scanner import name_hash
from tests.conftest import GIT_ENV, run_cli

NAME = "dwhitfield"  # a user name of a work host: in a public id, the boundary refuses it
ENV = {"LOOPX_PRIVATE_NAMES": ""}  # this host's own names are not the test's
HEAD = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # a credential's shape


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, check=True)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git checkout with a public-forge remote (team output there earns a warning) holding
    a project built once into `site`: team goal demo (todos a, b), public goal launch (todo
    pair-with-NAME)."""
    root = tmp_path_factory.mktemp("quick-build") / "repo"
    root.mkdir(parents=True)
    (root / "a-file").write_text("")
    _git(root, "init", "-q")
    _git(root, "remote", "add", "origin", "https://github.com/acme/app.git")
    steps = [
        ["init"],
        ["goal", "create", "--goal-id", "demo", "--title", "Demo", "--objective", "Ship"],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "a", "--title", "Parser \x1b[31m"],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "b", "--title", "B", "--depends-on", "a"],
        ["goal", "create", "--goal-id", "launch", "--title", "Launch", "--objective", "Go"]
        + ["--visibility", "public"],
        ["todo", "add", "--goal-id", "launch", "--todo-id", f"pair-with-{NAME}", "--title", "P"]
        + ["--visibility", "public"],
        ["build", "--out", "site"],
    ]
    for args in steps:
        done = run_cli([*args, "--root", str(root)], env=ENV, cwd=root)
        assert done.exit_code == 0, (args, done.stderr)
    return root


def _names(root: Path) -> None:
    """List NAME as a work host's: the public build is refused (its findings printed)."""
    (root / ".loopx" / "names").write_text(f"# work hosts\n{name_hash(NAME)}\n")


def _config(root: Path) -> None:
    """The project configures where and for whom it builds."""
    (root / "loopx.toml").write_text('[defaults]\nout = "built"\naudiences = ["public"]\n')


def _stale(root: Path) -> None:
    """A file of the built folder changed since."""
    (root / "site" / "public" / "index.html").write_text("changed\n")


def _odd(root: Path) -> None:
    """A file whose name starts with `-` (only a path after `--`) holds a credential."""
    (root / "-odd").write_text(f"token: {TOKEN}\n")


# Argument lists, each with its environment, a change to the project first, whether quick
# reads it, and the exit code both ways.
CALLS: list[tuple[list[str], dict[str, str], Callable[[Path], None] | None, bool, int]] = [
    (["build"], {}, None, True, 0),
    (["build", "--out", "site"], {}, None, True, 0),
    (["build", "--out=out", "--format", "json"], {}, None, True, 0),
    (["build", "--out", "out", "--json"], {}, None, True, 0),
    (["build", "--out", "out", "--audience", "public"], {}, None, True, 0),
    (["build", "--out", "out", "--audience=public,team,private", "--force"], {}, None, True, 0),
    (["build", "--out", "out", "--audience", "everyone"], {}, None, True, 2),
    (["build", "--out", "out", "--head", HEAD, "--validate"], {}, None, True, 0),
    (["build", "--out", "out", "--head", "none", "--overwrite"], {}, None, True, 0),
    (["build", "--out", "out", "--head", "zz"], {}, None, True, 2),
    (["build", "--out", "out", "--head", "zz", "--json"], {}, None, True, 2),
    (["build", "--out", "out/deeper/still"], {}, None, True, 0),
    (["build", "--out", "a-file/x"], {}, None, True, 5),
    (["build", "--out", "site", "--check"], {}, None, True, 0),
    (["build", "--out", "site", "--check", "--format", "json"], {}, _stale, True, 6),
    (["build", "--check"], {}, _stale, True, 6),
    (["build", "--out", "out", "--check"], {}, None, True, 6),
    (["build", "--out", "out", "--debug"], {}, None, True, 0),
    (["build", "--root", "missing"], {}, None, True, 3),
    (["build", "--out", "out"], {}, _names, True, 7),
    (["build", "--out", "out", "--json"], {}, _names, True, 7),
    (["build", "--out", "out", "--audience", "team"], {}, _names, True, 0),
    (["build"], {}, _config, True, 0),
    (["build", "--audience", "team"], {}, _config, True, 0),
    (["build"], {"LOOPX_OUT": "from-env"}, _config, True, 0),
    (["build"], {"LOOPX_AUDIENCE": "public"}, None, True, 0),
    (["build"], {"LOOPX_AUDIENCE": "everyone"}, None, True, 2),
    (["build"], {"LOOPX_AUDIENCE": ""}, _config, True, 0),  # empty: not set
    (["build", "--out", "out"], {"LOOPX_ROOT": "missing"}, None, True, 3),
    (["build", "--out", "out", "--format", "markdown"], {}, None, False, 2),
    (["build", "--out", "a-file"], {}, None, False, 2),
    (["build", "--out", "out", "--root", "a-file"], {}, None, False, 2),
    (["build", "--out", "out"], {"LOOPX_ROOT": "a-file"}, None, False, 2),
    (["build", "--out"], {}, None, False, 2),
    (["build", "--out", "--check"], {}, None, False, 0),
    (["build", "--head", "-1"], {}, None, False, 2),
    (["build", "--check=yes"], {}, None, False, 2),
    (["build", "--help"], {}, None, False, 0),
    (["build", "--bogus"], {}, None, False, 2),
    (["build", "out"], {}, None, False, 2),
    (["build", "-o", "out"], {}, None, False, 2),
    (["scan", "site/public"], {}, None, True, 0),
    (["scan", "site/public", "--format", "json"], {}, None, True, 0),
    (["scan", "--json", "site/public"], {}, None, True, 0),
    (["scan", "site/team"], {}, None, True, 7),  # the team goal's text: findings printed
    (["scan", "site/team", "--format=json"], {}, None, True, 7),
    (["scan", "site/public"], {}, _names, True, 7),  # NAME in a public id
    (["scan", "site/public", "--no-machine"], {}, _names, True, 7),  # the project's names
    (["scan", "site/public", "--no-ledger"], {}, _names, True, 0),
    (["scan", "--no-ledger", "site/team"], {}, None, True, 0),
    (["scan", "site/team", "--no-ledger", "--ledger"], {}, None, True, 7),
    (["scan", "site/public", "--machine", "--no-machine"], {}, None, True, 0),
    (["scan", "a-file", "site"], {}, None, True, 7),  # a file and a folder
    (["scan", "site/public/index.html", "site/public"], {}, None, True, 0),  # named twice
    (["scan", "--no-ledger", "--", "-odd"], {}, _odd, True, 7),
    (["scan", "--no-ledger", "--", "-odd", "--", "--json"], {}, _odd, True, 3),
    (["scan", "--hash-name", NAME, "--hash-name=other"], {}, None, True, 0),
    (["scan", "site/public", "--hash-name", NAME, "--json"], {}, None, True, 0),
    (["scan"], {}, None, True, 2),  # no PATHS: the command's own usage error
    (["scan", "--json"], {}, None, True, 2),
    (["scan", "missing"], {}, None, True, 3),
    (["scan", "site/public", "missing", "--no-ledger"], {}, None, True, 3),
    (["scan", "site/public", "--root", "missing"], {}, None, True, 3),
    (["scan", "site/public"], {"LOOPX_ROOT": "missing"}, None, True, 3),
    (["scan", "site/public", "--no-ledger", "--root", "missing"], {}, None, True, 0),
    (["scan", "site/public", "--debug"], {}, None, True, 0),
    (["scan", "site/public", "--help"], {}, None, False, 0),
    (["scan", "-h"], {}, None, False, 0),
    (["scan", "site/public", "--bogus"], {}, None, False, 2),
    (["scan", "-odd"], {}, _odd, False, 2),  # before `--`: an option (none such)
    (["scan", "-"], {}, None, False, 3),  # click: a path named `-`
    (["scan", "--ledger=yes", "site/public"], {}, None, False, 2),
    (["scan", "site/public", "--hash-name"], {}, None, False, 2),
    (["scan", "--hash-name", "--json"], {}, None, False, 0),  # click: the name "--json"
    (["scan", "site/public", "--format", "markdown"], {}, None, False, 2),
    (["scan", "site/public", "--root", "a-file"], {}, None, False, 2),
]


# Git's own folder, and the host caches: named by the project's path, they hold its files'
# change tokens (inodes), which differ between two copies.
NOT_COMPARED = (".git/", ".loopx/cache/", ".loopx/private/cache/")


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the project but NOT_COMPARED, by path: what a call wrote."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and not rel.startswith(NOT_COMPARED):
            files[rel] = path.read_bytes()
    return files


@pytest.mark.parametrize(
    ("args", "env", "change", "read_here", "code"),
    CALLS,
    ids=lambda v: getattr(v, "__name__", None) or repr(v)[:60],
)
def test_a_build_or_scan_reads_and_does_as_click(
    seed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    change: Callable[[Path], None] | None,
    read_here: bool,
    code: int,
) -> None:
    ours, theirs = tmp_path / "ours" / "repo", tmp_path / "theirs" / "repo"
    for copy in (ours, theirs):
        shutil.copytree(seed, copy, symlinks=True)
        if change is not None:
            change(copy)
    monkeypatch.setenv("NO_COLOR", "1")
    for name, value in {**ENV, **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ours)  # the project is found from here, as a relative path is
    assert (quick.parse(args) is not None) is read_here
    monkeypatch.undo()
    done = run_cli(args, env={**ENV, **env}, cwd=ours)
    monkeypatch.setattr(quick, "parse", lambda args: None)
    expected = run_cli(args, env={**ENV, **env}, cwd=theirs)
    assert done.exit_code == code, done.stderr
    mine = (done.exit_code, done.stdout, done.stderr.replace(str(ours), "ROOT"))
    assert mine == (
        expected.exit_code,
        expected.stdout.replace(str(theirs), str(ours)),
        expected.stderr.replace(str(theirs), "ROOT"),
    )
    assert _files(ours) == _files(theirs)
