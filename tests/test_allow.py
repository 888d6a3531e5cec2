"""The reviewed allow entry: `loopx allow finding` clears a block no correction can reach (an id).

The end-to-end test runs the real CLI, as a user (or CI) would: a finding in an id of a closed
goal blocks the build; the printed command, run as printed, records the entry; the build, the
scan and the publish pass; the entry is in the ledger and the team workbench; a different
finding still blocks.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from loopx.build.allowances import allowances_of, confirm
from loopx.build.boundary import non_public_strings
from loopx.build.pipeline import build
from loopx.engine import goals, todos
from loopx.engine.allowances import allow_finding
from loopx.engine.commands import AddTodo, AllowFinding, CancelTodo, CloseGoal, CreateGoal
from loopx.engine.core import Context, load_state
from loopx.model.errors import BoundaryViolation, Conflict, InvalidInput, NotFound
from loopx.privacy.allowed import Allowance, Allowed
from loopx.privacy.scanner import Scanner, name_hash
from loopx.state.allowances import entries
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, run_cli

NAME = "dwhitfield"  # a user name of the machine the work was done on
ENV = {"LOOPX_AGENT_ID": "maintainer", "LOOPX_PRIVATE_NAMES": ""}


def _cli(root: Path, *args: str, fmt: str | None = None) -> Any:
    extra = ["--format", fmt] if fmt else []
    return run_cli([*args, "--root", str(root), *extra], env=ENV)


def _project(tmp_path: Path) -> tuple[Path, Context]:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    (root / ".loopx" / "names").write_text(f"# work hosts\n{name_hash(NAME)}\n")
    return root, make_ctx(FileStore(root), agent="maintainer")


def _allow_commands(output: str) -> list[str]:
    return [
        line.split("clear with: ", 1)[1]
        for line in output.splitlines()
        if "clear with: loopx allow finding" in line
    ]


def test_a_finding_in_an_id_of_a_closed_goal_is_cleared_by_an_allow_entry(tmp_path: Path) -> None:
    root, ctx = _project(tmp_path)
    goals.create_goal(
        ctx, CreateGoal(goal_id="launch", title="Launch", objective="Ship it", visibility="public")
    )
    todo_id = f"pair-with-{NAME}"
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id="launch", title="Pair on the release", todo_id=todo_id, visibility="public"
        ),
    )
    todos.cancel_todo(ctx, CancelTodo(goal_id="launch", todo_id=todo_id))
    goals.close_goal(ctx, CloseGoal(goal_id="launch", outcome="abandoned"))
    out = tmp_path / "site"

    blocked = _cli(root, "build", "--out", str(out))
    assert blocked.exit_code == 7, blocked.stdout + blocked.stderr
    assert "public_boundary_violation" in blocked.stderr
    assert not (out / "public").exists()  # nothing written
    commands = _allow_commands(blocked.stdout)
    assert commands, blocked.stdout
    # The place is named by the seq that created it: the command never repeats the id.
    assert set(commands) == {
        "loopx allow finding --goal-id launch --entity todo --seq 2 "
        '--kind username --reason "<why>"'
    }
    assert "no ledger field or id holds it" not in blocked.stdout

    why = shlex.quote("a teammate's public handle")
    argv = shlex.split(commands[0].replace('"<why>"', why))
    allowed = _cli(root, *argv[1:])
    assert allowed.exit_code == 0, allowed.stderr

    built = _cli(root, "build", "--out", str(out))
    assert built.exit_code == 0, built.stdout + built.stderr
    page = (out / "public/goals/launch/status.json").read_text()
    assert todo_id in page  # the id is published as it is
    assert _cli(root, "scan", str(out / "public")).exit_code == 0
    published = _cli(root, "publish", "--to", str(tmp_path / "pub"))
    assert published.exit_code == 0, published.stderr

    events = json.loads(_cli(root, "log", "--goal-id", "launch", fmt="json").stdout)["events"]
    entry = events[-1]
    assert entry["type"] == "finding.allowed"
    assert entry["actor"]["agent_id"] == "maintainer"
    assert entry["data"] == {
        "allowance_id": "allowance-1",
        "entity": "todo",
        "entity_id": todo_id,
        "field": "id",
        "kind": "username",
        "reason": "a teammate's public handle",
    }
    workbench = (out / "team/goals/launch/workbench.md").read_text()
    assert "## Corrections" in workbench
    expected = f"`allowance-1` allowed `username` in the id of todo {todo_id} (by `maintainer`"
    assert expected in workbench
    assert "a teammate's public handle" in workbench
    assert "allowance-1" not in (out / "public/goals/launch/workbench.md").read_text()
    listed = json.loads(_cli(root, "allow", "list", "--goal-id", "launch", fmt="json").stdout)
    assert [a["allowance_id"] for a in listed["allowances"]] == ["allowance-1"]
    text = _cli(root, "allow", "list", "--goal-id", "launch").stdout
    assert "allowance-1: username in todo" in text

    # A new, different finding still blocks: the same name in another public id …
    goals.create_goal(
        ctx, CreateGoal(goal_id="next", title="Next", objective="More", visibility="public")
    )
    todos.add_todo(
        ctx,
        AddTodo(goal_id="next", title="Ask about it", todo_id=f"ask-{NAME}", visibility="public"),
    )
    again = _cli(root, "build", "--out", str(out))
    assert again.exit_code == 7
    assert "public/goals/next/" in again.stdout and "public/goals/launch/" not in again.stdout
    assert set(_allow_commands(again.stdout)) == {
        'loopx allow finding --goal-id next --entity todo --seq 2 --kind username --reason "<why>"'
    }


def test_the_entry_covers_only_its_kind_and_its_place(tmp_path: Path) -> None:
    root, ctx = _project(tmp_path)
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Launch", objective="Ship it", visibility="public")
    )
    key_id = "key-" + "0123456789abcdef" * 2  # read as a Mailgun key
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Rotate the cache", todo_id=key_id, visibility="public")
    )
    out = tmp_path / "site"
    with pytest.raises(BoundaryViolation) as first:
        build(root, out)
    assert {f["kind"] for f in first.value.details["findings"]} == {"mailgun-api-key"}
    _allow(ctx, entity_id=key_id, kind="mailgun-api-key", reason="a cache key, not Mailgun's")
    build(root, out)  # passes

    # The same key in a public title is another finding (redacted there by layer 1), and the
    # same words in a longer id are another place: both still count.
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Follow-up", todo_id=key_id + "-2", visibility="public")
    )
    with pytest.raises(BoundaryViolation) as second:
        build(root, out)
    assert {f["kind"] for f in second.value.details["findings"]} == {"mailgun-api-key"}


def _allow(ctx: Context, **fields: Any) -> Any:
    """What `loopx allow finding` runs: the scan's confirmation, then the engine's write."""
    cmd = AllowFinding(**{"goal_id": "g", "entity": "todo", "reason": "ok", **fields})
    confirm(ctx.store, cmd)
    return allow_finding(ctx, cmd)


def test_a_finding_in_a_field_prints_the_redaction_not_an_allow_entry(tmp_path: Path) -> None:
    root, ctx = _project(tmp_path)
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Launch", objective="Ship it", visibility="public")
    )
    todos.add_todo(
        ctx,
        AddTodo(goal_id="g", title=f"Pair with {NAME} on it", todo_id="pair", visibility="public"),
    )
    blocked = _cli(root, "build", "--out", str(tmp_path / "site"))
    assert blocked.exit_code == 7
    assert "clear with: loopx redact field --goal-id g --entity todo --entity-id pair" in (
        blocked.stdout
    )
    assert _allow_commands(blocked.stdout) == []
    with pytest.raises(InvalidInput) as refused:
        _allow(ctx, entity_id="pair", kind="username")
    assert refused.value.code == "no_such_finding"  # the id holds no finding


def test_refusals_write_nothing(tmp_path: Path) -> None:
    root, ctx = _project(tmp_path)
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Launch", objective="Ship it", visibility="public")
    )
    todos.add_todo(
        ctx,
        AddTodo(goal_id="g", title="Plain work", todo_id=f"pair-with-{NAME}", visibility="public"),
    )
    before = load_state(FileStore(root), "g").state
    assert before is not None

    def allow(**kwargs: Any) -> Any:
        return _allow(ctx, **{"kind": "username", **kwargs})

    with pytest.raises(InvalidInput) as kind:
        allow(seq=2, kind="private-ip")
    assert kind.value.code == "no_such_finding"
    with pytest.raises(InvalidInput) as both:
        allow(seq=2, entity_id=f"pair-with-{NAME}")
    assert both.value.code == "missing_entity_id"
    with pytest.raises(InvalidInput) as neither:
        allow()
    assert neither.value.code == "missing_entity_id"
    with pytest.raises(InvalidInput) as entity:
        allow(seq=2, entity="ticket")
    assert entity.value.code == "invalid_entity"
    with pytest.raises(InvalidInput) as bad_kind:
        allow(seq=2, kind="Not A Kind")
    assert bad_kind.value.code == "invalid_kind"
    with pytest.raises(NotFound):
        allow(seq=99)
    after = load_state(FileStore(root), "g").state
    assert after is not None and after.revision == before.revision

    first = allow(seq=2, operation_id="allow-1")
    assert allow(seq=2, operation_id="allow-1").status == "replayed"
    with pytest.raises(Conflict) as twice:
        allow(entity_id=f"pair-with-{NAME}")
    assert twice.value.code == "already_allowed"
    assert first.receipt["seq_last"] == before.revision + 1


def test_allowed_matches_whole_ids_only() -> None:
    allowed = Allowed([Allowance("username", "todo-1-dana")])
    text = "todo-1-dana todo-1-dana-2 x-todo-1-dana todo\\-1\\-dana"
    assert allowed.covers(text, "username", 7, 11)
    assert not allowed.covers(text, "username", 19, 23)  # inside a longer id
    assert not allowed.covers(text, "username", 33, 37)
    assert allowed.covers(text, "username", len(text) - 4, len(text))  # Markdown-escaped
    assert not allowed.covers(text, "hostname", 7, 11)  # another kind
    assert allowed.covers("todo-1-dana", "username", 0, 11)  # the whole id


def test_the_scanner_honours_entries_in_every_view() -> None:
    allowed = [Allowance("username", f"pair-with-{NAME}")]
    scanner = Scanner(machine=False, name_hashes=[name_hash(NAME)], allowed=allowed)
    assert scanner.hits(f'{{"todo_id": "pair-with-{NAME}"}}') == []
    assert scanner.hits(f'"pair-with-\\u0064{NAME[1:]}" pair-with-%64{NAME[1:]}%2F') == []
    assert [h.kind for h in scanner.hits(f"ask {NAME} about pair-with-{NAME}")] == ["username"]


def test_the_entries_survive_the_snapshot_and_reach_the_forbidden_set(tmp_path: Path) -> None:
    root, ctx = _project(tmp_path)
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Launch", objective="Ship it", visibility="public")
    )
    todos.add_todo(
        ctx,
        AddTodo(goal_id="g", title="Plain work", todo_id=f"pair-with-{NAME}", visibility="public"),
    )
    _allow(ctx, seq=2, kind="username")
    cold = load_state(FileStore(root), "g", cache=False).state
    warm = load_state(FileStore(root), "g").state
    assert cold is not None and warm is not None
    assert warm.allowances == cold.allowances and len(entries(warm)) == 1
    expected = frozenset({Allowance("username", f"pair-with-{NAME}")})
    assert allowances_of(warm) == expected
    assert non_public_strings({"g": warm}).allowed == expected


@pytest.mark.parametrize(
    "module",
    [
        "loopx.state.redactions",
        "loopx.state.allowances",
        "loopx.privacy.audience",
        "loopx.cli.allow",
    ],
)
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """The fold registers its handlers by importing them: no order of first import may cycle."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
