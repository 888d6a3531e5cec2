"""Todo write paths: every transition's preconditions, its error code, and that a refusal
writes nothing. Leases expire by the injected clock, never the wall clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.clock import FixedClock, add_seconds
from loopx.engine.commands import (
    AddEvidence,
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    ReleaseTodo,
    RenewTodo,
    ReopenTodo,
    ResolveGate,
    UnblockTodo,
    UpdateTodo,
)
from loopx.engine.core import Context, require_goal
from loopx.model.errors import Conflict, InvalidInput, LoopxError, NotFound
from tests.conftest import T0, make_ctx

G = "launch"


class World:
    """A goal with one shared clock (each write advances it a minute) and named actors."""

    def __init__(self, store: Any, lease: int = 600):
        self.store = store
        self.clock = FixedClock(T0, 60)
        goals.create_goal(
            self.ctx(), CreateGoal(goal_id=G, title="Launch", objective="Ship", lease_seconds=lease)
        )

    def ctx(self, agent: str = "maintainer", session: str = "s1") -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id=session)

    def later(self, seconds: int) -> None:
        self.clock = FixedClock(add_seconds(self.clock.now(), seconds), 60)

    def todo(self, todo_id: str) -> Any:
        return require_goal(self.store, G).todos[todo_id]

    def add(self, todo_id: str, **kwargs: Any) -> Any:
        return todos.add_todo(
            self.ctx(), AddTodo(goal_id=G, title=f"Todo {todo_id}", todo_id=todo_id, **kwargs)
        )


@pytest.fixture
def w(store: Any) -> World:
    return World(store)


def refused(w: World, code: str, call: Callable[[], Any], kind: type = LoopxError) -> Any:
    before = w.store.raw(G)
    with pytest.raises(kind) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert w.store.raw(G) == before, "a refused write appended something"
    return caught.value


# -- add ------------------------------------------------------------------------------------


def test_add_assigns_sequential_ids_and_records_fields(w: World) -> None:
    first = todos.add_todo(w.ctx(), AddTodo(goal_id=G, title="First"))
    second = todos.add_todo(
        w.ctx(),
        AddTodo(
            goal_id=G,
            title="Second",
            role="user",
            kind="review",
            priority=0,
            depends_on=["todo-1"],
            acceptance="Reviewed by two people",
        ),
    )
    assert first.receipt["subject"] == "todo-1" and second.receipt["subject"] == "todo-2"
    t = w.todo("todo-2")
    assert (t.role, t.kind, t.priority, t.depends_on) == ("user", "review", 0, ["todo-1"])
    assert t.acceptance == "Reviewed by two people" and t.status == "open"
    assert t.revision == second.receipt["revision"] == t.created_seq


def test_add_refuses_a_taken_id(w: World) -> None:
    w.add("a")
    refused(w, "todo_exists", lambda: w.add("a"), Conflict)


def test_add_refuses_unknown_dependencies_naming_them(w: World) -> None:
    w.add("a")
    err = refused(w, "dependency_not_found", lambda: w.add("b", depends_on=["a", "x", "y"]))
    assert err.details["todo_ids"] == ["x", "y"]
    assert err.exit_code == 3


def test_add_refuses_depending_on_itself(w: World) -> None:
    refused(w, "dependency_not_found", lambda: w.add("a", depends_on=["a"]))


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"role": "robot"}, "invalid_role"),
        ({"priority": 5}, "invalid_priority"),
        ({"priority": -1}, "invalid_priority"),
        ({"title": ""}, "empty_text"),
        ({"title": "x" * 501}, "text_too_long"),
        ({"acceptance": "x" * 20_001}, "text_too_long"),
        ({"visibility": "everyone"}, "invalid_visibility"),
        ({"todo_id": "Not An Id"}, "invalid_id"),
        ({"depends_on": ["BAD ID"]}, "invalid_id"),
        ({"kind": "Not a kind"}, "invalid_input"),
        ({"predecessor": "ghost"}, "todo_not_found"),
    ],
)
def test_add_refuses_bad_input(w: World, kwargs: dict[str, Any], code: str) -> None:
    args: dict[str, Any] = {"title": "Title", **kwargs}
    err = refused(w, code, lambda: todos.add_todo(w.ctx(), AddTodo(goal_id=G, **args)))
    for value in kwargs.values():
        if isinstance(value, str) and len(value) > 3:
            assert value not in err.message, "an input value was echoed back"


def test_add_with_a_predecessor_links_its_successor(w: World) -> None:
    w.add("old")
    w.add("new", predecessor="old")
    assert w.todo("old").successor == "new"
    assert w.todo("new").predecessor == "old"


# -- update ---------------------------------------------------------------------------------


def test_update_changes_fields_and_moves_the_todo_revision(w: World) -> None:
    w.add("a")
    w.add("b")
    result = todos.update_todo(
        w.ctx(),
        UpdateTodo(
            goal_id=G,
            todo_id="b",
            title="Renamed",
            priority=0,
            depends_on=["a"],
            kind="bug",
            role="user",
        ),
    )
    t = w.todo("b")
    assert (t.title, t.priority, t.depends_on, t.kind, t.role) == (
        "Renamed",
        0,
        ["a"],
        "bug",
        "user",
    )
    assert t.revision == result.receipt["revision"]
    todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="b", depends_on=[]))
    assert w.todo("b").depends_on == []


def test_update_refusals(w: World) -> None:
    w.add("a")
    refused(
        w,
        "no_change",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a")),
        InvalidInput,
    )
    refused(
        w,
        "todo_not_found",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="zz", priority=1)),
    )
    refused(
        w,
        "invalid_role",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", role="boss")),
    )
    refused(
        w,
        "empty_text",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", title=" ")),
    )
    refused(
        w,
        "invalid_priority",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", priority=9)),
    )
    refused(
        w,
        "dependency_not_found",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", depends_on=["q"])),
    )
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))
    refused(
        w,
        "todo_closed",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", priority=1)),
        Conflict,
    )


def test_a_dependency_cycle_is_refused_on_update(w: World) -> None:
    w.add("a")
    w.add("b", depends_on=["a"])
    w.add("c", depends_on=["b"])
    err = refused(
        w,
        "dependency_cycle",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", depends_on=["c"])),
    )
    assert err.details["cycle"] == ["a", "c", "b", "a"]
    refused(
        w,
        "dependency_cycle",
        lambda: todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="a", depends_on=["a"])),
    )
    # A diamond is not a cycle.
    w.add("d", depends_on=["b", "c"])
    todos.update_todo(w.ctx(), UpdateTodo(goal_id=G, todo_id="d", depends_on=["a", "b", "c"]))


def test_a_long_dependency_chain_is_checked_without_recursion(w: World) -> None:
    from loopx.engine.lookup import dependency_cycle
    from loopx.state.entities import GoalState, Todo

    state = GoalState(goal_id=G)
    for i in range(20_000):
        state.todos[f"t{i}"] = Todo(f"t{i}", "x", depends_on=[f"t{i - 1}"] if i else [])
    assert dependency_cycle(state, "t0", ["t19999"]) is not None
    assert dependency_cycle(state, "new", ["t19999"]) is None


# -- claim, renew, release --------------------------------------------------------------------


def test_claim_sets_a_lease_from_the_injected_clock(w: World) -> None:
    w.add("a")
    now = w.clock.now()  # the clock ticks a minute per reading: the claim reads the next one
    todos.claim_todo(w.ctx("agent-a", "sess-1"), ClaimTodo(goal_id=G, todo_id="a"))
    t = w.todo("a")
    assert t.status == "active"
    assert t.claim is not None
    assert t.claim["agent_id"] == "agent-a" and t.claim["session_id"] == "sess-1"
    assert t.claim["claimed_at"] == add_seconds(now, 60)
    assert t.claim["lease_expires_at"] == add_seconds(now, 60 + 600)
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a", lease_seconds=30))
    assert w.todo("a").claim["lease_expires_at"] == add_seconds(now, 120 + 30)


def test_a_live_claim_by_another_agent_is_claim_owner_mismatch(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    err = refused(
        w,
        "claim_owner_mismatch",
        lambda: todos.claim_todo(w.ctx("agent-b"), ClaimTodo(goal_id=G, todo_id="a")),
    )
    assert err.details["claimed_by"] == "agent-a"
    assert err.details["lease_expires_at"] == w.todo("a").claim["lease_expires_at"]
    # ... and the same for completing, blocking or cancelling it
    for call in (
        lambda: todos.complete_todo(w.ctx("agent-b"), CompleteTodo(goal_id=G, todo_id="a")),
        lambda: todos.block_todo(
            w.ctx("agent-b"), BlockTodo(goal_id=G, todo_id="a", reason="mine now")
        ),
        lambda: todos.cancel_todo(w.ctx("agent-b"), CancelTodo(goal_id=G, todo_id="a")),
        lambda: todos.renew_todo(w.ctx("agent-b"), RenewTodo(goal_id=G, todo_id="a")),
        lambda: todos.release_todo(w.ctx("agent-b"), ReleaseTodo(goal_id=G, todo_id="a")),
    ):
        refused(w, "claim_owner_mismatch", call, Conflict)


def test_an_expired_lease_may_be_claimed_by_another_agent(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    w.later(601)
    todos.claim_todo(w.ctx("agent-b", "sb"), ClaimTodo(goal_id=G, todo_id="a"))
    claim = w.todo("a").claim
    assert claim is not None and claim["agent_id"] == "agent-b"


def test_claim_refusals(w: World) -> None:
    w.add("dep")
    w.add("a", depends_on=["dep"])
    err = refused(
        w,
        "dependency_open",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    assert err.details["dependencies"] == ["dep"]
    refused(
        w,
        "todo_not_found",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="nope")),
        NotFound,
    )
    refused(
        w,
        "invalid_lease",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="dep", lease_seconds=0)),
    )
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="dep", reason="waiting"))
    refused(
        w,
        "todo_blocked",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="dep")),
        Conflict,
    )
    todos.unblock_todo(w.ctx(), UnblockTodo(goal_id=G, todo_id="dep"))
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep"))
    refused(
        w,
        "todo_closed",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="dep")),
        Conflict,
    )
    todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a"))


def test_renew_extends_your_own_lease_and_records_a_heartbeat(w: World) -> None:
    w.add("a")
    refused(
        w,
        "not_claimed",
        lambda: todos.renew_todo(w.ctx("agent-a"), RenewTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    before = w.todo("a").claim
    todos.renew_todo(w.ctx("agent-a"), RenewTodo(goal_id=G, todo_id="a", lease_seconds=3600))
    after = w.todo("a").claim
    assert after["lease_expires_at"] > before["lease_expires_at"]
    assert after["heartbeat_at"] > before["heartbeat_at"]
    assert after["claimed_at"] == before["claimed_at"]


def test_renew_refuses_a_lease_out_of_range_like_claim(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    for bad in (-60, 0, 30 * 86400 + 1):
        refused(
            w,
            "invalid_lease",
            lambda bad=bad: todos.renew_todo(
                w.ctx("agent-a"), RenewTodo(goal_id=G, todo_id="a", lease_seconds=bad)
            ),
            InvalidInput,
        )
    todos.renew_todo(w.ctx("agent-a"), RenewTodo(goal_id=G, todo_id="a", lease_seconds=30 * 86400))
    assert w.todo("a").claim["lease_expires_at"] > w.clock.now()


def test_renew_and_release_refuse_another_agents_claim(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    for call in (
        lambda: todos.renew_todo(w.ctx("agent-b"), RenewTodo(goal_id=G, todo_id="a")),
        lambda: todos.release_todo(w.ctx("agent-b"), ReleaseTodo(goal_id=G, todo_id="a")),
    ):
        err = refused(w, "claim_owner_mismatch", call, Conflict)
        assert err.details["claimed_by"] == "agent-a"


def test_release_gives_the_todo_back(w: World) -> None:
    w.add("a")
    refused(
        w,
        "not_claimed",
        lambda: todos.release_todo(w.ctx("agent-a"), ReleaseTodo(goal_id=G, todo_id="a")),
    )
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    todos.release_todo(
        w.ctx("agent-a"), ReleaseTodo(goal_id=G, todo_id="a", reason="Switching tasks")
    )
    t = w.todo("a")
    assert t.status == "open" and t.claim is None and t.reason == "Switching tasks"
    todos.claim_todo(w.ctx("agent-b"), ClaimTodo(goal_id=G, todo_id="a"))


# -- gates hold todos -------------------------------------------------------------------------


def test_a_pending_gate_on_the_todo_blocks_claim_and_complete(w: World) -> None:
    w.add("a")
    w.add("b")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Ship?", authority="boss", blocks=["a"], gate_id="g1")
    )
    for call in (
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a")),
        lambda: todos.complete_todo(w.ctx("x"), CompleteTodo(goal_id=G, todo_id="a")),
    ):
        err = refused(w, "gate_pending", call, Conflict)
        assert err.details["gate_ids"] == ["g1"]
    todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="b"))  # other todos are not held
    gates.resolve_gate(w.ctx("boss"), ResolveGate(goal_id=G, gate_id="g1", resolution="approve"))
    todos.complete_todo(w.ctx("x"), CompleteTodo(goal_id=G, todo_id="a"))


def test_a_goal_wide_gate_holds_every_todo(w: World) -> None:
    w.add("a")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Pause?", authority="boss", gate_id="all")
    )
    err = refused(
        w,
        "gate_pending",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a")),
    )
    assert err.details["gate_ids"] == ["all"]
    gates.resolve_gate(w.ctx("boss"), ResolveGate(goal_id=G, gate_id="all", resolution="defer"))
    refused(w, "gate_pending", lambda: todos.claim_todo(w.ctx(), ClaimTodo(goal_id=G, todo_id="a")))
    gates.resolve_gate(w.ctx("boss"), ResolveGate(goal_id=G, gate_id="all", resolution="reject"))
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))


# -- complete, block, unblock, reopen, cancel -------------------------------------------------


def test_complete_records_summary_evidence_and_successor(w: World) -> None:
    w.add("a")
    w.add("next")
    ev = evidence.add_evidence(
        w.ctx(), AddEvidence(goal_id=G, kind="test", summary="green", visibility="team")
    )
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    todos.complete_todo(
        w.ctx("agent-a"),
        CompleteTodo(
            goal_id=G,
            todo_id="a",
            summary="Done and dusted",
            evidence_ids=[ev.receipt["subject"]],
            successor="next",
        ),
    )
    t = w.todo("a")
    assert t.status == "done" and t.claim is None and t.closed_at
    assert t.evidence_ids == ["ev-1"] and t.successor == "next"
    assert t.summary == "Done and dusted"


def test_complete_refusals(w: World) -> None:
    w.add("dep")
    w.add("a", depends_on=["dep"])
    refused(
        w,
        "dependency_open",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    refused(
        w,
        "evidence_not_found",
        lambda: todos.complete_todo(
            w.ctx(), CompleteTodo(goal_id=G, todo_id="dep", evidence_ids=["ev-9"])
        ),
        NotFound,
    )
    refused(
        w,
        "todo_not_found",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep", successor="z")),
    )
    refused(
        w,
        "text_too_long",
        lambda: todos.complete_todo(
            w.ctx(), CompleteTodo(goal_id=G, todo_id="dep", summary="s" * 20_001)
        ),
    )
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="dep", reason="stuck"))
    refused(
        w,
        "todo_blocked",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep")),
        Conflict,
    )
    todos.unblock_todo(w.ctx(), UnblockTodo(goal_id=G, todo_id="dep"))
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep"))
    refused(
        w,
        "todo_closed",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep")),
        Conflict,
    )
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))


def test_a_dependency_that_was_cancelled_stays_open_for_its_dependents(w: World) -> None:
    w.add("dep")
    w.add("a", depends_on=["dep"])
    todos.cancel_todo(w.ctx(), CancelTodo(goal_id=G, todo_id="dep"))
    refused(
        w,
        "dependency_open",
        lambda: todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a")),
    )


def test_block_and_unblock(w: World) -> None:
    w.add("a")
    refused(
        w,
        "empty_text",
        lambda: todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="a", reason=None)),
    )
    refused(
        w,
        "todo_not_blocked",
        lambda: todos.unblock_todo(w.ctx(), UnblockTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    todos.block_todo(
        w.ctx("agent-a"), BlockTodo(goal_id=G, todo_id="a", reason="Upstream API is down")
    )
    t = w.todo("a")
    assert t.status == "blocked" and t.reason == "Upstream API is down"
    assert t.claim is not None, "blocking keeps the claim"
    refused(
        w,
        "todo_blocked",
        lambda: todos.block_todo(
            w.ctx("agent-a"), BlockTodo(goal_id=G, todo_id="a", reason="again")
        ),
    )
    todos.unblock_todo(w.ctx("agent-a"), UnblockTodo(goal_id=G, todo_id="a"))
    assert w.todo("a").status == "active", "an unblocked claimed todo is active again"
    w.add("b")
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="b", reason="r"))
    todos.unblock_todo(w.ctx(), UnblockTodo(goal_id=G, todo_id="b"))
    assert w.todo("b").status == "open"


def test_reopen_a_done_or_cancelled_todo(w: World) -> None:
    w.add("a")
    refused(
        w,
        "todo_not_closed",
        lambda: todos.reopen_todo(w.ctx(), ReopenTodo(goal_id=G, todo_id="a", reason="r")),
        Conflict,
    )
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))
    refused(
        w,
        "empty_text",
        lambda: todos.reopen_todo(w.ctx(), ReopenTodo(goal_id=G, todo_id="a", reason="")),
    )
    result = todos.reopen_todo(
        w.ctx("reviewer"), ReopenTodo(goal_id=G, todo_id="a", reason="Tests fail on main")
    )
    t = w.todo("a")
    assert t.status == "open" and t.closed_at is None and t.reason == "Tests fail on main"
    event = w.store.read(G).events[-1]
    assert event["type"] == "todo.reopened"
    assert event["actor"]["agent_id"] == "reviewer"
    assert event["seq"] == result.receipt["seq_last"]
    todos.cancel_todo(w.ctx(), CancelTodo(goal_id=G, todo_id="a"))
    todos.reopen_todo(w.ctx(), ReopenTodo(goal_id=G, todo_id="a", reason="Needed after all"))
    assert w.todo("a").status == "open"


def test_cancel(w: World) -> None:
    w.add("a")
    todos.cancel_todo(w.ctx(), CancelTodo(goal_id=G, todo_id="a", reason="Not needed"))
    assert w.todo("a").status == "cancelled"
    refused(
        w,
        "todo_closed",
        lambda: todos.cancel_todo(w.ctx(), CancelTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    refused(
        w,
        "todo_closed",
        lambda: todos.claim_todo(w.ctx(), ClaimTodo(goal_id=G, todo_id="a")),
        Conflict,
    )
    refused(
        w,
        "todo_closed",
        lambda: todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="a", reason="r")),
        Conflict,
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda c: todos.claim_todo(c, ClaimTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.renew_todo(c, RenewTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.release_todo(c, ReleaseTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.complete_todo(c, CompleteTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.block_todo(c, BlockTodo(goal_id=G, todo_id="ghost", reason="r")),
        lambda c: todos.unblock_todo(c, UnblockTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.reopen_todo(c, ReopenTodo(goal_id=G, todo_id="ghost", reason="r")),
        lambda c: todos.cancel_todo(c, CancelTodo(goal_id=G, todo_id="ghost")),
        lambda c: todos.update_todo(c, UpdateTodo(goal_id=G, todo_id="ghost", title="t")),
    ],
)
def test_every_todo_write_on_an_unknown_todo_is_todo_not_found(w: World, call: Any) -> None:
    err = refused(w, "todo_not_found", lambda: call(w.ctx()), NotFound)
    assert err.details["todo_id"] == "ghost"


def test_actor_ids_are_checked_before_anything_is_written(w: World) -> None:
    w.add("a")
    refused(
        w,
        "invalid_id",
        lambda: todos.claim_todo(
            make_ctx(w.store, agent="Bad Agent"), ClaimTodo(goal_id=G, todo_id="a")
        ),
    )
    refused(
        w,
        "invalid_id",
        lambda: todos.claim_todo(
            make_ctx(w.store, session="a b"), ClaimTodo(goal_id=G, todo_id="a")
        ),
    )
    refused(
        w,
        "invalid_id",
        lambda: todos.claim_todo(
            w.ctx(), ClaimTodo(goal_id=G, todo_id="a", operation_id="has space")
        ),
    )


# -- one definition of ready ------------------------------------------------------------------


def _add_raw(w: World, todo_id: str, depends_on: list[str]) -> None:
    """Append a todo.added that names a dependency the goal never had (as an imported or
    hand-edited ledger can): the write paths refuse that, the fold accepts it."""
    from loopx.engine.core import Change, execute

    data = {
        "todo_id": todo_id,
        "title": f"Todo {todo_id}",
        "role": "agent",
        "kind": "task",
        "priority": 2,
        "depends_on": depends_on,
        "predecessor": None,
        "acceptance": None,
    }
    raw = AddTodo(goal_id=G, title="raw")  # only its goal and fingerprint are used
    execute(w.ctx(), raw, lambda state, now: [Change("todo.added", data)])


def test_a_missing_dependency_holds_the_todo_like_the_frontier_says(w: World) -> None:
    from loopx.state.frontier import readiness, readiness_of

    _add_raw(w, "a", ["ghost"])
    state = require_goal(w.store, G)
    now = w.clock.now()
    [listed] = readiness(state, now, "x")
    assert listed == readiness_of(state, state.todos["a"], now, "x")
    assert [r["code"] for r in listed.reasons] == ["dependency_missing"]
    for call in (
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a")),
        lambda: todos.complete_todo(w.ctx("x"), CompleteTodo(goal_id=G, todo_id="a")),
    ):
        err = refused(w, "dependency_missing", call, Conflict)
        assert err.details["dependencies"] == ["ghost"] and err.details["todo_id"] == "a"


def test_the_engine_refuses_with_the_first_reason_the_frontier_gives(w: World) -> None:
    w.add("dep")
    _add_raw(w, "a", ["ghost", "dep"])
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Ship?", authority="boss", blocks=["a"], gate_id="g1")
    )
    err = refused(
        w,
        "dependency_open",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a")),
    )
    assert err.details["dependencies"] == ["dep"]
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="dep"))
    refused(
        w,
        "dependency_missing",
        lambda: todos.claim_todo(w.ctx("x"), ClaimTodo(goal_id=G, todo_id="a")),
    )
