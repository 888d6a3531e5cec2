"""The governed correction: `loopx redact field` clears a boundary block, even on a closed goal.

The end-to-end test runs the real `loopx` CLI in subprocesses, as a user (or CI) would.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import AddEvidence, AddTodo, CloseGoal, CreateGoal, OpenGate, RedactField
from loopx.engine.redactions import redact_field
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.privacy.scanner import name_hash
from loopx.state.redactions import REDACTED
from loopx.store.filestore import FileStore
from tests.conftest import T0, make_ctx, run_cli

NAME = "dwhitfield"  # a user name of the machine the work was done on


def _loopx(root: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    full = {**os.environ, "LOOPX_NOW": T0, "LOOPX_AGENT_ID": "maintainer", **(env or {})}
    full.pop("LOOPX_ROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def test_a_block_in_a_closed_goal_is_cleared_by_a_redaction(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert _loopx(root, "init").returncode == 0
    created = _loopx(
        root, "goal", "create", "--goal-id", "launch", "--title", "Launch the site",
        "--objective", "Ship the public site", "--visibility", "public",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    question = f"Ask {NAME} whether service_key = not-set may ship"
    opened = _loopx(
        root, "gate", "open", "--goal-id", "launch", "--question", question,
        "--authority", "maintainer", "--visibility", "public",
    )  # fmt: skip
    assert opened.returncode == 0, opened.stderr
    closed = _loopx(root, "goal", "close", "--goal-id", "launch", "--outcome", "achieved")
    assert closed.returncode == 0, closed.stderr
    # The machine names of the hosts the work was done on, committed hashed.
    (root / ".loopx" / "names").write_text(f"# work hosts\n{name_hash(NAME)}\n")

    out = tmp_path / "site"
    blocked = _loopx(root, "build", "--out", str(out))
    assert blocked.returncode == 7, blocked.stderr
    assert NAME not in blocked.stdout + blocked.stderr  # never echoed
    assert "public_boundary_violation" in blocked.stderr or "boundary" in blocked.stderr
    commands = [
        line.split("clear with: ", 1)[1]
        for line in blocked.stdout.splitlines()
        if "clear with: " in line
    ]
    assert commands, blocked.stdout
    assert "--entity gate --entity-id gate-1 --field question" in commands[0]
    assert not (out / "manifest.json").exists() and not (out / "public").exists()  # nothing written

    # The goal is closed: the question cannot be edited, and other writes are refused …
    refused = _loopx(root, "todo", "add", "--goal-id", "launch", "--title", "More work")
    assert refused.returncode == 4 and "goal_terminal" in refused.stderr
    # … but the printed correction is accepted.
    argv = shlex.split(commands[0].replace('"<why>"', "'host user name in a public question'"))
    assert argv[:3] == ["loopx", "redact", "field"]
    fixed = _loopx(root, *argv[1:])
    assert fixed.returncode == 0, fixed.stderr

    built = _loopx(root, "build", "--out", str(out))
    assert built.returncode == 0, built.stdout + built.stderr
    status = json.loads((out / "public/goals/launch/status.json").read_text())
    assert status["gates"]["items"][0]["question"] == REDACTED
    assert "1 redacted field" in status["omissions"]["note"]
    for path in (out / "public").rglob("*"):
        if path.is_file():
            assert NAME not in path.read_text(errors="replace")

    log = _loopx(root, "log", "--goal-id", "launch", "--format", "json")
    events = json.loads(log.stdout)["events"]
    correction = events[-1]
    assert correction["type"] == "field.redacted"
    assert correction["actor"]["agent_id"] == "maintainer"
    assert correction["data"] == {
        "redaction_id": "redaction-1",
        "entity": "gate",
        "entity_id": "gate-1",
        "field": "question",
        "reason": "host user name in a public question",
    }
    text_log = _loopx(root, "log", "--goal-id", "launch")
    assert "field.redacted" in text_log.stdout

    workbench = (out / "team/goals/launch/workbench.md").read_text()
    assert "## Corrections" in workbench
    assert "`redaction-1` redacted gate gate-1 question (by `maintainer`" in workbench
    assert "host user name in a public question" in workbench
    assert NAME not in workbench

    # The build's public workbench: the field redacted and counted, no correction listed.
    public_text = (out / "public/goals/launch/workbench.md").read_text()
    assert "Corrections" not in public_text and "host user name" not in public_text
    assert "1 redacted field" in public_text

    listed = _loopx(root, "redact", "list", "--goal-id", "launch", "--format", "json")
    assert [r["redaction_id"] for r in json.loads(listed.stdout)["redactions"]] == ["redaction-1"]


def test_scan_prints_the_clearing_command(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    ctx = make_ctx(FileStore(root), agent="maintainer")
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Public goal", objective="Ship it", visibility="public")
    )
    todos.add_todo(
        ctx,
        AddTodo(goal_id="g", title=f"Pair with {NAME} on it", todo_id="pair", visibility="public"),
    )
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "page.html").write_text(f"<p>Pair with {NAME} on it</p>\n")
    env = {"LOOPX_PRIVATE_NAMES": NAME}
    found = run_cli(["scan", str(folder), "--root", str(root)], env=env)
    assert found.exit_code == 7
    assert "username" in found.stdout
    assert (
        "clear with: loopx redact field --goal-id g --entity todo --entity-id pair --field title"
        in found.stdout
    )
    assert NAME not in found.stdout + found.stderr
    as_json = run_cli(["scan", str(folder), "--root", str(root), "--format", "json"], env=env)
    finding = as_json.json()["error"]["details"]["findings"][0]
    assert finding["clear"][0].startswith("loopx redact field --goal-id g --entity todo")


def test_hash_name_prints_the_names_file_line() -> None:
    result = run_cli(["scan", "--hash-name", "DWhitfield"])
    assert result.exit_code == 0
    assert result.stdout.strip() == name_hash("dwhitfield")


@pytest.mark.parametrize("content", ["dwhitfield\n", "sha256:xyz\n"])
def test_names_file_holds_hashes_only(tmp_path: Path, content: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    (root / ".loopx" / "names").write_text(content)
    result = run_cli(["build", "--root", str(root), "--out", str(tmp_path / "site")])
    assert result.exit_code == 2 and "invalid_names_file" in result.stderr
    assert "dwhitfield" not in result.stderr
    assert not (tmp_path / "site").exists()


def test_names_file_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    target = tmp_path / "elsewhere"
    target.write_text(name_hash("x") + "\n")
    (root / ".loopx" / "names").symlink_to(target)
    result = run_cli(["build", "--root", str(root), "--out", str(tmp_path / "site")])
    assert result.exit_code == 2 and "invalid_names_file" in result.stderr


def test_names_file_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    os.mkfifo(root / ".loopx" / "names")
    result = subprocess.run(
        [sys.executable, "-m", "loopx", "build", "--root", str(root), "--out", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,  # a blocking open of the FIFO would wait here for a writer forever
    )
    assert result.returncode == 2 and "invalid_names_file" in result.stderr
    assert not (tmp_path / "s").exists()


# -- the engine write path -------------------------------------------------------------------


@pytest.fixture
def closed(store: Any) -> Any:
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Goal", objective="Objective text", visibility="public")
    )
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Public todo title", todo_id="t1", visibility="public")
    )
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Private todo title", todo_id="t2", visibility="private")
    )
    gates.open_gate(
        ctx, OpenGate(goal_id="g", question="Ship it?", authority="maintainer", visibility="public")
    )
    evidence.add_evidence(
        ctx,
        AddEvidence(
            goal_id="g",
            kind="log",
            summary="Ran it",
            refs=["https://ci.example.com/1"],
            body=b"the whole log",
            visibility="team",
        ),
    )
    goals.close_goal(ctx, CloseGoal(goal_id="g", outcome="abandoned"))
    return ctx


def _state(ctx: Any) -> Any:
    from loopx.engine.core import require_goal

    return require_goal(ctx.store, "g")


def test_redaction_reaches_a_closed_goal_and_nothing_else_does(closed: Any) -> None:
    with pytest.raises(Conflict) as err:
        todos.add_todo(closed, AddTodo(goal_id="g", title="More", todo_id="t3"))
    assert err.value.code == "goal_terminal"
    result = redact_field(
        closed,
        RedactField(
            goal_id="g", entity="todo", entity_id="t1", field="title", reason="typo'd a secret"
        ),
    )
    assert result.status == "applied"
    state = _state(closed)
    assert state.todos["t1"].title == REDACTED
    assert state.redactions["redaction-1"]["by"] == "maintainer"
    assert state.status == "abandoned"


@pytest.mark.parametrize(
    ("entity", "entity_id", "field", "check"),
    [
        ("goal", None, "objective", lambda s: s.objective == REDACTED),
        ("goal", None, "acceptance", lambda s: s.acceptance == []),
        ("todo", "t2", "title", lambda s: s.todos["t2"].title == REDACTED),
        ("gate", "gate-1", "question", lambda s: s.gates["gate-1"].question == REDACTED),
        ("evidence", "ev-1", "refs", lambda s: s.evidence["ev-1"].refs == [REDACTED]),
        ("evidence", "ev-1", "body", lambda s: s.evidence["ev-1"].body is None),
    ],
)
def test_each_field_kind_is_blanked(
    closed: Any, entity: str, entity_id: str | None, field: str, check: Any
) -> None:
    if entity == "goal" and field == "acceptance":
        with pytest.raises(InvalidInput) as err:
            redact_field(
                closed,
                RedactField(
                    goal_id="g", entity=entity, entity_id=entity_id, field=field, reason="r"
                ),
            )
        assert err.value.code == "nothing_to_redact"
        return
    redact_field(
        closed,
        RedactField(goal_id="g", entity=entity, entity_id=entity_id, field=field, reason="why"),
    )
    assert check(_state(closed))


def test_refusals_write_nothing(closed: Any) -> None:
    head = _state(closed).revision
    bad, missing = InvalidInput, NotFound
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"entity": "planet", "entity_id": "x", "field": "title"}, bad, "invalid_entity"),
        ({"entity": "todo", "entity_id": "t1", "field": "question"}, bad, "invalid_field"),
        ({"entity": "todo", "entity_id": None, "field": "title"}, bad, "missing_entity_id"),
        ({"entity": "todo", "entity_id": "nope", "field": "title"}, missing, "todo_not_found"),
        ({"entity": "todo", "entity_id": "t1", "field": "summary"}, bad, "nothing_to_redact"),
    ]
    for kwargs, error, code in cases:
        with pytest.raises(error) as err:
            redact_field(closed, RedactField(goal_id="g", reason="why", **kwargs))
        assert err.value.code == code
    with pytest.raises(InvalidInput):
        redact_field(
            closed,
            RedactField(goal_id="g", entity="todo", entity_id="t1", field="title", reason=" "),
        )
    assert _state(closed).revision == head


def test_twice_is_a_conflict_and_a_retry_replays(closed: Any) -> None:
    args = {"entity": "todo", "entity_id": "t1", "field": "title", "reason": "why"}
    first = redact_field(closed, RedactField(goal_id="g", operation_id="red-1", **args))
    again = redact_field(closed, RedactField(goal_id="g", operation_id="red-1", **args))
    assert again.status == "replayed" and again.receipt == first.receipt
    with pytest.raises(Conflict) as err:
        redact_field(closed, RedactField(goal_id="g", **args))
    assert err.value.code == "already_redacted"


def test_cli_refuses_unknown_choices_without_echo(project: Path) -> None:
    result = run_cli(
        ["redact", "field", "--root", str(project), "--goal-id", "demo", "--entity", "todo",
         "--entity-id", "x", "--field", "ghp_secretish", "--reason", "r"]
    )  # fmt: skip
    assert result.exit_code == 2 and "ghp_secretish" not in result.stderr
