"""Shared fixtures: stores, contexts with a pinned clock, and an in-process CLI runner."""

from __future__ import annotations

import json
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
from tests.pg import pg_empty, pg_store, pg_url  # noqa: F401 (fixtures, shared by every test)

T0 = "2026-03-01T12:00:00Z"


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
