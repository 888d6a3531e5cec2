"""Typed write commands: one dataclass per write, the engine's only argument, fingerprinted
by its canonical form; the CLI and the MCP tools build the same commands; a command run
without --goal-id opens one store and folds no goal it does not need."""

from __future__ import annotations

import inspect
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from loopx.engine import (
    allowances,
    evidence,
    gates,
    goals,
    handoff,
    monitors,
    redactions,
    todos,
    turns,
)
from loopx.engine import commands as command_types
from loopx.engine.commands import (
    AddEvidence,
    Backoff,
    ClaimTodo,
    Command,
    CreateGoal,
    OpenGate,
    ReleaseTodo,
)
from loopx.engine.core import Context
from tests.conftest import make_ctx, run_cli

WRITE_MODULES = (goals, todos, gates, evidence, monitors, turns, redactions, allowances, handoff)


def _concrete(cls: type[Command]) -> list[type[Command]]:
    found = [cls] if "cmd" in vars(cls) else []
    for sub in cls.__subclasses__():
        found += _concrete(sub)
    return found


def _hints(fn: Any) -> dict[str, Any]:
    return get_type_hints(fn, localns=vars(command_types))


def _write_paths() -> dict[type[Command], list[Any]]:
    """Every public engine function of the shape (ctx, command), by the command it takes."""
    paths: dict[type[Command], list[Any]] = {}
    for module in WRITE_MODULES:
        for fn in vars(module).values():
            if not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            names = list(inspect.signature(fn).parameters)
            if fn.__name__.startswith("_") or names[:1] != ["ctx"] or len(names) != 2:
                continue
            # As `cli.write.command_type` resolves it: a path may name its command type under
            # TYPE_CHECKING only (`engine.handoff`, so that `handoff inspect` imports none).
            kind = _hints(fn)[names[1]]
            if isinstance(kind, type) and issubclass(kind, Command):
                paths.setdefault(kind, []).append(fn)
    return paths


def test_every_write_has_one_command_and_one_engine_path() -> None:
    commands = _concrete(Command)
    assert len(commands) == 28
    assert len({c.cmd for c in commands}) == 28
    paths = _write_paths()
    assert sorted(paths, key=lambda c: c.cmd) == sorted(commands, key=lambda c: c.cmd)
    assert all(len(fns) == 1 for fns in paths.values())
    for [fn] in paths.values():
        assert _hints(fn)["ctx"] is Context, fn


def _sample(annotation: str, other: bool) -> Any:
    """Two different values of a field's type."""
    n = 2 if other else 1
    if "Backoff" in annotation:
        return Backoff("fixed", n)
    if "Sequence" in annotation:
        return (f"v{n}",)
    if "dict" in annotation:
        return {"work_summary": f"v{n}"}
    if "bytes" in annotation:
        return f"v{n}".encode()
    if "Path" in annotation:
        return Path(f"v{n}")
    if "bool" in annotation:
        return other
    if "int" in annotation:
        return n
    return f"v{n}"


def _unkeyed(kind: type[Command]) -> set[str]:
    return {f.name for f in fields(kind) if f.metadata.get("key", f.name) is None}


@pytest.mark.parametrize("kind", _concrete(Command), ids=lambda c: c.cmd)
def test_any_changed_field_changes_the_fingerprint_but_where_and_how_do_not(
    kind: type[Command],
) -> None:
    base = kind(**{f.name: _sample(str(f.type), False) for f in fields(kind)})
    before = base.fingerprint("agent-a", "s1")
    for f in fields(kind):
        changed = replace(base, **{f.name: _sample(str(f.type), True)})
        after = changed.fingerprint("agent-a", "s1")
        assert (after == before) == (f.name in _unkeyed(kind)), f.name
    assert base.fingerprint("agent-b", "s1") != before, "the agent is part of the fingerprint"
    assert (base.fingerprint("agent-a", "s2") != before) == kind.keyed_by_session


def test_the_canonical_form_names_the_write_and_leaves_out_where_and_how() -> None:
    claim = ClaimTodo(goal_id="g", todo_id="t", operation_id="op-1", expected_revision=3)
    assert claim.request("s1") == {
        "cmd": "todo.claim",
        "todo_id": "t",
        "lease_seconds": None,
        "session_id": "s1",
    }
    # A goal's creation names its goal: a retry must create the same one.
    assert CreateGoal(goal_id="g", title="T", objective="O").request("s")["goal_id"] == "g"
    assert "ask_again_at" not in OpenGate(goal_id="g", question="q", authority="a").request("s")
    body = AddEvidence(goal_id="g", kind="log", summary="s", body=b"x", workspace=Path("."))
    assert body.request("s")["body"].startswith("sha256:") and "workspace" not in body.request("s")
    assert ReleaseTodo(goal_id="g", todo_id="t").request("s")["cmd"] == "todo.release"


