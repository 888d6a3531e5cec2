"""The frontier (ready queue), why the rest is not ready, and each goal's attention state."""

from __future__ import annotations

from typing import Any

import pytest

from loopx.engine import evidence, gates, goals, todos
from loopx.engine.clock import FixedClock, add_seconds
from loopx.engine.commands import (
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    RecordRun,
    ReleaseTodo,
    ResolveGate,
    SetQuota,
)
from loopx.engine.core import Context, require_goal
from loopx.state.frontier import attention, frontier, lease_live, readiness
from loopx.state.views import next_view, status_view
from tests.conftest import T0

G = "launch"


class World:
    def __init__(self, store: Any):
        self.store = store
        self.clock = FixedClock(T0, 60)
        goals.create_goal(
            self.ctx(), CreateGoal(goal_id=G, title="Launch", objective="Ship", lease_seconds=3600)
        )

    def ctx(self, agent: str = "maintainer") -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id="s1")

    def add(self, todo_id: str, **kwargs: Any) -> None:
        todos.add_todo(
            self.ctx(), AddTodo(goal_id=G, title=f"Todo {todo_id}", todo_id=todo_id, **kwargs)
        )

    def state(self) -> Any:
        return require_goal(self.store, G)

    def now(self, plus: int = 0) -> str:
        return add_seconds(T0, plus)


@pytest.fixture
def w(store: Any) -> World:
    return World(store)


def ids(items: list[Any]) -> list[str]:
    return [t.todo_id for t in items]


def reasons(state: Any, now: str, agent: str | None = None) -> dict[str, list[str]]:
    return {r.todo_id: [x["code"] for x in r.reasons] for r in readiness(state, now, agent)}


def test_the_frontier_is_ordered_by_priority_then_age(w: World) -> None:
    w.add("low", priority=4)
    w.add("high-old", priority=0)
    w.add("mid", priority=2)
    w.add("high-new", priority=0)
    assert ids(frontier(w.state(), w.now())) == ["high-old", "high-new", "mid", "low"]


def test_each_reason_a_todo_is_not_ready(w: World) -> None:
    w.add("dep")
    w.add("after", depends_on=["dep"])
    w.add("held")
    w.add("stuck")
    w.add("taken")
    w.add("free")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Q?", authority="boss", blocks=["held"], gate_id="g")
    )
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="stuck", reason="Upstream"))
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="taken"))
    state, now = w.state(), w.now(3600)
    why = reasons(state, now, "agent-b")
    assert why == {
        "dep": [],
        "after": ["dependency_open"],
        "held": ["gate_pending"],
        "stuck": ["todo_blocked"],
        "taken": ["claimed"],
        "free": [],
    }
    detail = {r.todo_id: r.reasons for r in readiness(state, now, "agent-b")}
    assert detail["after"][0]["todo_ids"] == ["dep"]
    assert detail["held"][0]["gate_ids"] == ["g"]
    assert detail["taken"][0]["agent_id"] == "agent-a"
    assert ids(frontier(state, now, "agent-b")) == ["dep", "free"]
    # The holder sees its own claim as ready.
    assert "taken" in ids(frontier(state, now, "agent-a"))


def test_an_expired_lease_puts_the_todo_back_in_the_frontier(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    item = w.state().todos["a"]
    expiry = item.claim["lease_expires_at"]
    assert lease_live(item, add_seconds(expiry, -1))
    assert not lease_live(item, expiry)
    assert ids(frontier(w.state(), add_seconds(expiry, -1), "agent-b")) == []
    assert ids(frontier(w.state(), expiry, "agent-b")) == ["a"]


def test_a_goal_wide_gate_holds_everything(w: World) -> None:
    w.add("a")
    w.add("b")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Freeze?", authority="boss", gate_id="freeze")
    )
    assert frontier(w.state(), w.now()) == []
    assert {c for r in reasons(w.state(), w.now()).values() for c in r} == {"gate_pending"}


def test_done_and_cancelled_todos_are_neither_ready_nor_explained(w: World) -> None:
    w.add("a")
    w.add("b")
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))
    todos.cancel_todo(w.ctx(), CancelTodo(goal_id=G, todo_id="b"))
    assert frontier(w.state(), w.now()) == [] and readiness(w.state(), w.now()) == []


def test_next_view_for_an_agent_shows_agent_work_and_explains_the_rest(w: World) -> None:
    w.add("code")
    w.add("decide", role="user", priority=0)
    w.add("later", depends_on=["code"])
    view = next_view(w.state(), w.now(), str, "agent-a", explain=True)
    assert [t["todo_id"] for t in view["frontier"]] == ["code"]
    assert view["frontier_total"] == 1
    assert view["other_roles"] == ["decide"]
    assert [(n["todo_id"], n["reasons"][0]["code"]) for n in view["not_ready"]] == [
        ("later", "dependency_open")
    ]
    everyone = next_view(w.state(), w.now(), str, None, explain=False, limit=1)
    assert [t["todo_id"] for t in everyone["frontier"]] == ["decide"]
    assert everyone["frontier_total"] == 2 and "not_ready" not in everyone


