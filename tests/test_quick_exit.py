"""A `loopx build` process ends at once (`loopx.cli.main.run`, QUICK_EXIT) and loses nothing.

Each build runs as the console script does, in a fresh interpreter whose `os._exit` first
says it was called: what the build prints, its exit code and every file it writes are as
after an in-process build of a copy of the project, its worker pool included. Under a
tracer, or with a thread still running that is not a daemon, the process exits the
ordinary way; the `atexit` handlers run either way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import T0, run_cli

MARK = "<os._exit>"
# Run as `loopx ARGS`, the prelude first; `os._exit` writes MARK (unbuffered) before it ends
# the process (a forked build worker's ends as ever).
CODE = """
import os, sys
real_exit, parent = os._exit, os.getpid()
def said(code):
    if os.getpid() == parent:  # not a build worker's
        os.write(2, {mark!r}.encode())
    real_exit(code)
os._exit = said
{prelude}
from loopx.cli.main import run
sys.argv = ["loopx", *sys.argv[1:]]
run()
"""
TRACED = "sys.settrace(lambda *args: None)"
AT_EXIT = "import atexit; atexit.register(lambda: os.write(2, b'<atexit>'))"
# A thread that is not a daemon, still working when the command returns (it starts its work
# then): an ordinary exit waits for it to write `late`.
LATE = """
import threading, time
import loopx.cli.main as cli_main
returned, command = threading.Event(), cli_main.main
def main(args):
    try:
        command(args)
    finally:
        returned.set()
cli_main.main = main
def late():
    returned.wait()
    time.sleep(0.2)
    open("late", "w").write("done")
threading.Thread(target=late).start()
"""


def _process(root: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPX_NOW": T0, "NO_COLOR": "1", "LOOPX_BUILD_WORKERS": "2"}
    for name in ("LOOPX_ROOT", "LOOPX_OUT", "LOOPX_AUDIENCE", "LOOPX_GOAL_ID"):
        env.pop(name, None)
    code = CODE.format(mark=MARK, prelude=prelude)
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=root
    )


@pytest.fixture
def two(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of a project of two goals (so a build of both forks its workers)."""
    steps = [
        ["todo", "add", "--goal-id", "demo", "--todo-id", "a", "--title", "A"],
        ["goal", "create", "--goal-id", "more", "--title", "More", "--objective", "Go"]
        + ["--visibility", "public"],
        ["todo", "add", "--goal-id", "more", "--todo-id", "b", "--title", "B"]
        + ["--visibility", "public"],
    ]
    for args in steps:
        assert run_cli([*args, "--root", str(project)]).exit_code == 0
    copies = tmp_path / "a" / "proj", tmp_path / "b" / "proj"
    for copy in copies:
        shutil.copytree(project, copy, symlinks=True)
    return copies


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_build_ended_at_once_prints_and_writes_all(two: tuple[Path, Path]) -> None:
    ours, theirs = two
    done = _process(ours, "build", "--out", "site", prelude=AT_EXIT)
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith(f"<atexit>{MARK}")  # the handlers ran, then the quick end
    expected = run_cli(["build", "--out", "site"], env={"LOOPX_BUILD_WORKERS": "2"}, cwd=theirs)
    assert done.stdout == expected.stdout and "written" in done.stdout
    files = _files(ours / "site")
    assert files == _files(theirs / "site") and "manifest.json" in files
    again = _process(ours, "build", "--out", "site", "--format", "json")  # the rebuild
    assert again.returncode == 0 and json.loads(again.stdout)["written"] == []
    assert _files(ours / "site") == files


def test_a_build_ended_at_once_keeps_its_exit_code(two: tuple[Path, Path]) -> None:
    root = two[0]
    assert _process(root, "build", "--out", "site").returncode == 0
    checked = _process(root, "build", "--out", "site", "--check")
    assert (checked.returncode, checked.stdout) == (0, "site is up to date\n")
    (root / "site" / "public" / "index.html").write_text("changed\n")
    stale = _process(root, "build", "--out", "site", "--check", "--format", "json")
    assert stale.returncode == 6 and stale.stderr == MARK
    assert json.loads(stale.stdout)["error"]["code"] == "build_stale"
    refused = _process(root, "build", "--out", "site", "--head", "zz")
    assert refused.returncode == 2 and "[invalid_revision]" in refused.stderr
    assert refused.stderr.endswith(MARK)
    usage = _process(root, "build", "--out", "site", "--bogus")  # read by click
    assert usage.returncode == 2 and "[usage_error]" in usage.stderr


def test_a_traced_build_exits_the_ordinary_way(two: tuple[Path, Path]) -> None:
    ours, theirs = two
    done = _process(ours, "build", "--out", "site", prelude=f"{TRACED}\n{AT_EXIT}")
    assert done.returncode == 0 and done.stderr == "<atexit>"  # no quick end
    assert _files(ours / "site") == _files(_built(theirs))


def test_a_thread_still_running_is_waited_for(two: tuple[Path, Path]) -> None:
    root = two[0]
    done = _process(root, "build", "--out", "site", prelude=LATE)
    assert done.returncode == 0 and MARK not in done.stderr, done.stderr
    assert (root / "late").read_text() == "done"
    (root / "late").unlink()
    status = _process(root, "status", "--goal-id", "demo", prelude=LATE)  # every command
    assert status.returncode == 0 and MARK not in status.stderr
    assert (root / "late").read_text() == "done"


def _built(root: Path) -> Path:
    done = run_cli(["build", "--out", "site"], cwd=root)
    assert done.exit_code == 0, done.stderr
    return root / "site"


def test_every_quick_end_runs_the_atexit_handlers(two: tuple[Path, Path]) -> None:
    done = _process(two[0], "status", "--goal-id", "demo", "--format", "json", prelude=AT_EXIT)
    assert done.returncode == 0 and done.stderr == f"<atexit>{MARK}"
    assert [g["goal_id"] for g in json.loads(done.stdout)["goals"]] == ["demo"]
