"""Importing the same source again is silent: no new problem, no byte, every write a replay.

And the first import reports only genuine problems (a healthy source: none at all). Each
source in `SOURCES` (the real loopy-loop 0.12.0 sessions and sessions in the documented layout)
names the exact problems its first import must report.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from loopy_builder import FIXTURES_012, GOAL_MET_SESSION, SOURCES, copy_012, rewind_goal_met
from loopy_checks import blobs, ledgers, new_store, problem_lines

from loopx.engine.core import load_state
from loopx.importers.loopy_loop import import_path

CHILD = "20260115_103000_cd34ef56_1a2b3c4d"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_first_import_reports_only_genuine_problems(tmp_path: Path, name: str) -> None:
    source, expected = SOURCES[name](tmp_path)
    report = import_path(new_store(tmp_path / "loopx"), source)
    assert problem_lines(report) == expected
    assert report.ok and report.applied > 0


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_second_import_is_silent_and_changes_nothing(tmp_path: Path, name: str) -> None:
    source, expected = SOURCES[name](tmp_path)
    store = new_store(tmp_path / "loopx")
    first = import_path(store, source)
    before, private = ledgers(store), blobs(store)
    again = import_path(store, source)
    assert problem_lines(again) == expected  # the source's own problems (a torn line), no more
    assert (again.applied, again.replayed) == (0, first.applied)  # every write, replayed
    assert ledgers(store) == before and blobs(store) == private
    assert [s.to_dict() | {"applied": 0, "replayed": 0} for s in again.sessions] == [
        s.to_dict() | {"applied": 0, "replayed": 0} for s in first.sessions
    ]


def test_a_handoff_revision_per_import_as_the_session_grows(tmp_path: Path) -> None:
    """Imported at iteration 2 (handoff revision 1, running), then once the goal is met
    (revision 2): both notes are kept, the goal is achieved, and nothing is reported."""
    project = rewind_goal_met(copy_012("goal-met", tmp_path))
    store = new_store(tmp_path / "loopx")
    early = import_path(store, project)
    assert problem_lines(early) == []
    state = load_state(store, GOAL_MET_SESSION).state
    assert state is not None and state.status == "active"
    assert [h.note["work_summary"] for h in state.handoffs.values()] == [
        "Planned T001: write hello.txt containing hello"
    ]
    shutil.copytree(FIXTURES_012 / "goal-met", project, dirs_exist_ok=True)
    grown = import_path(store, project)
    assert problem_lines(grown) == [] and grown.applied > 0
    state = load_state(store, GOAL_MET_SESSION).state
    assert state is not None and state.status == "achieved"
    assert [h.note["work_summary"] for h in state.handoffs.values()] == [
        "Planned T001: write hello.txt containing hello",
        "Goal met: hello.txt written and accepted",
    ]
    before = ledgers(store)
    again = import_path(store, project)
    assert (problem_lines(again), again.applied) == ([], 0)
    assert ledgers(store) == before


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_request_replays_even_from_settled_files(tmp_path: Path, name: str) -> None:
    """Ops from files loopy-loop never rewrites are skipped once imported; replayed anyway,
    each must ask for exactly what it asked for the first time."""
    source, expected = SOURCES[name](tmp_path)
    store = new_store(tmp_path / "loopx")
    first = import_path(store, source)
    before = ledgers(store)
    again = import_path(store, source, replay_settled=True)
    assert problem_lines(again) == expected
    assert (again.applied, again.replayed) == (0, first.applied)
    assert ledgers(store) == before


def _reversed_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders list their entries in the opposite order (as another file system might)."""
    iterdir, glob = Path.iterdir, Path.glob
    monkeypatch.setattr(Path, "iterdir", lambda self: iter(sorted(iterdir(self), reverse=True)))
    monkeypatch.setattr(
        Path, "glob", lambda self, *a, **k: iter(sorted(glob(self, *a, **k), reverse=True))
    )


def _no_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.engine.clock import SystemClock

    def refuse(self: object) -> str:
        raise AssertionError("the importer read the wall clock")

    monkeypatch.setattr(SystemClock, "now", refuse)


@pytest.mark.parametrize(
    "name", ["goal-met", "noop-max-turns", "documented", "nested-child", "many-files"]
)
def test_the_ledger_depends_on_the_source_alone(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not on where the source sits, the order folders list their files, the wall clock or
    the working directory."""
    source, _ = SOURCES[name](tmp_path / "here")
    store = new_store(tmp_path / "loopx")
    import_path(store, source)
    elsewhere = tmp_path / "some" / "other machine"
    shutil.copytree(tmp_path / "here", elsewhere)
    moved = elsewhere / source.relative_to(tmp_path / "here")
    _reversed_listing(monkeypatch)
    _no_wall_clock(monkeypatch)
    monkeypatch.chdir(elsewhere)
    other = new_store(tmp_path / "loopx-2")
    import_path(other, moved)
    assert ledgers(other) == ledgers(store)
    assert blobs(other) == blobs(store)


_IMPORT = """
import sys
from loopx.importers.loopy_loop import import_path

CHILD = "20260115_103000_cd34ef56_1a2b3c4d"
from loopx.store.filestore import FileStore
store = FileStore(sys.argv[1])
store.init()
assert import_path(store, sys.argv[2]).ok
"""


def test_the_ledger_does_not_depend_on_set_order(tmp_path: Path) -> None:
    """Two processes with different string hash seeds write the same bytes."""
    import os
    import subprocess
    import sys

    source, _ = SOURCES["documented"](tmp_path)
    outs = []
    for seed in ("1", "2"):
        target = tmp_path / f"loopx-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-c", _IMPORT, str(target), str(source)], env=env, check=True
        )
        outs.append({p.parent.name: p.read_bytes() for p in target.rglob("ledger.jsonl")})
    assert outs[0] == outs[1] and len(outs[0]) == 2


def test_a_session_folder_brings_its_children_whatever_the_path(tmp_path: Path) -> None:
    """The parent's `child-…` todo is written from the child session too: importing the
    parent's own folder reads the child its children.json names beside it, so importing the
    whole project afterwards finds nothing new and nothing changed."""
    source, expected = SOURCES["documented"](tmp_path)
    parent = source / ".loopy_loop" / "sessions" / "20260115_101500_ab12cd34_9f8e7d6c"
    store = new_store(tmp_path / "loopx")
    alone = import_path(store, parent)
    assert [s.session_id for s in alone.sessions] == [parent.name, CHILD]
    assert [p.message for p in alone.problems] == [e.split(": ", 1)[1] for e in expected]
    project = import_path(store, source)
    assert (problem_lines(project), project.applied) == (expected, 0)
    whole = new_store(tmp_path / "loopx-2")
    import_path(whole, source)
    assert ledgers(store) == ledgers(whole)
    named = import_path(new_store(tmp_path / "loopx-3"), parent, goal_id="login")
    assert [s.goal_id for s in named.sessions] == ["login", CHILD]  # the parent is the one root
