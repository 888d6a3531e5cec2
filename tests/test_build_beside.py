"""A rebuild's boundary in a fork beside the build (`loopx.build.beside`).

The fork reads the boundary memo, advances the forbidden set, scans the public files and
writes the memo while the build renders and writes; anything but a clean verdict leaves the
whole boundary to the build's own process. The tests hold it to what the build does in one
process (`LOOPX_BUILD_WORKERS=1`, or a build from nothing of the same ledger).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from loopx.build import beside, pipeline, registry
from loopx.build.beside import Beside
from loopx.build.pipeline import build
from loopx.build.registry import Output, Projection
from loopx.engine import goals, todos
from loopx.engine.commands import AddTodo, CreateGoal
from loopx.engine.core import load_state
from loopx.model.errors import BoundaryViolation
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx

AUDIENCES = ("public", "team")
GOAL = "launch-site-2026"


def _project(root: Path) -> Any:
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx, CreateGoal(goal_id=GOAL, title="Launch", objective="Ship it", visibility="public")
    )
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Write the docs", todo_id="docs", visibility="public")
    )
    todos.add_todo(ctx, AddTodo(goal_id=GOAL, title="Budget talks with the vendor", todo_id="b"))
    goals.create_goal(ctx, CreateGoal(goal_id="inner", title="Inner", objective="Quietly"))
    return ctx


def _tree(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def _memo(root: Path) -> dict[str, Any]:
    """The boundary memo's record of the last build, but for what names this host and copy."""
    body = orjson.loads((root / ".loopx/private/cache/scan/build.json").read_bytes())
    return {k: v for k, v in body.items() if k not in ("host", "covered")}


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Each fork's verdict as the build read it (True clean, False found, None failed)."""
    seen: list[Any] = []
    clean = Beside.clean

    def reading(self: Beside) -> bool | None:
        seen.append(clean(self))
        return seen[-1]

    monkeypatch.setattr(Beside, "clean", reading)
    yield seen


def _pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, Path]]:
    """Two projects made alike, built with the fork (`forked`) and in one process."""
    for how in ("forked", "one"):
        root, out = tmp_path / how / "p", tmp_path / how / "site"
        if how == "one":
            monkeypatch.setenv("LOOPX_BUILD_WORKERS", "1")
        yield how, root, out
        monkeypatch.delenv("LOOPX_BUILD_WORKERS", raising=False)


def test_a_rebuild_forks_its_boundary_and_ends_as_one_process_ends(
    tmp_path: Path, verdicts: list[Any]
) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)  # no memo yet: no fork
    assert verdicts == []
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Tidy the index", todo_id="tidy", visibility="public")
    )
    todos.add_todo(ctx, AddTodo(goal_id=GOAL, title="A quiet team matter", todo_id="q"))
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert verdicts == [True]  # the fork scanned, found it clean, and wrote the memo
    heads = {g: load_state(FileStore(root), g).state.head for g in (GOAL, "inner")}
    memo = _memo(root)
    assert dict(map(tuple, memo["key"])) == heads  # of the ledger as it is now
    public = {sha for path, sha in _tree(out).items() if path.startswith("public/")}
    assert public <= set(memo["clean"])  # every public file, found clean

    # Byte for byte what one process makes of the same ledger, from nothing.
    whole = tmp_path / "whole"
    build(root, whole, audiences=AUDIENCES)
    assert _tree(out) == _tree(whole)

    # The next rebuild starts from the memo the fork wrote: a fork again, nothing new.
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert verdicts == [True, True]
    assert _memo(root) == memo
    for _ in range(500):  # each fork, its memo written, is left to end and then reaped
        if not beside.reap():
            break
        time.sleep(0.01)
    assert beside.reap() == []


def _leaky() -> Projection:
    """A bug that, once a todo `go` exists, prints into public output the title of each todo
    whose id starts `leak`."""

    def leak(ctx: Any) -> str:
        todos = ctx.state.todos
        return "".join(f"{t.title}\n" for k, t in todos.items() if "go" in todos and "leak" in k)

    return Projection("leak", "goal", lambda ctx: None, (Output("leak.txt", lambda c, _: leak(c)),))


@pytest.mark.parametrize("already", [True, False], ids=["known-string", "new-string"])
def test_a_finding_in_the_fork_refuses_the_rebuild_as_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: list[Any], already: bool
) -> None:
    """The leaked text non-public before the event (only the changed file can hold it), or
    made by it (every public file is looked at for it)."""
    refused = {}
    team = AddTodo(goal_id=GOAL, title="Vendor rebate terms", todo_id="leak-1")
    with registry.registered(_leaky()):  # from the first build: the memo counts
        for how, root, out in _pair(tmp_path, monkeypatch):
            ctx = _project(root)
            if already:
                todos.add_todo(ctx, team)
            build(root, out, audiences=AUDIENCES, reuse=True)
            before = _tree(out)
            if not already:
                todos.add_todo(ctx, team)
            public = AddTodo(goal_id=GOAL, title="Go live", todo_id="go", visibility="public")
            todos.add_todo(ctx, public)
            with pytest.raises(BoundaryViolation) as caught:
                build(root, out, audiences=AUDIENCES, reuse=True)
            refused[how] = caught.value.details["findings"]
            assert _tree(out) == before  # nothing written
    assert verdicts == [False]  # the fork found it; this process found it again, in full
    assert refused["forked"] == refused["one"]
    assert {(f["path"], f["kind"]) for f in refused["forked"]} == {
        (f"public/goals/{GOAL}/leak.txt", "non-public-text")
    }


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_a_fork_that_fails_leaves_the_boundary_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: list[Any], how: str
) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    before = _memo(root)

    def fail(*args: Any) -> Any:
        if how == "dies":
            os._exit(3)  # in the fork: gone without a word
        raise RuntimeError("no")

    monkeypatch.setattr(beside, "advance", fail)
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Tidy the index", todo_id="tidy", visibility="public")
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert verdicts == [None]
    after = _memo(root)
    assert after["key"] != before["key"]  # the build wrote the memo itself
    assert "Tidy the index" in (out / "public/goals" / GOAL / "index.html").read_text()
    monkeypatch.undo()
    build(root, out, audiences=AUDIENCES, reuse=True)  # and the next build reads it
    assert _memo(root)["key"] == after["key"]