def test_next_view_checks_each_todo_once_even_when_explaining(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loopx.state.frontier as frontier_module

    for name in ("a", "b", "c"):
        w.add(name)
    w.add("ask", role="user")
    state = w.state()
    seen: list[str] = []
    real = frontier_module.readiness_of

    def counted(state: Any, todo: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(todo.todo_id)
        return real(state, todo, *args, **kwargs)

    monkeypatch.setattr(frontier_module, "readiness_of", counted)
    view = next_view(state, w.now(), str, "agent-a", explain=True)
    assert sorted(seen) == ["a", "ask", "b", "c"]
    assert view["other_roles"] == ["ask"] and view["frontier_total"] == 3


# -- attention ------------------------------------------------------------------------------


def test_attention_ready_for_agent(w: World) -> None:
    w.add("a")
    att = attention(w.state(), w.now())
    assert att["state"] == "ready_for_agent" and att["todo_ids"] == ["a"]


def test_attention_needs_user_for_a_pending_gate_or_a_ready_user_todo(w: World) -> None:
    w.add("a")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Q?", authority="boss", blocks=["a"], gate_id="g")
    )
    att = attention(w.state(), w.now())
    assert att["state"] == "needs_user" and att["gate_ids"] == ["g"]
    assert att["reasons"] == [
        {"state": "needs_user", "count": 1},
        {"state": "blocked", "count": 1},  # a, held by the gate
    ]
    gates.resolve_gate(w.ctx("boss"), ResolveGate(goal_id=G, gate_id="g", resolution="approve"))
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="a", reason="stuck"))
    w.add("choose", role="user")
    att = attention(w.state(), w.now())
    assert att["state"] == "needs_user" and att["todo_ids"] == ["choose"]


def test_ready_agent_work_ranks_before_a_pending_gate(w: World) -> None:
    """One held todo does not hide ready work: the one state is the first ranked reason."""
    w.add("a")
    w.add("b")
    w.add("choose", role="user")
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Q?", authority="boss", blocks=["a"], gate_id="g")
    )
    att = attention(w.state(), w.now())
    assert att == {
        "state": "ready_for_agent",
        "reason": "work is ready",
        "todo_ids": ["b"],
        "reasons": [
            {"state": "ready_for_agent", "count": 1},  # b
            {"state": "needs_user", "count": 2},  # the gate, and choose
            {"state": "blocked", "count": 1},  # a, held by the gate
        ],
    }
    assert status_view(w.state(), w.now(), str)["attention"] == att


def test_attention_waiting_while_work_is_claimed_or_a_run_waits(w: World) -> None:
    w.add("a")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    assert attention(w.state(), w.now(60))["state"] == "waiting"
    w.add("b", depends_on=["a"])
    todos.release_todo(w.ctx("agent-a"), ReleaseTodo(goal_id=G, todo_id="a"))
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="a", reason="CI is down"))
    assert attention(w.state(), w.now())["state"] == "blocked"
    evidence.record_run(
        w.ctx("agent-a"), RecordRun(goal_id=G, outcome="waiting", wait="CI to come back")
    )
    att = attention(w.state(), w.now())
    assert att["state"] == "waiting"
    assert att["reasons"] == [{"state": "waiting", "count": 1}, {"state": "blocked", "count": 2}]


def test_attention_blocked_when_open_todos_wait_on_each_other(w: World) -> None:
    w.add("a")
    w.add("b", depends_on=["a"])
    todos.block_todo(w.ctx(), BlockTodo(goal_id=G, todo_id="a", reason="stuck"))
    att = attention(w.state(), w.now())
    assert att["state"] == "blocked"


def test_attention_done_only_for_a_closed_goal(w: World) -> None:
    w.add("a")
    todos.complete_todo(w.ctx(), CompleteTodo(goal_id=G, todo_id="a"))
    att = attention(w.state(), w.now())
    assert att["state"] == "needs_user" and "close the goal" in att["reason"]
    goals.close_goal(w.ctx(), CloseGoal(goal_id=G, outcome="achieved"))
    assert attention(w.state(), w.now()) == {
        "state": "done",
        "reason": "goal achieved",
        "reasons": [{"state": "done", "count": 0}],
    }


def test_an_abandoned_goal_explains_its_open_todos(w: World) -> None:
    w.add("a")
    goals.close_goal(w.ctx(), CloseGoal(goal_id=G, outcome="abandoned"))
    assert reasons(w.state(), w.now()) == {"a": ["goal_terminal"]}
    assert frontier(w.state(), w.now()) == []
    assert attention(w.state(), w.now())["state"] == "done"


def test_status_view_gathers_leases_gates_counts_and_quota(w: World) -> None:
    w.add("a")
    w.add("b")
    todos.claim_todo(w.ctx("agent-a"), ClaimTodo(goal_id=G, todo_id="a"))
    gates.open_gate(
        w.ctx(), OpenGate(goal_id=G, question="Q?", authority="boss", blocks=["b"], gate_id="g")
    )
    goals.set_quota(w.ctx(), SetQuota(goal_id=G, quota=10))
    evidence.record_run(
        w.ctx("agent-a"), RecordRun(goal_id=G, outcome="progress", todo_id="a", quota_spent=4)
    )
    view = status_view(w.state(), w.now(120), str)
    assert view["counts"] == {
        "open": 1,
        "active": 1,
        "blocked": 0,
        "done": 0,
        "cancelled": 0,
        "total": 2,
    }
    assert [g["gate_id"] for g in view["gates"]] == ["g"]
    lease = view["leases"][0]
    assert (lease["todo_id"], lease["agent_id"], lease["live"]) == ("a", "agent-a", True)
    assert view["quota"] == {
        "budget": 10,
        "spent": 4,
        "unit": "runs",
        "remaining": 6,
        "exhausted": False,
    }
    assert view["attention"]["state"] == "needs_user"
    assert view["revision"] == w.state().revision
    later = status_view(w.state(), add_seconds(lease["lease_expires_at"], 1), str)
    assert later["leases"][0]["live"] is False
    assert [t["todo_id"] for t in later["frontier"]] == ["a"]
