"""Shared fixtures: stores, contexts with a pinned clock, and an in-process CLI runner."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loopx.engine.clock import FixedClock
from loopx.engine.core import Context
from loopx.store.filestore import FileStore
from loopx.store.memorystore import MemoryStore
from tests.pg import (  # noqa: F401 (pg_empty, pg_store, pg_url: fixtures shared by every test)
    admin,
    broker_folder,
    overwrite,
    pg_empty,
    pg_store,
    pg_url,
)

# A git that commits as nobody in particular and reads no user or system configuration.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}
T0 = "2026-03-01T12:00:00Z"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "files_only(reason): a `store_kind` test that runs on the file store only"
    )


def pytest_collectstart(collector: Any) -> None:
    """Keep `from conftest import …` meaning this file in every test module.

    A conftest.py in a subfolder (tests/importers/) is imported under the same module name
    and would otherwise shadow this one for every module collected after it.
    """
    import sys

    sys.modules["conftest"] = sys.modules[__name__]


@pytest.fixture(params=["file", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Every Store implementation, so one contract suite runs against each."""
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "postgres":
        pg = pg_store(request.getfixturevalue("pg_url"))
        yield pg
        pg.close()
        return
    fs = FileStore(tmp_path)
    fs.init()
    yield fs


STORE_KINDS = ("file", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses `store_kind` once per store (files only when marked so)."""
    if "store_kind" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("files_only")
        kinds = ["file"] if only else list(STORE_KINDS)
        metafunc.parametrize("store_kind", kinds, indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store this test's projects use: their `.loopx/` files, or (through `LOOPX_STORE`,
    which every CLI call and `open_store` honour) an emptied PostgreSQL database."""
    if request.param == "postgres":
        monkeypatch.setenv("LOOPX_STORE", request.getfixturevalue("pg_empty"))
    else:
        monkeypatch.delenv("LOOPX_STORE", raising=False)
    return str(request.param)


def project_store(root: Path) -> Any:
    """The store the project at `root` uses (as the CLI would open it)."""
    from loopx.store.select import open_store

    return open_store(root)


def ledger_bytes(root: Path, goal: str) -> bytes:
    """A goal's ledger as the file store would hold it, from whichever store `root` uses."""
    return bytes(project_store(root).raw(goal))


def replace_ledger(root: Path, goal: str, data: bytes) -> None:
    """Put `data` in place of a goal's ledger behind the store's back (to damage it)."""
    from loopx.store.select import configured

    url = configured(root)
    if url == "file":
        # Whole, in one rename: a watcher (`serve`) never reads it half written (empty, a
        # goal without events, which a build would drop).
        ledger = root / ".loopx" / "goals" / goal / "ledger.jsonl"
        ledger.with_name("ledger.jsonl.new").write_bytes(data)
        os.replace(ledger.with_name("ledger.jsonl.new"), ledger)
    else:
        overwrite(url, goal, data)
        admin(url).execute("SELECT pg_notify('loopx_ledger', %s)", (goal,))  # wakes `serve`


def drop_goal(root: Path, goal: str) -> None:
    """Remove a goal's ledger behind the store's back (and this host's snapshots)."""
    import shutil

    from loopx.store.select import configured

    url = configured(root)
    if url == "file":
        shutil.rmtree(root / ".loopx" / "goals" / goal)
    else:
        conn = admin(url)
        for table in ("loopx_events", "loopx_heads", "loopx_operations"):
            conn.execute(f"DELETE FROM {table} WHERE goal_id = %s", (goal,))
    shutil.rmtree(root / ".loopx" / "cache", ignore_errors=True)


def move_into_store(root: Path) -> None:
    """Copy a file-store project's ledgers and blobs into the store `root` is configured for
    (`LOOPX_STORE`), then delete them from its files, so only that store can be read."""
    import shutil

    from loopx.store.transfer import copy_store

    target = project_store(root)
    if isinstance(target, FileStore):
        return
    copy_store(FileStore(root), target)
    for sub in ("goals", "private", "cache"):
        shutil.rmtree(root / ".loopx" / sub)


def forget_private(root: Path) -> None:
    """Remove every private blob of the project's store (a host without the private text)."""
    import shutil

    from loopx.store.select import configured

    url = configured(root)
    if url == "file":
        shutil.rmtree(root / ".loopx" / "private")
    else:
        admin(url).execute("TRUNCATE loopx_blobs")


@pytest.fixture
def file_store(tmp_path: Path) -> FileStore:
    fs = FileStore(tmp_path)
    fs.init()
    return fs


def make_ctx(store: Any, agent: str = "agent-a", session: str = "s1", step: int = 60) -> Context:
    return Context(store, FixedClock(T0, step), agent_id=agent, session_id=session)


@pytest.fixture
def ctx(store: Any) -> Context:
    return make_ctx(store)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(
    args: list[str],
    env: dict[str, str] | None = None,
    input: str | None = None,
    cwd: Path | None = None,
) -> CliResult:
    """Run `loopx ARGS` in-process through the real entry point (error boundary included)."""
    import os

    from loopx.cli.main import main

    runner = CliRunner()
    base = {
        "LOOPX_NOW": T0,
        "LOOPX_AGENT_ID": None,
        "LOOPX_SESSION_ID": None,
        "LOOPX_ROOT": None,
        "LOOPX_GOAL_ID": None,
        "LOOPX_AUDIENCE": None,
        "LOOPX_OUT": None,
        "NO_COLOR": None,
    }
    base.update(env or {})
    old = Path.cwd()
    with runner.isolation(input=input, env=base) as (out, err, _):
        if cwd is not None:
            os.chdir(cwd)
        code = 0
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(old)
        return CliResult(code, out.getvalue().decode(), err.getvalue().decode())


@pytest.fixture
def cli() -> Any:
    return run_cli


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """An initialised project folder with one goal `demo`."""
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    created = run_cli(
        [
            "goal",
            "create",
            "--root",
            str(root),
            "--goal-id",
            "demo",
            "--title",
            "Demo goal",
            "--objective",
            "Ship the demo",
        ]
    )
    assert created.exit_code == 0, created.stderr
    yield root


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project (`loopx.engine.demo`), made once; never changed (see `demo`)."""
    from loopx.engine.demo import create_demo

    root = tmp_path_factory.mktemp("demo") / "proj"
    create_demo(root)
    return root


@pytest.fixture
def demo(tmp_path: Path, demo_root: Path) -> Path:
    """A private copy of the demo project that a test may change."""
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(demo_root, root)
    return root


def walked_goals(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The goals whose boundary strings this process works out from here on (walks their
    state for: `boundary.goal_strings`)."""
    from loopx.build import boundary

    walked: list[str] = []
    goal_strings = boundary.goal_strings

    def walking(state: Any, read_blob: Any = None) -> Any:
        walked.append(state.goal_id)
        return goal_strings(state, read_blob)

    monkeypatch.setattr(boundary, "goal_strings", walking)
    return walked