def test_the_build_forks_only_where_it_may(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    assert not pipeline._may_fork(root, out, AUDIENCES)  # nothing built yet: no memo
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert pipeline._may_fork(root, out, AUDIENCES)
    assert not pipeline._may_fork(root, out, ("team",))  # no boundary to work out
    assert not pipeline._may_fork(root, tmp_path / "elsewhere", AUDIENCES)  # no build memo
    with monkeypatch.context() as m:
        m.setenv("LOOPX_BUILD_WORKERS", "1")
        assert not pipeline._may_fork(root, out, AUDIENCES)
    with monkeypatch.context() as m:
        m.setattr(os, "sched_getaffinity", lambda pid: {0})  # one processor
        assert not pipeline._may_fork(root, out, AUDIENCES)
    with monkeypatch.context() as m:
        m.setenv("LOOPX_STORE", "postgresql://loopx@127.0.0.1:5432/test")
        assert not pipeline._may_fork(root, out, AUDIENCES)  # a database connection


def test_a_fork_told_nothing_ends_without_writing(tmp_path: Path) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    memo = root / ".loopx/private/cache/scan/build.json"
    stamp = memo.stat().st_mtime_ns
    fork = Beside.start(root, out, frozenset())
    assert fork is not None
    assert fork.close() is False  # no verdict, no memo
    assert memo.stat().st_mtime_ns == stamp
    with pytest.raises(ChildProcessError):
        os.waitpid(fork.pid, os.WNOHANG)  # reaped


@pytest.mark.parametrize("fork", ["checks", "fails"])
def test_a_carried_file_edited_on_disk_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: list[Any], fork: str
) -> None:
    """The build reads its memo without looking at the carried files; the fork looks at
    them meanwhile, and only the goals whose files it found as written are carried over (when
    it fails, this process looks at them itself)."""
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    page = out / "team/goals/inner/index.html"  # of a goal no event changes
    text = page.read_text()
    before = page.stat()
    page.write_text(text.replace("Inner", "Outer"))  # by hand, size and time kept
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert page.stat().st_size == before.st_size
    if fork == "fails":
        from loopx.build import reuse

        intact, here = reuse.intact, os.getpid()

        def failing(root: Path, out: Path) -> Any:  # in the fork only
            return intact(root, out) if os.getpid() == here else 1 / 0

        monkeypatch.setattr(reuse, "intact", failing)
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Tidy the index", todo_id="tidy", visibility="public")
    )
    result = build(root, out, audiences=AUDIENCES, reuse=True)
    assert page.read_text() == text  # made again
    assert result.report is not None and "team/goals/inner/index.html" in result.report.written
    assert verdicts == ([True] if fork == "checks" else [])


def test_loopx_build_returns_once_its_fork_has_written_the_memo(tmp_path: Path) -> None:
    """As users run it: `python -m loopx build`, a process that ends at once (`QUICK_EXIT`)
    and reaps its fork on the way out; the memo the fork wrote is there when it returns."""
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "sitecustomize.py").write_text(  # records each fork's end in the process
        "import os\n"
        "from loopx.build import beside\n"
        "close = beside.Beside.close\n"
        "def closing(self):\n"
        "    saved = close(self)\n"
        "    with open(os.environ['FORK_LOG'], 'a') as log:\n"
        "        log.write(f'{saved}\\n')\n"
        "    return saved\n"
        "beside.Beside.close = closing\n"
    )
    log = tmp_path / "forks.log"
    path = os.pathsep.join([str(spy), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "FORK_LOG": str(log)}
    env.pop("LOOPX_BUILD_WORKERS", None)
    command = [sys.executable, "-m", "loopx", "build", "--root", str(root), "--out", str(out)]

    def loopx_build() -> None:
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    loopx_build()  # the first: nothing to fork for
    assert not log.exists()
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Tidy the index", todo_id="tidy", visibility="public")
    )
    loopx_build()
    assert log.read_text() == "True\n"  # a fork, which wrote the memo
    heads = {g: load_state(FileStore(root), g).state.head for g in (GOAL, "inner")}
    assert dict(map(tuple, _memo(root)["key"])) == heads
    assert "Tidy the index" in (out / "public/goals" / GOAL / "index.html").read_text()


def test_a_build_that_cannot_fork_works_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: list[Any]
) -> None:
    """A process limit or a sandbox that refuses `fork`: the build does everything itself."""
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    todos.add_todo(
        ctx, AddTodo(goal_id=GOAL, title="Tidy the index", todo_id="tidy", visibility="public")
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert verdicts == []
    assert "Tidy the index" in (out / "public/goals" / GOAL / "index.html").read_text()
    heads = {g: load_state(FileStore(root), g).state.head for g in (GOAL, "inner")}
    assert dict(map(tuple, _memo(root)["key"])) == heads
