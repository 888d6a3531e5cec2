"""Commands that read every goal (status, goal list, handoff list) show a damaged or
unreadable goal as such and still list the others."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from loopx.model.errors import StorageError
from loopx.store.filestore import FileStore


def _create(cli: Any, root: Path, goal_id: str) -> None:
    args = ["goal", "create", "--root", str(root), "--goal-id", goal_id]
    made = cli([*args, "--title", f"Goal {goal_id}", "--objective", "Ship"])
    assert made.exit_code == 0, made.stderr


@pytest.fixture
def three(cli: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`demo` is healthy, `broken` has a flipped byte, reading `locked` fails with EIO."""
    for goal_id in ("broken", "locked"):
        _create(cli, project, goal_id)
    added = cli(["todo", "add", "--root", str(project), "--goal-id", "broken", "--title", "T"])
    assert added.exit_code == 0, added.stderr  # damage before the last line is not a torn tail
    ledger = project / ".loopx/goals/broken/ledger.jsonl"
    data = bytearray(ledger.read_bytes())
    data[40] ^= 0x01
    ledger.write_bytes(bytes(data))
    shutil.rmtree(project / ".loopx" / "cache")
    # Where every read of a ledger's bytes goes: `_bytes` (read, raw) and `reading` (the
    # bulk read of a load without a snapshot, a window at a time).
    for name in ("_bytes", "reading"):
        monkeypatch.setattr(FileStore, name, _failing_for_locked(getattr(FileStore, name)))
    return project


def _failing_for_locked(real: Any) -> Any:
    def read(self: FileStore, goal_id: str, *args: Any, **kwargs: Any) -> Any:
        if goal_id == "locked":
            raise StorageError("could not read the ledger: I/O error", code="io_error")
        return real(self, goal_id, *args, **kwargs)

    return read


def _json(cli: Any, root: Path, *args: str) -> Any:
    out = cli([*args, "--root", str(root), "--format", "json"])
    assert out.exit_code == 0, (out.stdout, out.stderr)
    return out.json()


def test_status_shows_each_bad_goal_and_the_healthy_one(cli: Any, three: Path) -> None:
    goals = {g["goal_id"]: g for g in _json(cli, three, "status")["goals"]}
    assert goals["demo"]["health"] == {"state": "ok"} and goals["demo"]["title"] == "Demo goal"
    assert goals["broken"]["health"]["state"] == "corrupt"
    assert goals["broken"]["health"]["code"] == "ledger_corrupt"
    assert goals["locked"]["health"]["state"] == "unreadable"
    assert goals["locked"]["health"]["code"] == "io_error"
    text = cli(["status", "--root", str(three)])
    assert text.exit_code == 0
    assert "broken: LEDGER CORRUPT (ledger_corrupt)" in text.stdout
    assert "locked: UNREADABLE (io_error)" in text.stdout
    assert "demo: Demo goal" in text.stdout


def test_status_of_one_missing_goal_is_still_not_found(cli: Any, three: Path) -> None:
    out = cli(["status", "--root", str(three), "--goal-id", "nope"])
    assert out.exit_code == 3 and "goal_not_found" in out.stderr


def test_goal_list_shows_each_bad_goal_and_the_healthy_one(cli: Any, three: Path) -> None:
    rows = {r["goal_id"]: r for r in _json(cli, three, "goal", "list")["goals"]}
    assert rows["demo"]["health"] == "ok" and rows["demo"]["counts"]["total"] == 0
    assert (rows["broken"]["health"], rows["broken"]["error"]["code"]) == (
        "corrupt",
        "ledger_corrupt",
    )
    assert (rows["locked"]["health"], rows["locked"]["error"]["code"]) == ("unreadable", "io_error")
    text = cli(["goal", "list", "--root", str(three)]).stdout
    assert "locked" in text and "unreadable ledger (io_error)" in text and "Demo goal" in text


def test_handoff_list_names_each_bad_goal(cli: Any, three: Path) -> None:
    problems = _json(cli, three, "handoff", "list")["problems"]
    assert [(p["goal_id"], p["health"], p["code"]) for p in problems] == [
        ("broken", "corrupt", "ledger_corrupt"),
        ("locked", "unreadable", "io_error"),
    ]
