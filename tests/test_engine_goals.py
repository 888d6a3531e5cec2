"""Goal write paths: create, close, register an agent, set the quota, add a note — each
precondition and its error code, and that a refused write appends nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import (
    AddEvidence,
    AddNote,
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    RecordRun,
    RegisterAgent,
    ReopenTodo,
    ResolveGate,
    SetQuota,
    UpdateTodo,
)
from loopx.engine.core import load_state, require_goal
from loopx.model.errors import Conflict, InvalidInput, LoopxError, NotFound
from tests.conftest import make_ctx

G = "launch"


def ledger(store: Any, goal: str = G) -> bytes:
    data: bytes = store.raw(goal)
    return data


def refused(
    store: Any, code: str, call: Callable[[], Any], kind: type[LoopxError] = LoopxError
) -> LoopxError:
    """Run `call`, expect `code`, and check nothing was appended to any ledger."""
    before = {g: ledger(store, g) for g in store.goal_ids()}
    with pytest.raises(kind) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert {g: ledger(store, g) for g in store.goal_ids()} == before
    return caught.value


@pytest.fixture
def goal(store: Any) -> Any:
    goals.create_goal(make_ctx(store), CreateGoal(goal_id=G, title="Launch", objective="Ship 0.1"))
    return store


# -- create -------------------------------------------------------------------------------


def test_create_writes_goal_created_and_returns_a_receipt(store: Any) -> None:
    result = goals.create_goal(
        make_ctx(store),
        CreateGoal(
            goal_id=G,
            title="Launch",
            objective="Ship 0.1",
            acceptance=["CI green", "Page published"],
            repository="https://example.com/repo.git",
            lease_seconds=600,
            quota=10,
            operation_id="create-1",
        ),
    )
    assert result.status == "applied"
    r = result.receipt
    assert (r["seq_first"], r["seq_last"], r["revision"]) == (1, 1, 1)
    assert r["operation_id"] == "create-1" and r["goal_id"] == G
    assert r["event_ids"] == [store.read(G).events[0]["event_id"]]
    state = require_goal(store, G)
    assert state.title == "Launch" and state.objective == "Ship 0.1"
    assert state.acceptance == ["CI green", "Page published"]
    assert state.policy == {"lease_seconds": 600, "quota": 10, "quota_unit": "runs"}
    assert state.visibility == "team" and state.status == "active"
    assert state.created_at == "2026-03-01T12:00:00Z"


def test_create_twice_is_goal_exists(goal: Any) -> None:
    refused(
        goal,
        "goal_exists",
        lambda: goals.create_goal(
            make_ctx(goal), CreateGoal(goal_id=G, title="Again", objective="x")
        ),
        Conflict,
    )


@pytest.mark.parametrize("bad", ["", "Launch", "has space", "../x", "-lead", "x" * 65, "a\n"])
def test_create_refuses_a_bad_goal_id(store: Any, bad: str) -> None:
    err = refused(
        store,
        "invalid_id",
        lambda: goals.create_goal(
            make_ctx(store), CreateGoal(goal_id=bad, title="T", objective="O")
        ),
        InvalidInput,
    )
    assert bad not in err.message or not bad
    assert store.goal_ids() == []


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("title", "", "empty_text"),
        ("title", "   \n\t", "empty_text"),
        ("objective", "", "empty_text"),
        ("title", "t" * 501, "text_too_long"),
        ("objective", "o" * 20_001, "text_too_long"),
        ("visibility", "secret", "invalid_visibility"),
    ],
)
def test_create_refuses_bad_fields(store: Any, field: str, value: str, code: str) -> None:
    kwargs: dict[str, Any] = {"title": "Title", "objective": "Objective", field: value}
    err = refused(
        store, code, lambda: goals.create_goal(make_ctx(store), CreateGoal(goal_id=G, **kwargs))
    )
    assert err.exit_code == 2
    assert value.strip() == "" or value not in err.message
    assert not store.exists(G)


def test_create_refuses_empty_acceptance_criteria(store: Any) -> None:
    refused(
        store,
        "empty_text",
        lambda: goals.create_goal(
            make_ctx(store), CreateGoal(goal_id=G, title="T", objective="O", acceptance=["ok", " "])
        ),
    )


def test_create_refuses_an_unknown_predecessor_or_itself(goal: Any) -> None:
    ctx = make_ctx(goal)
    refused(
        goal,
        "goal_not_found",
        lambda: goals.create_goal(
            ctx, CreateGoal(goal_id="next", title="N", objective="O", predecessor="nope")
        ),
        NotFound,
    )
    refused(
        goal,
        "goal_not_found",
        lambda: goals.create_goal(
            ctx, CreateGoal(goal_id="self", title="N", objective="O", predecessor="self")
        ),
    )


def test_a_later_goal_may_name_a_closed_goal_as_predecessor(goal: Any) -> None:
    ctx = make_ctx(goal)
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="abandoned", reason="Replanned"))
    goals.create_goal(
        ctx, CreateGoal(goal_id="launch-2", title="Launch again", objective="O", predecessor=G)
    )
    assert require_goal(goal, "launch-2").predecessor == G


def test_quota_and_lease_bounds_are_checked_by_the_model(store: Any) -> None:
    refused(
        store,
        "invalid_input",
        lambda: goals.create_goal(
            make_ctx(store), CreateGoal(goal_id=G, title="T", objective="O", lease_seconds=0)
        ),
    )
    refused(
        store,
        "invalid_input",
        lambda: goals.create_goal(
            make_ctx(store), CreateGoal(goal_id=G, title="T", objective="O", quota=-1)
        ),
    )


# -- close and terminal goals -------------------------------------------------------------


def test_close_achieved_refuses_while_todos_are_open(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="A", todo_id="a"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="B", todo_id="b"))
    todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="a"))
    err = refused(
        goal,
        "todos_open",
        lambda: goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="achieved")),
        Conflict,
    )
    assert err.details["todo_ids"] == ["b"]
    todos.cancel_todo(ctx, CancelTodo(goal_id=G, todo_id="b"))
    result = goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="achieved"))
    assert require_goal(goal, G).status == "achieved"
    assert result.receipt["revision"] == require_goal(goal, G).revision


def test_close_abandoned_is_allowed_with_open_todos(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="A"))
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="abandoned", reason="Out of budget"))
    state = require_goal(goal, G)
    assert state.status == "abandoned" and state.outcome_reason == "Out of budget"
    assert state.closed_at


def test_close_refuses_an_unknown_outcome(goal: Any) -> None:
    refused(
        goal,
        "invalid_outcome",
        lambda: goals.close_goal(make_ctx(goal), CloseGoal(goal_id=G, outcome="done")),
        InvalidInput,
    )


WRITES: dict[str, Callable[[Any], Any]] = {
    "todo.add": lambda ctx: todos.add_todo(ctx, AddTodo(goal_id=G, title="Later")),
    "todo.claim": lambda ctx: todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="t")),
    "todo.complete": lambda ctx: todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="t")),
    "todo.update": lambda ctx: todos.update_todo(
        ctx, UpdateTodo(goal_id=G, todo_id="t", priority=0)
    ),
    "todo.block": lambda ctx: todos.block_todo(ctx, BlockTodo(goal_id=G, todo_id="t", reason="r")),
    "todo.cancel": lambda ctx: todos.cancel_todo(ctx, CancelTodo(goal_id=G, todo_id="t")),
    "todo.reopen": lambda ctx: todos.reopen_todo(
        ctx, ReopenTodo(goal_id=G, todo_id="t", reason="r")
    ),
    "gate.open": lambda ctx: gates.open_gate(
        ctx, OpenGate(goal_id=G, question="Q?", authority="maintainer")
    ),
    "gate.resolve": lambda ctx: gates.resolve_gate(
        ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve", by="maintainer")
    ),
    "evidence.add": lambda ctx: evidence.add_evidence(
        ctx, AddEvidence(goal_id=G, kind="test", summary="ok")
    ),
    "run.record": lambda ctx: evidence.record_run(ctx, RecordRun(goal_id=G, outcome="progress")),
    "agent.register": lambda ctx: goals.register_agent(
        ctx, RegisterAgent(goal_id=G, agent_id="agent-z")
    ),
    "quota.set": lambda ctx: goals.set_quota(ctx, SetQuota(goal_id=G, quota=5)),
    "note.add": lambda ctx: goals.add_note(ctx, AddNote(goal_id=G, text="hello")),
    "goal.close": lambda ctx: goals.close_goal(ctx, CloseGoal(goal_id=G, outcome="abandoned")),
}


@pytest.mark.parametrize("outcome", ["achieved", "abandoned"])
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_closed_goal_refuses_every_later_write(store: Any, outcome: str, write: str) -> None:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="T", todo_id="t"))
    gates.open_gate(
        ctx, OpenGate(goal_id=G, question="Q?", authority="maintainer", gate_id="g", blocks=["t"])
    )
    gates.resolve_gate(
        ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve", by="maintainer")
    )
    todos.complete_todo(ctx, CompleteTodo(goal_id=G, todo_id="t"))
    goals.close_goal(ctx, CloseGoal(goal_id=G, outcome=outcome))
    err = refused(store, "goal_terminal", lambda: WRITES[write](ctx), Conflict)
    assert err.details["status"] == outcome
    assert err.exit_code == 4


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_on_an_unknown_goal_is_goal_not_found(store: Any, write: str) -> None:
    goals.create_goal(make_ctx(store), CreateGoal(goal_id="other", title="Other", objective="O"))
    err = refused(store, "goal_not_found", lambda: WRITES[write](make_ctx(store)), NotFound)
    assert err.exit_code == 3
    assert not store.exists(G)


# -- agents, quota, notes -----------------------------------------------------------------


def test_register_agent_once(goal: Any) -> None:
    ctx = make_ctx(goal)
    goals.register_agent(
        ctx, RegisterAgent(goal_id=G, agent_id="agent-b", name="Codex", kind="coding-agent")
    )
    state = require_goal(goal, G)
    assert state.agents["agent-b"]["name"] == "Codex"
    assert state.agents["agent-b"]["kind"] == "coding-agent"
    refused(
        goal,
        "agent_exists",
        lambda: goals.register_agent(ctx, RegisterAgent(goal_id=G, agent_id="agent-b")),
        Conflict,
    )
    refused(
        goal,
        "invalid_id",
        lambda: goals.register_agent(ctx, RegisterAgent(goal_id=G, agent_id="Bad Agent")),
    )


def test_set_quota_and_clear_it(goal: Any) -> None:
    ctx = make_ctx(goal)
    goals.set_quota(ctx, SetQuota(goal_id=G, quota=3, unit="turns"))
    state = require_goal(goal, G)
    assert state.policy["quota"] == 3 and state.policy["quota_unit"] == "turns"
    goals.set_quota(ctx, SetQuota(goal_id=G, quota=None))
    assert require_goal(goal, G).policy["quota"] is None
    refused(
        goal,
        "invalid_quota",
        lambda: goals.set_quota(ctx, SetQuota(goal_id=G, quota=-1)),
        InvalidInput,
    )


def test_notes_are_private_by_default_and_checked(goal: Any) -> None:
    ctx = make_ctx(goal)
    result = goals.add_note(ctx, AddNote(goal_id=G, text="Remember the staging password rotation"))
    note = require_goal(goal, G).notes[result.receipt["subject"]]
    assert note.visibility == "private"
    assert isinstance(note.text, dict) and note.text["blob"].startswith("sha256:")
    assert b"staging password" not in ledger(goal)
    public = goals.add_note(
        ctx, AddNote(goal_id=G, text="Use ruff", kind="lesson", visibility="public")
    )
    assert require_goal(goal, G).notes[public.receipt["subject"]].text == "Use ruff"
    refused(
        goal, "invalid_kind", lambda: goals.add_note(ctx, AddNote(goal_id=G, text="x", kind="rant"))
    )
    refused(goal, "empty_text", lambda: goals.add_note(ctx, AddNote(goal_id=G, text=" ")))
    refused(
        goal,
        "todo_not_found",
        lambda: goals.add_note(ctx, AddNote(goal_id=G, text="x", todo_id="nope")),
    )
    refused(
        goal,
        "note_exists",
        lambda: goals.add_note(ctx, AddNote(goal_id=G, text="x", note_id="note-1")),
    )


def test_unknown_goal_reads_are_goal_not_found(store: Any) -> None:
    with pytest.raises(NotFound) as caught:
        require_goal(store, "missing")
    assert caught.value.code == "goal_not_found"
    assert load_state(store, "missing").state is None