def test_a_command_is_frozen() -> None:
    claim = ClaimTodo(goal_id="g", todo_id="t")
    with pytest.raises(AttributeError):
        claim.todo_id = "u"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del claim.todo_id


def test_a_command_behaves_as_a_frozen_keyword_only_dataclass() -> None:
    """Commands share one set of methods instead of six compiled per class (issue 19): the
    behaviour is a frozen, keyword-only dataclass's."""
    claim = ClaimTodo(goal_id="g", todo_id="t", lease_seconds=60)
    assert claim == ClaimTodo(goal_id="g", todo_id="t", lease_seconds=60)
    assert claim != ClaimTodo(goal_id="g", todo_id="t")
    assert claim != ReleaseTodo(goal_id="g", todo_id="t")  # same fields, another write
    assert hash(claim) == hash(ClaimTodo(goal_id="g", todo_id="t", lease_seconds=60))
    assert len({claim, replace(claim), replace(claim, lease_seconds=61)}) == 2
    assert repr(claim).startswith("ClaimTodo(goal_id='g', operation_id=None, ")
    assert "todo_id='t'" in repr(claim) and "lease_seconds=60" in repr(claim)
    assert [f.name for f in fields(ClaimTodo)][:2] == ["goal_id", "operation_id"]
    assert AddEvidence(goal_id="g", kind="log", summary="s").refs == ()
    with pytest.raises(TypeError, match="missing required keyword argument: 'todo_id'"):
        ClaimTodo(goal_id="g")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'todo'"):
        ClaimTodo(goal_id="g", todo_id="t", todo="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ClaimTodo("g", "t")  # type: ignore[call-arg]


def test_every_write_tool_passes_only_fields_of_its_command() -> None:
    from loopx.mcp.tools import WRITES

    for row in WRITES:
        own = {f.name for f in fields(row.command)}
        note = (
            set(handoff.NOTE_LISTS) | {"work_summary"} if row.fields.__name__ == "_note" else set()
        )
        given = {p.name for p in row.params} - {"goal_id", "agent_id", "session_id"} - note
        assert given <= own, (row.name, given - own)
        assert row.command in _write_paths() and _write_paths()[row.command] == [row.run]


def test_a_command_without_goal_id_opens_one_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loopx.store.select as select

    opened = []
    real = select.open_store

    def counting(root: Path, url: str | None = None, **kw: Any) -> Any:
        opened.append(root)
        return real(root, url, **kw)

    monkeypatch.setattr(select, "open_store", counting)
    done = run_cli(["todo", "add", "--root", str(project), "--title", "T"])
    assert done.exit_code == 0, done.stderr
    assert len(opened) == 1


def test_the_default_goal_reads_no_goal_state(
    file_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopx.engine import core
    from loopx.engine.commands import CloseGoal
    from loopx.engine.defaults import default_goal

    ctx = make_ctx(file_store)
    for goal in ("a", "b", "c"):
        goals.create_goal(ctx, CreateGoal(goal_id=goal, title=goal, objective="o"))
    goals.close_goal(ctx, CloseGoal(goal_id="a", outcome="abandoned"))
    stale = file_store.load_snapshot("b")  # b's snapshot from before b closed
    goals.close_goal(ctx, CloseGoal(goal_id="b", outcome="abandoned"))
    file_store.save_snapshot("b", stale)

    def refused(*args: Any) -> Any:
        raise AssertionError("a goal's state was decoded to choose the default goal")

    monkeypatch.setattr(core, "decode_state", refused)
    assert core.is_closed(file_store, "a") and core.is_closed(file_store, "b")
    assert default_goal(file_store) == "c"


def test_the_mcp_server_keeps_one_store_and_sees_other_writes(project: Path) -> None:
    from loopx.cli.common import close_stores
    from loopx.mcp.tools import Project, Reads
    from loopx.store.filestore import FileStore

    try:
        tools = Project(project)
        assert tools.store() is tools.store()
        run_cli(["todo", "add", "--root", str(project), "--goal-id", "demo", "--title", "T"])
        shown = Reads(tools).todo_show("todo-1", "demo")["data"]
        assert shown["title"] == "T"
        assert isinstance(tools.store(), FileStore)
    finally:
        close_stores()
